import Foundation
import MediaSynthesis
import MediaTestSupport
import PipelineGraph
import PipelineTestKit
import Testing

@testable import Nodes

/// `MP4FragmentWriter` with values at its limits: what it refuses is refused before anything changes, and
/// a write that fails stops it (the finished index would otherwise describe bytes the file does not hold).
@Suite("MP4 fragment writer at its limits")
struct MP4FragmentWriterTests {
  private static let audio = MP4FragmentWriter.Track(id: 1, timescale: 16_000, lengthPrefixed: false)
  private static let video = MP4FragmentWriter.Track(id: 2, timescale: 1_000_000, lengthPrefixed: true)

  /// A writer appending to a new empty file (the directory removes it when released).
  private static func emptyFile(tracks: [MP4FragmentWriter.Track]) throws -> (MP4FragmentWriter, TemporaryDirectory) {
    let directory = try TemporaryDirectory()
    let path = directory.url.appendingPathComponent("f.mp4").path
    #expect(FileManager.default.createFile(atPath: path, contents: Data()))
    return (try MP4FragmentWriter(path: path, tracks: tracks), directory)
  }

  @Test(
    "a disk that is full: the write fails as fileWriteFailed (ENOSPC), the index keeps nothing, later samples are refused"
  )
  func aFailedWriteStopsTheWriter() throws {
    let writer = try MP4FragmentWriter(path: "/dev/full", tracks: [Self.audio])
    var failure: MediaError?
    for frame in 0..<40 {
      do {
        try writer.append(
          track: 0, Data(repeating: 7, count: 100), time: Int64(frame) * 1024, decodeTime: Int64(frame) * 1024,
          duration: 1024, isSync: true)
      } catch let error as MediaError {
        failure = error
        break
      }
    }
    let error = try #require(failure, "a second of audio was never written")
    #expect(error.kind == .writeFailed)
    #expect(error.message.contains("No space left on device"), "\(error.message)")
    #expect(writer.tables.isEmpty && writer.fragmentHeaders.isEmpty)
    #expect(throws: MediaError.self) {
      try writer.append(track: 0, Data([1]), time: 1 << 20, decodeTime: 1 << 20, duration: 1024, isSync: true)
    }
    #expect(throws: MediaError.self) { try writer.flush() }
  }

  @Test(
    "an export's blocks are allocated ahead of its writes without changing its size, the index's room stays a hole, and the close gives back the rest; a recording's are not"
  )
  func anExportAllocatesAhead() throws {
    let directory = try TemporaryDirectory()
    for use in [MP4FragmentWriter.Use.export, .recording] {
      let path = directory.url.appendingPathComponent("\(use).mp4").path
      #expect(FileManager.default.createFile(atPath: path, contents: Data()))
      var writer: MP4FragmentWriter? = try MP4FragmentWriter(path: path, tracks: [Self.audio], use: use)
      // Room for an index, as `MP4File` keeps it: a hole.
      try writer?.reserve(4 << 20)
      // Nine seconds of audio: an export's 8-second fragment, or a recording's one-second ones, written.
      for frame in 0..<144 {
        try writer?.append(
          track: 0, Data(repeating: UInt8(frame), count: 1000), time: Int64(frame) * 1024,
          decodeTime: Int64(frame) * 1024, duration: 1024, isSync: true)
      }
      let open = try Self.allocation(path)
      let media = open.size - (4 << 20)
      #expect(media > 100_000 && media < 160_000, "\(use): \(media) bytes of fragments")
      if use == .export {
        #expect(
          open.allocated >= Int(MP4FragmentWriter.preallocationStep),
          "\(open.allocated) bytes of blocks for \(media) bytes of fragments: nothing allocated ahead")
        #expect(
          open.allocated < Int(MP4FragmentWriter.preallocationStep) + (1 << 20),
          "\(open.allocated) bytes of blocks: the index's room was allocated too")
      } else {
        #expect(open.allocated < media + (1 << 20), "a recording took \(open.allocated) bytes of blocks")
      }
      try writer?.flush()
      let flushed = try Self.allocation(path).size
      writer = nil
      let closed = try Self.allocation(path)
      #expect(closed.size == flushed, "the close keeps every byte written")
      #expect(
        closed.allocated < closed.size - (4 << 20) + (1 << 20), "\(use): \(closed.allocated) bytes of blocks kept")
      #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == flushed)
    }
  }

  /// A file's size and the bytes of the blocks it holds.
  private static func allocation(_ path: String) throws -> (size: Int, allocated: Int) {
    var status = stat()
    guard stat(path, &status) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    return (Int(status.st_size), Int(status.st_blocks) * 512)
  }

  @Test("an empty payload is left out, as the muxer did: the sample before it lasts until the next")
  func anEmptyPayloadIsLeftOut() throws {
    let (writer, directory) = try Self.emptyFile(tracks: [Self.audio])
    defer { _ = directory }
    try writer.append(track: 0, Data([1, 2, 3]), time: 0, decodeTime: 0, duration: 1024, isSync: true)
    try writer.append(
      track: 0, Data([9, 9, 9, 9, 9, 9, 9]), payload: 7..<7, time: 1024, decodeTime: 1024, duration: 1024,
      isSync: true)
    try writer.append(track: 0, Data([4, 5]), time: 2048, decodeTime: 2048, duration: 1024, isSync: true)
    try writer.flush()
    let samples = try #require(writer.tables[1]).samples()
    #expect(samples.map(\.size) == [3, 2])
    #expect(samples.map(\.duration) == [2048, 1024])
  }

  @Test("a hole longer than a sample can last (2³² ticks: 71 minutes of video) is refused, nothing changed")
  func aHoleTooLongForATrunIsRefused() throws {
    let (writer, directory) = try Self.emptyFile(tracks: [Self.video])
    defer { _ = directory }
    let picture = Data([0, 0, 0, 1, 0x65, 1, 2])
    try writer.append(track: 0, picture, time: 0, decodeTime: 0, duration: 40_000, isSync: true)
    let far = Int64(UInt32.max) + 1
    #expect(throws: MediaError.self) {
      try writer.append(track: 0, picture, time: far, decodeTime: far, duration: 40_000, isSync: true)
    }
    try writer.append(track: 0, picture, time: 40_000, decodeTime: 40_000, duration: 40_000, isSync: false)
    try writer.flush()
    let samples = try #require(writer.tables[2]).samples()
    #expect(samples.map(\.duration) == [40_000, 40_000])
    // Annex B became a length: 4 + 3 bytes.
    #expect(samples.map(\.size) == [7, 7])
  }

  @Test(
    "times whose differences do not fit 64 bits, a picture shown before it is decoded, decode order broken: typed errors"
  )
  func timesAtTheLimitsAreRefused() throws {
    let (writer, directory) = try Self.emptyFile(tracks: [Self.video])
    defer { _ = directory }
    let picture = Data([0, 0, 1, 0x65, 1])
    for (time, decodeTime) in [(Int64.max, Int64.min), (Int64.min, Int64.max), (0, 1)] {
      #expect(throws: MediaError.self) {
        try writer.append(track: 0, picture, time: time, decodeTime: decodeTime, duration: 1, isSync: true)
      }
    }
    try writer.append(track: 0, picture, time: .max, decodeTime: .max - 1, duration: .max, isSync: true)
    #expect(throws: MediaError.self) {
      try writer.append(track: 0, picture, time: .max, decodeTime: .max - 1, duration: 1, isSync: true)
    }
    #expect(throws: MediaError.self) {
      try writer.append(track: 0, picture, time: .min, decodeTime: .min, duration: 1, isSync: true)
    }
    #expect(throws: MediaError.self) {
      try writer.append(track: 0, picture, payload: 3..<9, time: .max, decodeTime: .max, duration: 1, isSync: true)
    }
    try writer.flush()
    #expect(try writer.tables[2]?.samples().map(\.duration) == [UInt32.max])
  }
}

/// An MP4 of more than 71.6 minutes: its video `mdhd` (microseconds) needs a 64-bit duration, which the
/// empty `moov` libavformat writes does not have. The index is still finished in place (it made every
/// export over 71 minutes a full remux before: the whole file read and written again).
@Suite("An MP4 longer than a 32-bit duration")
struct LongMP4Tests {
  @Test("73 minutes of pictures: finished in place, version 1 mdhd, ffprobe reads 4,400 s")
  func aLongFileIsFinishedInPlace() throws {
    let (pictures, format) = try Self.recordedPictures()

    let directory = try TemporaryDirectory()
    let destination = directory.url.appendingPathComponent("long.mp4")
    let seconds = 4_400
    let file = try MP4File(
      path: directory.url.appendingPathComponent("work.mp4").path, video: format, audio: nil,
      reservedIndexBytes: MP4File.indexBytes(forSeconds: Int64(seconds), samplesPerSecond: 1))
    // One picture a second, the recorded ones over and over (each group from its keyframe).
    for second in 0..<seconds {
      let picture = pictures[second % pictures.count]
      try file.writeVideo(
        picture.data, time: .microseconds(Int64(second) * 1_000_000), duration: .microseconds(1_000_000),
        isKeyframe: second % pictures.count == 0)
    }
    try file.finalize(installingAt: destination)
    let types = try topLevelBoxTypes(destination)
    #expect(Array(types.prefix(3)) == ["ftyp", "moov", "free"], "finished in place, not remuxed: \(types.prefix(5))")
    let probe = try run(
      "/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", destination.path])
    #expect(
      abs((Double(probe.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - Double(seconds)) < 0.01, "\(probe)")
    let bytes = try Data(contentsOf: destination)
    let mdhd = try #require(bytes.range(of: Data("mdhd".utf8)))
    #expect(bytes[mdhd.upperBound] == 1, "a version 1 mdhd")
  }

  @Test("20,000 pictures: the sizes spill beside the file, unlinked, and stream into stsz; ffmpeg decodes it")
  func aTrackOfManySamplesStreamsItsSizes() throws {
    let (pictures, format) = try Self.recordedPictures()

    let directory = try TemporaryDirectory()
    let destination = directory.url.appendingPathComponent("many.mp4")
    let count = MP4SampleTable.sizesPerBatch + 3_616
    let file = try MP4File(
      path: directory.url.appendingPathComponent("work.mp4").path, video: format, audio: nil,
      reservedIndexBytes: MP4File.indexBytes(forSeconds: Int64(count / 25 + 1), samplesPerSecond: 25))
    for index in 0..<count {
      try file.writeVideo(
        pictures[index % pictures.count].data, time: .microseconds(Int64(index) * 40_000),
        duration: .microseconds(40_000), isKeyframe: index % pictures.count == 0)
    }
    try file.finalize(installingAt: destination)
    // The spill file was unlinked when it was made: only the output is left.
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path) == ["many.mp4"])
    let types = try topLevelBoxTypes(destination)
    #expect(Array(types.prefix(3)) == ["ftyp", "moov", "free"], "finished in place: \(types.prefix(5))")
    // Every size in its place: the recorded pictures repeat, so the sizes ffprobe reads repeat with them.
    let sizes = try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-select_streams", "v", "-show_entries", "packet=size", "-of", "csv=p=0", destination.path]
    ).split(separator: "\n").compactMap { Int($0) }
    #expect(sizes.count == count)
    let period = pictures.count
    #expect(sizes.indices.allSatisfy { sizes[$0] == sizes[$0 % period] }, "sizes out of place")
    let decode = try runForStandardError("/usr/bin/ffmpeg", ["-v", "error", "-i", destination.path, "-f", "null", "-"])
    #expect(decode.isEmpty, "\(decode.prefix(500))")
  }

  /// The pictures of 2 s of the small synthetic library (from its keyframe), and their format.
  private static func recordedPictures() throws -> ([EncodedPacket], TrackFormat) {
    let executor = ThreadExecutor(name: "test.pictures")
    defer { executor.shutdown() }
    let pipeline = Pipeline(executor: executor, clock: VirtualClock(freeRunning: true))
    let verifier = try SegmentVerifier()
    let demuxer = SegmentDemuxer()
    let sink = CollectingSink<EncodedPacket>()
    pipeline.connect(SyntheticSource(options: smallOptions(seconds: 2)), to: verifier)
    pipeline.connect(verifier, to: demuxer)
    pipeline.connect(demuxer, to: sink)
    #expect(try pipeline.runToCompletion().failures.isEmpty)
    let pictures = sink.items.filter { $0.track.kind == .video }
    let format = try #require(pictures.first?.format)
    return (pictures, format)
  }

  private func topLevelBoxTypes(_ file: URL) throws -> [String] {
    let data = try Data(contentsOf: file)
    var types: [String] = []
    var offset = 0
    while offset + 8 <= data.count {
      var size = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
      if size == 1 { size = data[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) } }
      guard size >= 8 else { break }
      types.append(String(decoding: data[offset + 4..<offset + 8], as: UTF8.self))
      offset += size
    }
    return types
  }
}

/// `MP4SampleTable` keeps runs, sync numbers and spilled sizes: what it gives back is what was put in.
@Suite("MP4 sample table")
struct MP4SampleTableTests {
  @Test("30 random tables of up to 3 batches: samples() gives back every sample appended, nothing left on disk")
  func whatGoesInComesBack() throws {
    var generator = SeededGenerator(seed: 0x5A5A_2026)
    for round in 0..<30 {
      let directory = try TemporaryDirectory()
      let table = MP4SampleTable(spillingBeside: directory.url.appendingPathComponent("t.mp4").path)
      let count = Int.random(in: 0...(MP4SampleTable.sizesPerBatch * 3), using: &generator)
      // Runs of durations and offsets, keyframes now and then (or all, as audio), any size.
      let allSync = round % 3 == 0
      var appended: [MP4SampleTable.Sample] = []
      var duration = UInt32.random(in: 1...3, using: &generator)
      var offset = Int32(0)
      for index in 0..<count {
        if Int.random(in: 0..<50, using: &generator) == 0 {
          duration = UInt32.random(in: 0...UInt32.max, using: &generator)
        }
        if Int.random(in: 0..<7, using: &generator) == 0 { offset = Int32.random(in: -80...80, using: &generator) }
        let sample = MP4SampleTable.Sample(
          size: UInt32.random(in: 0...UInt32.max, using: &generator), duration: duration, compositionOffset: offset,
          isSync: allSync || index % 50 == 0 || Bool.random(using: &generator) && index % 7 == 0)
        try table.append(
          size: sample.size, duration: sample.duration, compositionOffset: sample.compositionOffset,
          isSync: sample.isSync)
        appended.append(sample)
      }
      #expect(try table.samples() == appended, "round \(round): \(count) samples")
      #expect(table.count == count)
      #expect(table.duration == appended.reduce(UInt64(0)) { $0 + UInt64($1.duration) })
      #expect(table.allSync == appended.allSatisfy(\.isSync))
      #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).isEmpty)
    }
  }
}
