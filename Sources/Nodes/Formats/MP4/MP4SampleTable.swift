import Foundation
import PipelineGraph

/// The samples of one track of an MP4 and where they are: what an index (`stbl`) is made from.
///
/// ``MP4FragmentWriter`` keeps one per track as it writes, so that ``MP4Finalizer`` builds the final
/// index without reading back what was written. Its memory stays flat however long the track: durations
/// and composition offsets are kept as runs (as `stts` and `ctts` hold them), sync samples as the list
/// `stss` holds (nothing while every sample is one, as audio's are), and the sizes — 4 bytes a sample,
/// 10 MB for 10 hours of video and AAC — go to a file without a name beside the output in 64 KB batches, from
/// which the finalizer streams `stsz`. What grows in memory is a few bytes per keyframe and per chunk.
///
/// Owns the spill file's descriptor (closed in `deinit`). Used by one writer at a time.
final class MP4SampleTable {
  /// One sample, as a test reads it back.
  struct Sample: Equatable {
    var size: UInt32
    var duration: UInt32
    var compositionOffset: Int32
    var isSync: Bool
  }

  /// A run of samples stored one after the other, from `offset` in the file.
  struct Chunk {
    var offset: UInt64
    var sampleCount: Int
  }

  /// Equal values in a row, as `stts` and `ctts` entries.
  struct Run<Value: Equatable> {
    var count: UInt32
    var value: Value
  }

  /// Samples so far.
  private(set) var count = 0
  /// Durations in the media's ticks, as `stts` runs.
  private(set) var durations: [Run<UInt32>] = []
  /// Composition offsets, as `ctts` runs.
  private(set) var compositionOffsets: [Run<Int32>] = []
  /// The numbers (from 1) of the sync samples, once one sample is not (`stss`); empty while all are.
  private(set) var syncSamples: [UInt32] = []
  /// True while every sample is a sync sample (no `stss` needed).
  private(set) var allSync = true
  /// The chunks, in file order.
  var chunks: [Chunk] = []
  /// Sizes not yet spilled, big-endian as `stsz` holds them.
  private var pendingSizes: [UInt8] = []
  /// Sizes in the spill file (4 bytes each, from its start).
  private var spilledSizes = 0
  /// The unlinked spill file (-1 before the first batch).
  private var spill: Int32 = -1
  /// The file whose index this is: the spill file goes beside it (its file system, not a memory-backed
  /// /tmp).
  private let file: String

  /// Sizes kept in memory before a batch goes to the spill file: 64 KB.
  static let sizesPerBatch = 16_384

  /// An empty table of `file`'s, whose sizes spill beside it.
  init(spillingBeside file: String) { self.file = file }

  deinit { if spill >= 0 { close(spill) } }

  /// Adds one sample. Throws `writeFailed` when a batch of sizes cannot be spilled.
  func append(size: UInt32, duration: UInt32, compositionOffset: Int32, isSync: Bool) throws {
    count += 1
    if let last = durations.last, last.value == duration, last.count < .max {
      durations[durations.count - 1].count += 1
    } else {
      durations.append(Run(count: 1, value: duration))
    }
    if let last = compositionOffsets.last, last.value == compositionOffset, last.count < .max {
      compositionOffsets[compositionOffsets.count - 1].count += 1
    } else {
      compositionOffsets.append(Run(count: 1, value: compositionOffset))
    }
    if !isSync && allSync {
      // Every sample before this one was a sync sample: they are listed now (a video's first keyframe).
      allSync = false
      syncSamples = (1..<UInt32(count)).map { $0 }
    } else if isSync && !allSync {
      syncSamples.append(UInt32(truncatingIfNeeded: count))
    }
    withUnsafeBytes(of: size.bigEndian) { pendingSizes.append(contentsOf: $0) }
    if pendingSizes.count >= Self.sizesPerBatch * 4 { try spillPending() }
  }

  /// The media duration: the sum of the durations.
  var duration: UInt64 { durations.reduce(0) { $0 + UInt64($1.count) * UInt64($1.value) } }

  /// True when some sample is presented at another time than it is decoded (a `ctts` is needed).
  var hasCompositionOffsets: Bool { compositionOffsets.contains { $0.value != 0 } }

  /// Hands the sizes, big-endian and in order, to `body` a batch at a time (at most 64 KB each).
  func forEachSizeBatch(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
    if spilledSizes > 0 {
      var buffer = [UInt8](repeating: 0, count: Self.sizesPerBatch * 4)
      var offset = 0
      let end = spilledSizes * 4
      while offset < end {
        let wanted = min(buffer.count, end - offset)
        let read = buffer.withUnsafeMutableBytes { pread(spill, $0.baseAddress, wanted, off_t(offset)) }
        if read < 0, errno == EINTR { continue }
        guard read > 0 else { throw failure(read < 0 ? errno : EIO, "reading back the sample sizes") }
        try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<read])) }
        offset += read
      }
    }
    try pendingSizes.withUnsafeBytes { if !$0.isEmpty { try body($0) } }
  }

  /// Every sample, read back (tests; an index is streamed, not built this way).
  func samples() throws -> [Sample] {
    var sizes: [UInt32] = []
    try forEachSizeBatch { bytes in
      for index in stride(from: 0, to: bytes.count, by: 4) {
        sizes.append(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self)))
      }
    }
    let durations = self.durations.flatMap { repeatElement($0.value, count: Int($0.count)) }
    let offsets = compositionOffsets.flatMap { repeatElement($0.value, count: Int($0.count)) }
    let sync = Set(syncSamples)
    return sizes.indices.map { index in
      Sample(
        size: sizes[index], duration: durations[index], compositionOffset: offsets[index],
        isSync: allSync || sync.contains(UInt32(index + 1)))
    }
  }

  /// Writes the pending sizes at the end of the spill file (made at the first batch).
  private func spillPending() throws {
    if spill < 0 { spill = try makeSpillFile() }
    var done = 0
    while done < pendingSizes.count {
      let written = pendingSizes[done...].withUnsafeBytes {
        pwrite(spill, $0.baseAddress, $0.count, off_t(spilledSizes * 4 + done))
      }
      if written < 0, errno == EINTR { continue }
      guard written > 0 else { throw failure(written < 0 ? errno : EIO, "spilling the sample sizes") }
      done += written
    }
    spilledSizes += pendingSizes.count / 4
    pendingSizes.removeAll(keepingCapacity: true)
  }

  /// A file without a name beside ``file`` (`O_TMPFILE`); where the file system has none, a named one
  /// unlinked at once, named as the file's own working files are (`.<name>…partial…`), so that the sweep of
  /// a later writer removes it if this process dies before the unlink.
  private func makeSpillFile() throws -> Int32 {
    let url = URL(fileURLWithPath: file.isEmpty ? "./index" : file)
    let directory = url.deletingLastPathComponent().path
    let unnamed = open(directory, Self.temporaryFile | O_RDWR | O_CLOEXEC, 0o600)
    if unnamed >= 0 { return unnamed }
    let name = url.lastPathComponent.hasPrefix(".") ? url.lastPathComponent : "." + url.lastPathComponent
    var template = Array("\(directory)/\(name)-sizes-XXXXXX".utf8CString)
    let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    guard descriptor >= 0 else { throw failure(errno, "making a file for the sample sizes in \(directory)") }
    // (`mkostemp` needs _GNU_SOURCE, which Swift's Glibc module does not define.)
    _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
    guard template.withUnsafeBufferPointer({ unlink($0.baseAddress!) }) == 0 else {
      let code = errno
      close(descriptor)
      throw failure(code, "unlinking the file of the sample sizes in \(directory)")
    }
    return descriptor
  }

  /// `O_TMPFILE` (`__O_TMPFILE | O_DIRECTORY`), whose macro Swift does not import.
  #if arch(x86_64)
    private static let temporaryFile: Int32 = 0o2020_0000
  #else
    private static let temporaryFile: Int32 = 0o2004_0000
  #endif

  private func failure(_ code: Int32, _ doing: String) -> MediaError {
    let cause = LibraryFailure.posix(code)
    return MediaError(.writeFailed, "\(doing): \(cause.text)", cause: cause)
  }
}
