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

  /// The pool of the process's object reads and decryptions.
  static let shared = BufferPool()

  /// A pool that keeps at most `maxIdleBytes` of idle buffers.
  init(maxIdleBytes: Int = 16 << 20) { self.maxIdleBytes = maxIdleBytes }

  /// Lets `fill` write up to `capacity` bytes into a pooled buffer and returns the bytes it wrote
  /// (`fill` returns the count). The buffer comes back when the last slice of the data is released.
  func data(capacity: Int, fill: (UnsafeMutableRawPointer) throws -> Int) rethrows -> Data {
    let rounded = Self.capacity(for: max(capacity, 1))
    let buffer = take(rounded)
    let count: Int
    do {
      count = try fill(buffer)
    } catch {
      give(buffer, rounded)
      throw error
    }
    return Data(bytesNoCopy: buffer, count: count, deallocator: .custom { [self] pointer, _ in give(pointer, rounded) })
  }

  /// A pooled buffer of at least `capacity` bytes that a download fills piece by piece.
  func filling(capacity: Int) -> FillingBuffer {
    let rounded = Self.capacity(for: max(capacity, 1))
    return FillingBuffer(pool: self, pointer: take(rounded), capacity: rounded)
  }

  /// A buffer being filled: its bytes become `Data` once (``data()``), or it returns to the pool unused.
  final class FillingBuffer {
    private let pool: BufferPool
    private let pointer: UnsafeMutableRawPointer
    private let capacity: Int
    private var handedOff = false
    /// Bytes written so far.
    private(set) var count = 0

    fileprivate init(pool: BufferPool, pointer: UnsafeMutableRawPointer, capacity: Int) {
      self.pool = pool
      self.pointer = pointer
      self.capacity = capacity
    }

    /// Appends `bytes`; false (and nothing written) when they do not fit.
    func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
      guard !handedOff, bytes.count <= capacity - count else { return false }
      if let base = bytes.baseAddress { (pointer + count).copyMemory(from: base, byteCount: bytes.count) }
      count += bytes.count
      return true
    }

    /// Forgets what was written (a transfer that restarts from byte 0).
    func reset() { count = 0 }

    /// The bytes written, as `Data` that returns the buffer to the pool when released.
    func data() -> Data {
      precondition(!handedOff, "a filled buffer is handed off once")
      handedOff = true
      let pool = self.pool
      let capacity = self.capacity
      return Data(
        bytesNoCopy: pointer, count: count, deallocator: .custom { pointer, _ in pool.give(pointer, capacity) })
    }

    deinit { if !handedOff { pool.give(pointer, capacity) } }
  }

  deinit {
    for (capacity, buffers) in idle { for buffer in buffers { munmap(buffer, capacity) } }
  }

  /// Reads the whole regular file at `path`, which must hold exactly `expectedSize` bytes (checked
  /// before anything is allocated or read).
  func read(path: String, expectedSize: Int) throws(RegularFile.Failure) -> Data {
    let file = try RegularFile(path: path)
    guard file.size == expectedSize else { throw .sizeMismatch(actual: file.size, expected: expectedSize) }
    var failure: RegularFile.Failure?
    let data = data(capacity: file.size) { buffer in
      do throws(RegularFile.Failure) {
        try file.read(into: buffer)
      } catch {
        failure = error
      }
      return failure == nil ? file.size : 0
    }
    if let failure { throw failure }
    return data
  }

  /// The size of a transparent huge page on x86-64 and arm64 with 4 KB pages.
  private static let largePage = 2 << 20

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
    // Mapped directly rather than malloc'd: glibc would serve megabyte blocks from per-thread arenas
    // once its dynamic mmap threshold has risen, and keep them, so the heap would grow with the number
    // of objects read instead of staying at what is in flight.
    guard capacity >= Self.largePage else { return Self.map(capacity) }
    // Large pages where the kernel has them: a 40 MB object's first read takes 20 faults instead of
    // 10,000. A large page needs a 2 MB boundary, which kernels before 6.7 do not give a mapping of
    // their own: a large page more is mapped and what lies outside the aligned buffer unmapped again
    // (`give` and `deinit` unmap exactly the buffer). Advice only: refused (no transparent huge pages),
    // the buffer keeps small pages.
    let mapped = Self.map(capacity + Self.largePage)
    let address = UInt(bitPattern: mapped)
    let aligned = (address + UInt(Self.largePage - 1)) & ~UInt(Self.largePage - 1)
    let head = Int(aligned - address)
    if head > 0 { munmap(mapped, head) }
    if Self.largePage - head > 0 { munmap(mapped + head + capacity, Self.largePage - head) }
    let buffer = mapped + head
    _ = madvise(buffer, capacity, MADV_HUGEPAGE)
    return buffer
  }

  private static func map(_ bytes: Int) -> UnsafeMutableRawPointer {
    guard let buffer = mmap(nil, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
      buffer != MAP_FAILED
    else { fatalError("out of memory: cannot map \(bytes) bytes") }
    return buffer
  }

  private func give(_ buffer: UnsafeMutableRawPointer, _ capacity: Int) {
    lock.lock()
    if idleBytes + capacity <= maxIdleBytes {
      idle[capacity, default: []].append(buffer)
      idleBytes += capacity
      lock.unlock()
    } else {
      lock.unlock()
      munmap(buffer, capacity)
    }
  }
}
