import Foundation

/// Reusable read buffers for segment objects.
///
/// Reading each object into fresh memory costs a zero-filled page fault per 4 KB, and mapping it costs
/// TLB shoot-downs when the last slice is released on another thread; a buffer that comes back to the
/// pool has its pages in place already. A buffer returns when the last `Data` slice of it is released
/// (payload slices travel down to the muxer), through `Data`'s custom deallocator.
final class BufferPool: @unchecked Sendable {
  private let lock = NSLock()
  // Guarded by `lock`: idle buffers by capacity (a power of two).
  private var idle: [Int: [UnsafeMutableRawPointer]] = [:]
  private var idleBytes = 0
  private let maxIdleBytes: Int

  /// A pool that keeps at most `maxIdleBytes` of idle buffers.
  init(maxIdleBytes: Int = 16 << 20) { self.maxIdleBytes = maxIdleBytes }

  deinit {
    for buffers in idle.values { for buffer in buffers { buffer.deallocate() } }
  }

  /// Reads the whole file at `path` (exactly `size` bytes expected; the actual size is what is read).
  func read(path: String, expectedSize: Int) throws -> Data {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer { close(descriptor) }
    var status = stat()
    guard fstat(descriptor, &status) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    let size = Int(status.st_size)
    let capacity = Self.capacity(for: max(size, 1))
    let buffer = take(capacity)
    var done = 0
    while done < size {
      let count = pread(descriptor, buffer + done, size - done, off_t(done))
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else {
        give(buffer, capacity)
        throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
      }
      done += count
    }
    return Data(bytesNoCopy: buffer, count: done, deallocator: .custom { [self] pointer, _ in give(pointer, capacity) })
  }

  private static func capacity(for size: Int) -> Int {
    var capacity = 64 * 1024
    while capacity < size { capacity <<= 1 }
    return capacity
  }

  private func take(_ capacity: Int) -> UnsafeMutableRawPointer {
    lock.lock()
    if let buffer = idle[capacity]?.popLast() {
      idleBytes -= capacity
      lock.unlock()
      return buffer
    }
    lock.unlock()
    return UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 64)
  }

  private func give(_ buffer: UnsafeMutableRawPointer, _ capacity: Int) {
    lock.lock()
    if idleBytes + capacity <= maxIdleBytes {
      idle[capacity, default: []].append(buffer)
      idleBytes += capacity
      lock.unlock()
    } else {
      lock.unlock()
      buffer.deallocate()
    }
  }
}
