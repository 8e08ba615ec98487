import Foundation
import PipelineGraph

/// Turns a fragmented MP4 written with room reserved after its `moov` into an ordinary MP4, in place:
/// the sample tables that ``MP4FragmentWriter`` kept while writing are written over the empty `moov` and
/// the reserved `free` box, and every `moof` becomes a zero-filled `free` box. The media bytes are
/// neither read nor moved, so finalizing costs a few reads and writes of boxes, whatever the length.
///
/// Until the last write the file stays a valid fragmented MP4, so a crash never loses it.
enum MP4Finalizer {
  private typealias Track = MP4SampleTable

  struct TopLevelBox {
    var type: String
    var offset: UInt64
    var size: UInt64
  }

  /// Finalizes `path` in place from `tables` (by track id) and the `moof` boxes at `fragmentHeaders`.
  /// Throws ``MP4Error`` (nothing written) when the file does not start as expected or the index does
  /// not fit the reserved room. The sound track's first `audioLeadIn` µs are hidden by an edit list
  /// (see ``MP4File/audioLeadIn``).
  /// A given `videoEnd` ends the video track's presentation there (an edit list): frames after it are
  /// references of B-frames before it.
  /// A positive `audioStart` begins the sound track's presentation that late (an empty edit).
  @discardableResult
  static func finalizeInPlace(
    path: String, tables: [UInt32: MP4SampleTable], fragmentHeaders: [Range<UInt64>],
    audioLeadIn: MediaDuration = .zero, audioStart: MediaDuration = .zero, videoEnd: MediaDuration? = nil,
    compactingInto compacted: String? = nil
  ) throws -> Bool {
    guard let file = FileHandle(forUpdatingAtPath: path) else { throw MP4Error.malformed("cannot open \(path)") }
    defer { try? file.close() }
    let (moovBox, available, moov) = try header(of: file)
    let movieTimescale = try timescale(of: moov.child("mvhd"), fieldOffset: 12)
    // The index, its chunk offsets `shift` bytes before where the media is now (a compacted copy).
    func index(shift: UInt64) throws -> MP4Box {
      var newMoov = moov
      newMoov.children.removeAll { $0.type == "mvex" }
      var movieDuration: UInt64 = 0
      for (index, trak) in newMoov.children.enumerated() where trak.type == "trak" {
        guard let tkhd = trak.child("tkhd"), let mdia = trak.child("mdia"), let mdhd = mdia.child("mdhd") else {
          throw MP4Error.malformed("incomplete trak")
        }
        let trackID = Self.trackID(tkhd)
        let track = tables[trackID] ?? MP4SampleTable(spillingBeside: path)
        let mediaTimescale = try timescale(of: mdhd, fieldOffset: 12)
        let mediaDuration = track.duration
        var hidden: UInt64 = 0
        if audioLeadIn > .zero, mdia.child("hdlr")?.payload.dropFirst(8).prefix(4) == Data("soun".utf8),
          let timeBase = TimeBase(numerator: 1, denominator: Int32(clamping: mediaTimescale)),
          let ticks = try? audioLeadIn.ticks(in: timeBase)
        {
          hidden = min(mediaDuration, UInt64(max(0, ticks)))
        }
        var trackDuration = mediaTimescale == 0 ? 0 : (mediaDuration - hidden) * movieTimescale / mediaTimescale
        var trimmed = false
        if let videoEnd, mdia.child("hdlr")?.payload.dropFirst(8).prefix(4) == Data("vide".utf8),
          let timeBase = TimeBase(numerator: 1, denominator: Int32(clamping: movieTimescale)),
          let ticks = try? videoEnd.ticks(in: timeBase), ticks > 0, UInt64(ticks) < trackDuration
        {
          trackDuration = UInt64(ticks)
          trimmed = true
        }
        var emptyEdit: UInt64 = 0
        if audioStart > .zero, mdia.child("hdlr")?.payload.dropFirst(8).prefix(4) == Data("soun".utf8),
          let timeBase = TimeBase(numerator: 1, denominator: Int32(clamping: movieTimescale)),
          let ticks = try? audioStart.ticks(in: timeBase), ticks > 0
        {
          emptyEdit = UInt64(ticks)
        }
        movieDuration = max(movieDuration, emptyEdit + trackDuration)
        newMoov.children[index] = try rebuild(
          trak, track: track, trackID: trackID, trackDuration: trackDuration, mediaDuration: mediaDuration,
          hiddenMediaTime: hidden,
          trimmed: trimmed, emptyEdit: emptyEdit, shift: shift)
      }
      if let mvhdIndex = newMoov.children.firstIndex(where: { $0.type == "mvhd" }) {
        newMoov.children[mvhdIndex].payload = try withDuration(
          newMoov.children[mvhdIndex].payload, movieDuration, v0Offset: 16, v1Offset: 24)
      }
      return newMoov
    }
    let newMoov = try index(shift: 0)
    // The sample sizes (4 bytes a sample) are streamed into their `stsz` boxes from the tables; the rest
    // of the index is encoded here.
    var bytes = Data()
    var holes: [MP4Box.Hole] = []
    newMoov.encode(into: &bytes, holes: &holes)
    let size = newMoov.encodedSize
    let remainder = available - size
    guard remainder == 0 || remainder >= 8 else {
      throw MP4Error.indexDoesNotFit(needed: size + 8, available: available)
    }
    guard remainder >= 0 else { throw MP4Error.indexDoesNotFit(needed: size, available: available) }
    let end = try file.seekToEnd()
    let mediaStart = moovBox.offset + UInt64(available)
    if let compacted, remainder >= Self.compactionRoom, end - mediaStart <= Self.compactionMedia,
      UInt64(remainder) * 8 >= end - mediaStart
    {
      let shifted = try index(shift: UInt64(remainder))
      if shifted.encodedSize == size {
        try copy(
          file, path: path, into: compacted, moov: shifted, at: moovBox.offset, media: mediaStart..<end,
          shift: UInt64(remainder), tables: tables, fragmentHeaders: fragmentHeaders)
        return true
      }
    }
    if remainder >= 8 {
      bytes.appendBigEndian(UInt32(remainder))
      bytes.append(contentsOf: Array("free".utf8))
    }
    // Every streamed part is checked before anything is written (an MP4Error means nothing was: the
    // caller may remux).
    for hole in holes where tables[hole.tag].map({ 4 * $0.count }) != hole.length {
      throw MP4Error.malformed("track \(hole.tag)'s sizes do not fill its stsz")
    }
    // The index goes in first; the fragments are hidden last, so an interruption leaves a readable file.
    // Within the index, everything past the old `moov` and the `free` header after it goes first (into
    // the room the `free` box keeps, which no reader looks into), then the head with one `pwrite`: until
    // then the file is the fragmented MP4 it was.
    var writer = IndexWriter(
      descriptor: file.fileDescriptor, start: moovBox.offset, headLength: Int(moovBox.size) + 8, path: path)
    try writer.write(bytes, holes: holes, tables: tables)
    try writer.writeHead()
    try hide(fragmentHeaders, in: file.fileDescriptor, path: path, shift: 0)
    return false
  }

  /// Room left unused after the index from which a small file is finalized by a copy without it, when
  /// that room is also more than an eighth of the media (a recording reserves 1 MB for its index: a short
  /// one would be mostly that room; an export sizes its room from its range and is finished in place).
  static let compactionRoom = 64 << 10
  /// The most media a compaction copies (more is finalized in place, room and all).
  static let compactionMedia: UInt64 = 64 << 20

  /// A `free` box must not hold what a reader could take for a box: GPAC re-reads a top-level `free`
  /// whose payload starts with `mfhd` as a `moof`. The old fragment headers (`shift` bytes earlier in a
  /// compacted copy) are zeroed (they are small: the media is in `mdat`), each with one `pwrite` of its
  /// type and zeros (an hour has 7,200 of them).
  private static func hide(_ headers: [Range<UInt64>], in descriptor: Int32, path: String, shift: UInt64) throws {
    for box in headers {
      // The size stays; then the type, and zeros to the end of the box.
      var bytes = [UInt8](repeating: 0, count: Int(box.count) - 4)
      bytes.replaceSubrange(0..<4, with: Array("free".utf8))
      var position = box.lowerBound - shift + 4
      try bytes.withUnsafeBytes { try writeAll($0, to: descriptor, at: &position, path: path) }
    }
  }

  /// Writes the finished MP4 at `destination` from the fragmented one in `file`: its head (before the
  /// `moov` at `start`), the index `moov` (whose chunk offsets are `shift` bytes before the media's place
  /// in `file`), the `media` bytes right after it, its fragment headers hidden. `file` is not changed:
  /// it stays the fragmented MP4 it was until the caller removes it.
  private static func copy(
    _ file: FileHandle, path: String, into destination: String, moov: MP4Box, at start: UInt64,
    media: Range<UInt64>, shift: UInt64, tables: [UInt32: MP4SampleTable], fragmentHeaders: [Range<UInt64>]
  ) throws {
    let descriptor = open(destination, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0o666)
    guard descriptor >= 0 else {
      let failure = LibraryFailure.posix(errno)
      throw MediaError(.writeFailed, "cannot create \(destination): \(failure.text)", cause: failure)
    }
    defer { close(descriptor) }
    var position: UInt64 = 0
    try read(file, at: 0, count: Int(start)).withUnsafeBytes {
      try writeAll($0, to: descriptor, at: &position, path: destination)
    }
    var bytes = Data()
    var holes: [MP4Box.Hole] = []
    moov.encode(into: &bytes, holes: &holes)
    var writer = IndexWriter(descriptor: descriptor, start: start, headLength: 0, path: destination)
    try writer.write(bytes, holes: holes, tables: tables)
    position = start + UInt64(writer.length)
    guard position == media.lowerBound - shift else {
      throw MediaError(.writeFailed, "\(destination): the index ends at \(position), not where the media goes")
    }
    // The media, as it is (1 MB at a time).
    var offset = media.lowerBound
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while offset < media.upperBound {
      let wanted = Int(min(UInt64(buffer.count), media.upperBound - offset))
      let got = buffer.withUnsafeMutableBytes { pread(file.fileDescriptor, $0.baseAddress, wanted, off_t(offset)) }
      if got < 0, errno == EINTR { continue }
      guard got > 0 else {
        let failure = LibraryFailure.posix(got < 0 ? errno : EIO)
        throw MediaError(.writeFailed, "reading \(path): \(failure.text)", cause: failure)
      }
      try buffer.withUnsafeBytes {
        try writeAll(UnsafeRawBufferPointer(rebasing: $0[0..<got]), to: descriptor, at: &position, path: destination)
      }
      offset += UInt64(got)
    }
    try hide(fragmentHeaders, in: descriptor, path: destination, shift: shift)
  }

  /// Writes an index from `start` in order, keeping its first `headLength` bytes until ``writeHead()``
  /// puts them in place with one `pwrite` (the old `moov` and the header of the `free` box after it).
  struct IndexWriter {
    let descriptor: Int32
    let start: UInt64
    let headLength: Int
    let path: String
    var head: [UInt8] = []
    /// Bytes of the index written or kept so far.
    var length = 0

    init(descriptor: Int32, start: UInt64, headLength: Int, path: String) {
      self.descriptor = descriptor
      self.start = start
      self.headLength = headLength
      self.path = path
      head.reserveCapacity(headLength)
    }

    mutating func write(_ bytes: UnsafeRawBufferPointer) throws {
      var rest = bytes
      if length < headLength {
        let kept = min(headLength - length, rest.count)
        head.append(contentsOf: rest[0..<kept])
        rest = UnsafeRawBufferPointer(rebasing: rest[kept...])
        length += kept
      }
      guard !rest.isEmpty else { return }
      var position = start + UInt64(length)
      try MP4Finalizer.writeAll(rest, to: descriptor, at: &position, path: path)
      length += rest.count
    }

    /// Writes an encoded index whose `holes` are the tracks' `stsz` sizes, streamed from `tables`.
    mutating func write(_ bytes: Data, holes: [MP4Box.Hole], tables: [UInt32: MP4SampleTable]) throws {
      var from = 0
      for hole in holes {
        try bytes[from..<hole.offset].withUnsafeBytes { try write($0) }
        try tables[hole.tag]?.forEachSizeBatch { try write($0) }
        from = hole.offset
      }
      try bytes[from...].withUnsafeBytes { try write($0) }
    }

    func writeHead() throws {
      var position = start
      try head.withUnsafeBytes { try MP4Finalizer.writeAll($0, to: descriptor, at: &position, path: path) }
    }
  }

  /// Writes `bytes` at `position` (advanced past them) with `pwrite`.
  fileprivate static func writeAll(
    _ bytes: UnsafeRawBufferPointer, to descriptor: Int32, at position: inout UInt64, path: String
  ) throws {
    var done = 0
    while done < bytes.count {
      let written = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(position) + off_t(done))
      if written < 0, errno == EINTR { continue }
      guard written > 0 else {
        let failure = LibraryFailure.posix(written < 0 ? errno : EIO)
        throw MediaError(.writeFailed, "writing the index of \(path): \(failure.text)", cause: failure)
      }
      done += written
    }
    position += UInt64(bytes.count)
  }

  /// The `moov` of a fragmented file written with room after it (`ftyp`, `moov`, `free`): where it is, the
  /// bytes it and the room take together, and its boxes.
  static func header(of file: FileHandle) throws -> (moov: TopLevelBox, available: Int, boxes: MP4Box) {
    let boxes = try topLevelBoxes(file, count: 3)
    guard boxes.count == 3, boxes[0].type == "ftyp", boxes[1].type == "moov", boxes[2].type == "free" else {
      throw MP4Error.malformed("expected ftyp, moov, free at the start")
    }
    guard let moov = try MP4Box.parse(try read(file, at: boxes[1].offset, count: Int(boxes[1].size))).first else {
      throw MP4Error.malformed("empty moov")
    }
    return (boxes[1], Int(boxes[1].size + boxes[2].size), moov)
  }

  /// The first `count` top-level boxes.
  static func topLevelBoxes(_ file: FileHandle, count: Int) throws -> [TopLevelBox] {
    let end = try file.seekToEnd()
    var boxes: [TopLevelBox] = []
    var offset: UInt64 = 0
    while offset + 8 <= end, boxes.count < count {
      let header = try read(file, at: offset, count: Int(min(16, end - offset)))
      var size = UInt64(header.bigEndian(UInt32.self, at: 0))
      let type = String(decoding: header[4..<8], as: UTF8.self)
      if size == 1 {
        guard header.count >= 16 else { throw MP4Error.malformed("truncated large box") }
        size = header.bigEndian(UInt64.self, at: 8)
      } else if size == 0 {
        size = end - offset
      }
      guard size >= 8, offset + size <= end else { throw MP4Error.malformed("top-level box \(type) overruns") }
      boxes.append(TopLevelBox(type: type, offset: offset, size: size))
      offset += size
    }
    return boxes
  }

  static func read(_ file: FileHandle, at offset: UInt64, count: Int) throws -> Data {
    try file.seek(toOffset: offset)
    guard let data = try file.read(upToCount: count), data.count == count else {
      throw MP4Error.malformed("short read")
    }
    return data
  }

  private static func timescale(of box: MP4Box?, fieldOffset: Int) throws -> UInt64 {
    guard let box, box.payload.count >= 20 else { throw MP4Error.malformed("missing header box") }
    let at = box.payload.first == 1 ? 20 : fieldOffset
    return UInt64(box.payload.bigEndian(UInt32.self, at: at))
  }

  /// Sets the duration field of an mvhd/tkhd/mdhd payload (version 0 or 1).
  /// A duration that does not fit a version 0 box (the muxer writes version 0 into the empty `moov`;
  /// at the video's microseconds an `mdhd` holds 71 minutes) makes it a version 1 box: the creation and
  /// modification times and the duration become 64-bit, the other fields stay as they are.
  private static func withDuration(_ payload: Data, _ duration: UInt64, v0Offset: Int, v1Offset: Int) throws -> Data {
    var payload = payload
    if payload.first == 1 {
      guard payload.count >= v1Offset + 8 else { throw MP4Error.malformed("short header box") }
      payload.setBigEndian(duration, at: v1Offset)
    } else {
      guard payload.count >= v0Offset + 4, v0Offset >= 12 else { throw MP4Error.malformed("short header box") }
      guard duration > UInt64(UInt32.max) else {
        payload.setBigEndian(UInt32(duration), at: v0Offset)
        return payload
      }
      let bytes = [UInt8](payload)
      var wide = Data([1] + bytes[1..<4])
      wide.appendBigEndian(UInt64(payload.bigEndian(UInt32.self, at: 4)))  // creation time
      wide.appendBigEndian(UInt64(payload.bigEndian(UInt32.self, at: 8)))  // modification time
      wide.append(contentsOf: bytes[12..<v0Offset])
      wide.appendBigEndian(duration)
      wide.append(contentsOf: bytes[(v0Offset + 4)...])
      guard wide.count >= v1Offset + 8 else { throw MP4Error.malformed("short header box") }
      return wide
    }
    return payload
  }

  private static func rebuild(
    _ trak: MP4Box, track: Track, trackID: UInt32, trackDuration: UInt64, mediaDuration: UInt64,
    hiddenMediaTime: UInt64,
    trimmed: Bool = false, emptyEdit: UInt64 = 0, shift: UInt64 = 0
  ) throws -> MP4Box {
    var trak = trak
    trak.children.removeAll { $0.type == "edts" }
    if hiddenMediaTime > 0 || trimmed || emptyEdit > 0,
      let tkhd = trak.children.firstIndex(where: { $0.type == "tkhd" })
    {
      // The whole track but its first `hiddenMediaTime` (or its frames after `trackDuration`), presented
      // from 0, or from `emptyEdit` after an empty edit.
      let elst = fullBox("elst") { data in
        data.appendBigEndian(UInt32(emptyEdit > 0 ? 2 : 1))
        if emptyEdit > 0 {
          data.appendBigEndian(UInt32(clamping: emptyEdit))
          data.appendBigEndian(UInt32.max)  // media time −1: an empty edit
          data.appendBigEndian(UInt32(0x0001_0000))
        }
        data.appendBigEndian(UInt32(clamping: trackDuration))
        data.appendBigEndian(UInt32(clamping: hiddenMediaTime))
        data.appendBigEndian(UInt32(0x0001_0000))  // media rate 1.0
      }
      trak.children.insert(MP4Box(type: "edts", children: [elst]), at: tkhd + 1)
    }
    for (index, child) in trak.children.enumerated() where child.type == "tkhd" {
      trak.children[index].payload = try withDuration(
        child.payload, emptyEdit + trackDuration, v0Offset: 20, v1Offset: 28)
    }
    guard let mdiaIndex = trak.children.firstIndex(where: { $0.type == "mdia" }) else {
      throw MP4Error.malformed("no mdia")
    }
    var mdia = trak.children[mdiaIndex]
    for (index, child) in mdia.children.enumerated() where child.type == "mdhd" {
      mdia.children[index].payload = try withDuration(child.payload, mediaDuration, v0Offset: 16, v1Offset: 24)
    }
    guard let minfIndex = mdia.children.firstIndex(where: { $0.type == "minf" }),
      let stblIndex = mdia.children[minfIndex].children.firstIndex(where: { $0.type == "stbl" }),
      let stsd = mdia.children[minfIndex].children[stblIndex].child("stsd")
    else { throw MP4Error.malformed("no stbl") }
    mdia.children[minfIndex].children[stblIndex] = MP4Box(
      type: "stbl", children: sampleTables(track, trackID: trackID, stsd: stsd, shift: shift))
    trak.children[mdiaIndex] = mdia
    return trak
  }

  private static func fullBox(_ type: String, _ body: (inout Data) -> Void) -> MP4Box {
    var payload = Data([0, 0, 0, 0])
    body(&payload)
    return MP4Box(type: type, payload: payload)
  }

  private static func sampleTables(_ track: Track, trackID: UInt32, stsd: MP4Box, shift: UInt64) -> [MP4Box] {
    var boxes = [stsd]
    // stts: runs of equal durations, as the table keeps them.
    boxes.append(
      fullBox("stts") { data in
        data.appendBigEndian(UInt32(track.durations.count))
        for run in track.durations {
          data.appendBigEndian(run.count)
          data.appendBigEndian(run.value)
        }
      })
    if track.hasCompositionOffsets {
      var box = fullBox("ctts") { data in
        data.appendBigEndian(UInt32(track.compositionOffsets.count))
        for run in track.compositionOffsets {
          data.appendBigEndian(run.count)
          data.appendBigEndian(UInt32(bitPattern: run.value))
        }
      }
      box.payload[0] = 1  // signed offsets
      boxes.append(box)
    }
    if !track.allSync {
      boxes.append(
        fullBox("stss") { data in
          data.appendBigEndian(UInt32(track.syncSamples.count))
          for number in track.syncSamples { data.appendBigEndian(number) }
        })
    }
    // Chunks are numbered from 1 in `stco` order; a run without samples is no chunk.
    let chunks = track.chunks.filter { $0.sampleCount > 0 }
    boxes.append(
      fullBox("stsc") { data in
        var entries: [(first: UInt32, count: UInt32)] = []
        for (index, chunk) in chunks.enumerated() where entries.last?.count != UInt32(chunk.sampleCount) {
          entries.append((UInt32(index + 1), UInt32(chunk.sampleCount)))
        }
        data.appendBigEndian(UInt32(entries.count))
        for entry in entries {
          data.appendBigEndian(entry.first)
          data.appendBigEndian(entry.count)
          data.appendBigEndian(UInt32(1))
        }
      })
    // stsz: the sizes are streamed from the table where the box is written.
    var stsz = fullBox("stsz") { data in
      data.appendBigEndian(UInt32(0))
      data.appendBigEndian(UInt32(track.count))
    }
    stsz.streamedLength = 4 * track.count
    stsz.streamTag = trackID
    boxes.append(stsz)
    let large = chunks.contains { $0.offset - shift > UInt64(UInt32.max) }
    boxes.append(
      fullBox(large ? "co64" : "stco") { data in
        data.appendBigEndian(UInt32(chunks.count))
        for chunk in chunks {
          let offset = chunk.offset - shift
          if large { data.appendBigEndian(offset) } else { data.appendBigEndian(UInt32(offset)) }
        }
      })
    return boxes
  }
}
