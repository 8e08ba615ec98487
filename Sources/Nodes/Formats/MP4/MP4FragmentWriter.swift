import Foundation
import MediaKernels
import PipelineGraph

/// Appends the media of a fragmented MP4 — `moof` + `mdat` pairs — to a file whose `ftyp` and `moov`
/// are written, straight from the packets' own buffers.
///
/// A fragment is written with `pwritev`: one buffer holds the `moof`, the `mdat` header and the 4-byte
/// lengths that replace the start codes of Annex B video (``AnnexB``); the samples' bytes are written
/// from where the demuxer left them, never copied in user space. (Through libavformat each sample was
/// copied three times and searched for start codes byte by byte: most of an export's time.)
///
/// Timing follows what the MP4 muxer wrote for an `empty_moov` file, so that a finished file is the
/// same: each track's first sample is decoded and presented at 0; a sample lasts until the next one of
/// its track is decoded (so a sample before a hole lasts until after it), the last one its own
/// duration; composition offsets are signed. A sample's duration is known when the next one comes, so
/// each track's newest sample waits for it. A fragment holds what is ready of every track once one
/// track has a second of it (8 for an export, ``Use``) or ``maximumSamples`` a second, each
/// track's samples in one `traf` and one run.
final class MP4FragmentWriter {
  /// A track of the file.
  struct Track {
    /// The `tkhd` track id.
    var id: UInt32
    /// Ticks per second of the track's media time.
    var timescale: Int64
    /// Annex B access units are written as length-prefixed NAL units (H.264, H.265).
    var lengthPrefixed: Bool
  }

  private struct Sample {
    var data: Data
    /// Byte ranges of `data` written, each behind its length when the track is length-prefixed.
    var pieces: [Range<Int>]
    var size: UInt32
    var decodeTime: Int64
    var compositionOffset: Int32
    var isSync: Bool
    var duration: Int64
  }

  private struct TrackState {
    var track: Track
    /// The first sample's (decode time, presentation − decode time): the track starts at 0 from it.
    var origin: (decode: Int64, delay: Int64)?
    var lastDecodeTime: Int64?
    var waiting: Sample?
    var ready: [Sample] = []
    /// The bytes of the ready samples.
    var readyBytes = 0
    /// What the ready samples last: each lasts until the next is decoded, so up to the waiting one.
    var readyDuration: Int64 {
      guard let first = ready.first?.decodeTime, let last = waiting?.decodeTime else { return 0 }
      return last - first
    }
  }

  /// A fragment holds at most this many samples of a track (it bounds the `pwritev` vectors held).
  static let maximumSamples = 256
  /// The bytes a track's fragment holds at most (the packets it keeps until written): 8 s of 25 Mbit/s
  /// video would be 25 MB.
  static let maximumFragmentBytes = 4 << 20
  /// The samples whose bytes one `pwritev` takes (a fragment of 25 pictures and 47 AAC frames takes two).
  static let samplesPerWrite = 64
  /// `IOV_MAX` on Linux (the C macro does not reach Swift): the most vectors one `pwritev` takes.
  private static let vectorLimit = 1024
  /// What a file is written for, which sets how.
  enum Use {
    /// A recording, which a crash must lose little of: one-second fragments, blocks taken as written.
    case recording
    /// An export, kept only when complete: 8-second fragments (fewer of them, a smaller index of them to
    /// keep while writing), and the file's blocks allocated ahead of the writes, at least
    /// ``preallocationStep`` at a time, what is left past its end given back when it closes. ext4 then
    /// finds each page written already mapped instead of reserving a block for it (delayed allocation):
    /// about 6 % of a one-core export's CPU (A/B, 2026-12-06, `Benchmarks/README.md`). The file's size
    /// never includes them (a file cut short ends at its last fragment); the room reserved for the index
    /// stays a hole; nothing is allocated ahead on a disk with less than ``preallocationFloor`` free.
    case export

    var fragmentSeconds: Int64 { self == .export ? 8 : 1 }
  }

  /// The least an export allocates ahead at a time.
  static let preallocationStep: UInt64 = 32 << 20
  /// Below this much free space an export allocates nothing ahead: what it takes ahead is never what
  /// another writer on a nearly full disk runs out of.
  static let preallocationFloor: UInt64 = 1 << 30

  let path: String
  /// What the file is for: how much a fragment holds (``Use/fragmentSeconds`` of a track, or that many
  /// times ``maximumSamples``), and whether blocks are allocated ahead (and given back at the close).
  private let use: Use
  private let descriptor: Int32
  private var tracks: [TrackState]
  /// Where the next fragment goes: the end of the file.
  private var offset: UInt64
  private var sequence: UInt32 = 0
  /// What each track holds so far, by track id.
  private(set) var tables: [UInt32: MP4SampleTable] = [:]
  /// Where each `moof` written is: what a finished file hides.
  private(set) var fragmentHeaders: [Range<UInt64>] = []
  /// Set when a fragment could not be written: the file no longer matches ``tables``, so nothing more
  /// is taken.
  private var failure: MediaError?
  /// Where the blocks allocated ahead end (0: none yet).
  private var allocatedEnd: UInt64 = 0
  /// True for an export until the file system refuses to allocate ahead (or the disk is nearly full).
  private var preallocates: Bool

  /// Opens `path` for appending fragments after its last byte.
  init(path: String, tracks: [Track], use: Use = .recording) throws {
    self.path = path
    self.use = use
    preallocates = use == .export
    let descriptor = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY)
    guard descriptor >= 0 else {
      let failure = LibraryFailure.posix(errno)
      throw MediaError(.writeFailed, "cannot open \(path): \(failure.text)", cause: failure)
    }
    let end = lseek(descriptor, 0, SEEK_END)
    guard end >= 0 else {
      let failure = LibraryFailure.posix(errno)
      close(descriptor)
      throw MediaError(.writeFailed, "cannot examine \(path): \(failure.text)", cause: failure)
    }
    self.descriptor = descriptor
    self.offset = UInt64(end)
    self.tracks = tracks.map { TrackState(track: $0) }
  }

  deinit {
    // An export's: a truncation to the file's own size frees the blocks allocated past its end (also
    // those of an allocation that failed part of the way; one call, whether any was made).
    if use == .export {
      var status = stat()
      if fstat(descriptor, &status) == 0 { _ = ftruncate(descriptor, status.st_size) }
    }
    close(descriptor)
  }

  /// Adds a track whose samples the next fragments may carry (declared in the file's `moov` by the
  /// caller first); returns its index for ``append(track:_:payload:time:decodeTime:duration:isSync:)``.
  func addTrack(_ track: Track) -> Int {
    tracks.append(TrackState(track: track))
    return tracks.count - 1
  }

  /// Appends a `free` box of `size` bytes (zeros, a sparse extent): room kept for an index.
  func reserve(_ size: Int) throws {
    guard size >= 8 else { return }
    var header: [UInt8] = []
    header.box("free", size: size)
    try write([.init(header: 0..<8)], header: header, samples: [])
    guard ftruncate(descriptor, off_t(offset) + off_t(size - 8)) == 0 else { throw systemFailure("reserving room in") }
    offset += UInt64(size - 8)
  }

  /// Takes one sample of track `index`: `data`'s bytes in `payload` (all of them by default), at
  /// presentation and decode time in the track's ticks (`time ≥ decodeTime`, decode times increasing).
  /// An empty payload is left out, as the muxer did (the previous sample then lasts until the next).
  func append(
    track index: Int, _ data: Data, payload: Range<Int>? = nil, time: Int64, decodeTime: Int64, duration: Int64,
    isSync: Bool
  ) throws {
    if let failure { throw failure }
    guard tracks.indices.contains(index) else { throw MediaError(.writeFailed, "\(path) has no track \(index)") }
    let range = payload ?? 0..<data.count
    guard range.lowerBound >= 0, range.upperBound <= data.count else {
      throw MediaError(.writeFailed, "\(path): bytes \(range) of a \(data.count)-byte packet")
    }
    guard !range.isEmpty else { return }
    // Read field by field, and the track's state changed in place below: a copy of the whole state would
    // share its `ready` array, and each append would copy that array (quadratic in a fragment's samples).
    let lengthPrefixed = tracks[index].track.lengthPrefixed
    let track = tracks[index].track.id
    if let last = tracks[index].lastDecodeTime, decodeTime <= last {
      throw MediaError(.writeFailed, "\(path): decode time \(decodeTime) does not follow \(last) (track \(track))")
    }
    let (delay, late) = time.subtractingReportingOverflow(decodeTime)
    guard !late, delay >= 0 else {
      throw MediaError(.writeFailed, "\(path): presentation \(time) before decoding \(decodeTime) (track \(track))")
    }
    let origin = tracks[index].origin ?? (decodeTime, delay)
    let (stored, far) = decodeTime.subtractingReportingOverflow(origin.decode)
    let (relative, apart) = delay.subtractingReportingOverflow(origin.delay)
    guard !far, !apart, let offset = Int32(exactly: relative) else {
      throw MediaError(.writeFailed, "\(path): a time that does not fit the track (track \(track))")
    }
    // A sample lasts until the next one of its track is decoded: at most 2³² − 1 ticks in a `trun`
    // (71 minutes at the video's microseconds).
    if let waiting = tracks[index].waiting?.decodeTime, stored - waiting > Int64(UInt32.max) {
      throw MediaError(
        .writeFailed,
        "\(path): \(stored - waiting) ticks between two samples of track \(track), more than a sample can last"
      )
    }
    let pieces: [Range<Int>] =
      lengthPrefixed
      ? data.withUnsafeBytes { raw in
        AnnexB.nalUnits(in: UnsafeRawBufferPointer(rebasing: raw[range])).map {
          $0.lowerBound + range.lowerBound..<$0.upperBound + range.lowerBound
        }
      } : [range]
    let bytes = pieces.reduce(0) { $0 + $1.count + (lengthPrefixed ? 4 : 0) }
    guard let size = UInt32(exactly: bytes) else { throw MediaError(.writeFailed, "\(path): a sample over 4 GB") }
    tracks[index].origin = origin
    tracks[index].lastDecodeTime = decodeTime
    if var waiting = tracks[index].waiting {
      waiting.duration = stored - waiting.decodeTime
      tracks[index].ready.append(waiting)
      tracks[index].readyBytes += Int(waiting.size)
    }
    tracks[index].waiting = Sample(
      data: data, pieces: pieces, size: size, decodeTime: stored, compositionOffset: offset, isSync: isSync,
      duration: min(max(1, duration), Int64(UInt32.max)))
    if tracks[index].readyDuration >= tracks[index].track.timescale * use.fragmentSeconds
      || tracks[index].ready.count >= Self.maximumSamples * Int(use.fragmentSeconds)
      || tracks[index].readyBytes >= Self.maximumFragmentBytes
    {
      try writeFragment()
    }
  }

  /// Writes every sample taken, the newest of each track lasting its own duration.
  func flush() throws {
    if let failure { throw failure }
    for index in tracks.indices {
      guard let waiting = tracks[index].waiting else { continue }
      tracks[index].ready.append(waiting)
      tracks[index].waiting = nil
    }
    try writeFragment()
  }

  // MARK: Writing

  /// One slice of the bytes a fragment writes: of the header buffer, or of a sample's data.
  private struct Piece {
    var sample: Int?
    var range: Range<Int>
    init(header range: Range<Int>) { self.range = range }
    init(sample: Int, range: Range<Int>) {
      self.sample = sample
      self.range = range
    }
  }

  /// Writes the ready samples of every track, each track's as one `moof` + `mdat` (one track a fragment,
  /// as CMAF has it and as the muxer's `separate_moof` did: with both tracks in one `moof`, Chromium left
  /// a 0.1 s hole in what it buffered after an in-band size change, PlayerPageTests), all with one
  /// `pwritev`.
  private func writeFragment() throws {
    let runs = tracks.indices.filter { !tracks[$0].ready.isEmpty }
    guard !runs.isEmpty else { return }
    // The boxes and the lengths of the NAL units, for every run; the pieces say what is written in order.
    var header: [UInt8] = []
    header.reserveCapacity(runs.reduce(0) { $0 + 256 + tracks[$1].ready.count * 24 })
    var pieces: [Piece] = []
    var samples: [Data] = []
    var position = offset
    // What the fragments add to the index, kept once they are written.
    var number = sequence
    var headers: [Range<UInt64>] = []
    var chunks: [(index: Int, chunk: MP4SampleTable.Chunk)] = []
    for index in runs {
      let ready = tracks[index].ready
      let trackID = tracks[index].track.id
      let lengthPrefixed = tracks[index].track.lengthPrefixed
      let moofStart = header.count
      number &+= 1
      // One sync state for the whole run goes in the `tfhd`; composition offsets only when there are some.
      let sameFlags = ready.allSatisfy { $0.isSync == ready[0].isSync }
      let offsets = ready.contains { $0.compositionOffset != 0 }
      header.box("moof")
      header.box("mfhd", size: 16)
      header.append(UInt32(0))
      header.append(number)
      let trafStart = header.count
      header.box("traf")
      header.box("tfhd", size: sameFlags ? 20 : 16)
      header.append(UInt32(sameFlags ? 0x02_0020 : 0x02_0000))  // default-base-is-moof (+ default flags)
      header.append(trackID)
      if sameFlags { header.append(Self.flags(isSync: ready[0].isSync)) }
      header.box("tfdt", size: 20)
      header.append(UInt32(0x0100_0000))  // version 1: a 64-bit decode time
      header.append(UInt64(bitPattern: ready[0].decodeTime))
      let perSample = 8 + (sameFlags ? 0 : 4) + (offsets ? 4 : 0)
      header.box("trun", size: 20 + perSample * ready.count)
      // Version 1 (signed composition offsets); data offset, then per sample: duration, size (flags, offset).
      header.append(UInt32(0x0100_0301) | (sameFlags ? 0 : 0x400) | (offsets ? 0x800 : 0))
      header.append(UInt32(ready.count))
      let dataOffsetField = header.count
      header.append(UInt32(0))
      // By index, field by field: a sample copied whole would retain its data and its pieces.
      for sample in ready.indices {
        guard let duration = UInt32(exactly: ready[sample].duration) else {
          throw MediaError(
            .writeFailed, "\(path): a sample lasting \(ready[sample].duration) ticks (track \(trackID))")
        }
        header.append(duration)
        header.append(ready[sample].size)
        if !sameFlags { header.append(Self.flags(isSync: ready[sample].isSync)) }
        if offsets { header.append(UInt32(bitPattern: ready[sample].compositionOffset)) }
      }
      header.set(UInt32(header.count - trafStart), at: trafStart)
      let moofSize = header.count - moofStart
      header.set(UInt32(moofSize), at: moofStart)
      let payload = ready.reduce(0) { $0 + Int($1.size) }
      if payload + 8 > Int(UInt32.max) {
        header.box("mdat", size: 1)
        header.append(UInt64(payload + 16))
      } else {
        header.box("mdat", size: payload + 8)
      }
      let dataOffset = header.count - moofStart
      header.set(UInt32(dataOffset), at: dataOffsetField)
      pieces.append(Piece(header: moofStart..<header.count))
      headers.append(position..<position + UInt64(moofSize))
      chunks.append((index, MP4SampleTable.Chunk(offset: position + UInt64(dataOffset), sampleCount: ready.count)))
      position += UInt64(dataOffset + payload)
      // The samples' bytes, each NAL unit behind its length (kept in the header buffer).
      for entry in ready.indices {
        let sample = samples.count
        samples.append(ready[entry].data)
        for range in ready[entry].pieces {
          if lengthPrefixed {
            pieces.append(Piece(header: header.count..<header.count + 4))
            header.append(UInt32(range.count))
          }
          pieces.append(Piece(sample: sample, range: range))
        }
      }
    }
    // Not before: the room reserved for the index (written by `reserve`) stays a hole.
    preallocate(through: position)
    let fragmentStart = offset
    do {
      try write(pieces, header: header, samples: samples)
    } catch let error as MediaError {
      // A fragment written in part (a full disk) would end the file with a box no reader can finish: the
      // file is cut back to its last whole fragment, which is what it holds (as after a crash).
      if ftruncate(descriptor, off_t(fragmentStart)) == 0 { offset = fragmentStart }
      failure = error
      throw error
    }
    sequence = number
    fragmentHeaders += headers
    do {
      // The ready samples are what was written (their durations fit 32 bits: checked in the `trun`).
      for (index, chunk) in chunks {
        let track = tracks[index].track.id
        let table = tables[track] ?? MP4SampleTable(spillingBeside: path)
        tables[track] = table
        table.chunks.append(chunk)
        let ready = tracks[index].ready
        for sample in ready.indices {
          try table.append(
            size: ready[sample].size, duration: UInt32(ready[sample].duration),
            compositionOffset: ready[sample].compositionOffset, isSync: ready[sample].isSync)
        }
      }
    } catch let error as MediaError {
      // The index no longer matches the file: nothing more is taken.
      failure = error
      throw error
    }
    for index in runs {
      tracks[index].ready = []
      tracks[index].readyBytes = 0
    }
  }

  /// `sample_flags` of a sync sample (depends on no other) or of one that is not.
  private static func flags(isSync: Bool) -> UInt32 { isSync ? 0x0200_0000 : 0x0101_0000 }

  /// Writes `pieces` at the end of the file, the pieces of at most ``samplesPerWrite`` samples with one
  /// `pwritev` (each sample's bytes are reached inside its own `withUnsafeBytes`: that nesting is bounded).
  private func write(_ pieces: [Piece], header: [UInt8], samples: [Data]) throws {
    let bases = UnsafeMutableBufferPointer<UnsafeRawPointer?>.allocate(capacity: samples.count)
    defer { bases.deallocate() }
    try header.withUnsafeBytes { head in
      var start = 0
      while start < pieces.count {
        // Up to the piece of the first sample past the batch (samples come in order).
        let first = pieces[start...].lazy.compactMap(\.sample).first ?? samples.count
        let limit = first + Self.samplesPerWrite
        let end = pieces[start...].firstIndex { ($0.sample ?? 0) >= limit } ?? pieces.count
        try Self.withBaseAddresses(of: samples[first..<min(limit, samples.count)], into: bases) {
          var vectors = pieces[start..<end].map { piece -> iovec in
            let base = piece.sample.map { bases[$0] } ?? head.baseAddress
            return iovec(
              iov_base: UnsafeMutableRawPointer(mutating: base.map { $0 + piece.range.lowerBound }),
              iov_len: piece.range.count)
          }
          try vectors.withUnsafeMutableBufferPointer { try writeAll($0) }
        }
        start = end
      }
    }
  }

  /// Each sample's base address, valid while `body` runs (one `withUnsafeBytes` scope inside the next).
  private static func withBaseAddresses(
    of samples: ArraySlice<Data>, into bases: UnsafeMutableBufferPointer<UnsafeRawPointer?>, _ body: () throws -> Void
  ) throws {
    guard let first = samples.first else { return try body() }
    try first.withUnsafeBytes { raw in
      bases[samples.startIndex] = raw.baseAddress
      try withBaseAddresses(of: samples.dropFirst(), into: bases, body)
    }
  }

  private func writeAll(_ vectors: UnsafeMutableBufferPointer<iovec>) throws {
    var first = 0
    while first < vectors.count {
      let count = min(vectors.count - first, Self.vectorLimit)
      let written = pwritev(descriptor, vectors.baseAddress! + first, Int32(count), off_t(offset))
      if written < 0 {
        if errno == EINTR { continue }
        throw systemFailure("writing")
      }
      guard written > 0 else { throw MediaError(.writeFailed, "writing \(path): the system wrote nothing") }
      offset += UInt64(written)
      // Past the vectors written whole; the one written in part keeps its rest.
      var left = written
      while first < vectors.count, left >= vectors[first].iov_len {
        left -= vectors[first].iov_len
        first += 1
      }
      if left > 0 {
        vectors[first].iov_base += left
        vectors[first].iov_len -= left
      }
    }
  }

  /// An export's file: allocates its blocks up to `end` at least (``preallocationStep`` ahead) unless they
  /// are; stops for good once the file system refuses or has less than ``preallocationFloor`` free (the
  /// writes then take blocks as they come, and a full disk fails the write itself).
  private func preallocate(through end: UInt64) {
    guard preallocates, end > allocatedEnd else { return }
    var disk = statvfs()
    guard fstatvfs(descriptor, &disk) == 0,
      UInt64(disk.f_bavail).multipliedReportingOverflow(by: UInt64(disk.f_frsize)).partialValue
        >= Self.preallocationFloor
    else {
      preallocates = false
      return
    }
    let from = max(allocatedEnd, offset)
    let length = max(end - from, Self.preallocationStep)
    preallocates = tipipe_preallocate(descriptor, Int64(from), Int64(length)) == 0
    if preallocates { allocatedEnd = from + length }
  }

  private func systemFailure(_ doing: String) -> MediaError {
    let failure = LibraryFailure.posix(errno)
    return MediaError(.writeFailed, "\(doing) \(path): \(failure.text)", cause: failure)
  }
}

extension [UInt8] {
  /// Appends a box header: `size` (0 until it is known: set it later) and the four-character type.
  fileprivate mutating func box(_ type: StaticString, size: Int = 0) {
    append(UInt32(clamping: size))
    type.withUTF8Buffer { append(contentsOf: $0) }
  }

  /// Appends `value` in big-endian order.
  fileprivate mutating func append<Integer: FixedWidthInteger>(_ value: Integer) {
    var big = value.bigEndian
    Swift.withUnsafeBytes(of: &big) { append(contentsOf: $0) }
  }

  /// Writes `value` in big-endian order at `offset`.
  fileprivate mutating func set(_ value: UInt32, at offset: Int) {
    let big = value.bigEndian
    Swift.withUnsafeBytes(of: big) { bytes in
      for index in 0..<4 { self[offset + index] = bytes[index] }
    }
  }
}
