import Foundation
import Testing

@testable import Nodes

/// The pool of read buffers: large ones on 2 MB boundaries (where a large page can back them), every
/// byte written readable, a buffer reused once its last slice is gone and unmapped when the pool is full.
@Suite("Read buffers")
struct BufferPoolTests {
  @Test(
    "a buffer of 2 MB and more starts on a 2 MB boundary; the bytes written read back",
    arguments: [
      64 << 10, 1 << 20, 2 << 20, 3 << 20, 40 << 20,
    ])
  func alignedAndWhole(size: Int) {
    let pool = BufferPool(maxIdleBytes: 0)
    var address = 0
    let data = pool.data(capacity: size) { buffer in
      address = Int(bitPattern: buffer)
      let bytes = buffer.assumingMemoryBound(to: UInt8.self)
      for index in stride(from: 0, to: size, by: 4096) { bytes[index] = UInt8(truncatingIfNeeded: index / 4096) }
      bytes[size - 1] = 0xA5
      return size
    }
    #expect(data.count == size)
    #expect(size < 2 << 20 || address % (2 << 20) == 0, "buffer at \(String(address, radix: 16))")
    #expect(stride(from: 0, to: size, by: 4096).allSatisfy { data[$0] == UInt8(truncatingIfNeeded: $0 / 4096) })
    #expect(data[size - 1] == 0xA5)
  }

  @Test("a buffer comes back when its last slice is released, and is handed out again")
  func reused() {
    let pool = BufferPool(maxIdleBytes: 8 << 20)
    var first = 0
    var data: Data? = pool.data(capacity: 3 << 20) { buffer in
      first = Int(bitPattern: buffer)
      return 16
    }
    var slice: Data? = data?[4..<8]
    data = nil
    var second = 0
    let other = pool.data(capacity: 3 << 20) { buffer in
      second = Int(bitPattern: buffer)
      return 16
    }
    // The slice still holds the first buffer: the second is another.
    #expect(second != first && other.count == 16 && slice?.count == 4)
    slice = nil
    var third = 0
    _ = pool.data(capacity: 3 << 20) { buffer in
      third = Int(bitPattern: buffer)
      return 1
    }
    #expect(third == first)
  }
}
