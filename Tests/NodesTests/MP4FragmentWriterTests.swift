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
    var failure: TiError?
    for frame in 0..<40 {
      do {
        try writer.append(
          track: 0, Data(repeating: 7, count: 100), time: Int64(frame) * 1024, decodeTime: Int64(frame) * 1024,
          duration: 1024, isSync: true)
      } catch let error as TiError {
        failure = error
        break
      }
    }
    let error = try #require(failure, "a second of audio was never written")
    #expect(error.code == .fileWriteFailed)
    #expect(error.message.contains("No space left on device"), "\(error.message)")
    #expect(writer.tables.isEmpty && writer.fragmentHeaders.isEmpty)
    #expect(throws: TiError.self) {
      try writer.append(track: 0, Data([1]), time: 1 << 20, decodeTime: 1 << 20, duration: 1024, isSync: true)
    }
    #expect(throws: TiError.self) { try writer.flush() }
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
    let samples = try #require(writer.tables[1]).samples
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
    #expect(throws: TiError.self) {
      try writer.append(track: 0, picture, time: far, decodeTime: far, duration: 40_000, isSync: true)
    }
    try writer.append(track: 0, picture, time: 40_000, decodeTime: 40_000, duration: 40_000, isSync: false)
    try writer.flush()
    let table = try #require(writer.tables[2])
    #expect(table.samples.map(\.duration) == [40_000, 40_000])
    // Annex B became a length: 4 + 3 bytes.
    #expect(table.samples.map(\.size) == [7, 7])
  }

  @Test(
    "times whose differences do not fit 64 bits, a picture shown before it is decoded, decode order broken: typed errors"
  )
  func timesAtTheLimitsAreRefused() throws {
    let (writer, directory) = try Self.emptyFile(tracks: [Self.video])
    defer { _ = directory }
    let picture = Data([0, 0, 1, 0x65, 1])
    for (time, decodeTime) in [(Int64.max, Int64.min), (Int64.min, Int64.max), (0, 1)] {
      #expect(throws: TiError.self) {
        try writer.append(track: 0, picture, time: time, decodeTime: decodeTime, duration: 1, isSync: true)
      }
    }
    try writer.append(track: 0, picture, time: .max, decodeTime: .max - 1, duration: .max, isSync: true)
    #expect(throws: TiError.self) {
      try writer.append(track: 0, picture, time: .max, decodeTime: .max - 1, duration: 1, isSync: true)
    }
    #expect(throws: TiError.self) {
      try writer.append(track: 0, picture, time: .min, decodeTime: .min, duration: 1, isSync: true)
    }
    #expect(throws: TiError.self) {
      try writer.append(track: 0, picture, payload: 3..<9, time: .max, decodeTime: .max, duration: 1, isSync: true)
    }
    try writer.flush()
    #expect(writer.tables[2]?.samples.map(\.duration) == [UInt32.max])
  }
}

/// An MP4 of more than 71.6 minutes: its video `mdhd` (microseconds) needs a 64-bit duration, which the
/// empty `moov` libavformat writes does not have. The index is still finished in place (it made every
/// export over 71 minutes a full remux before: the whole file read and written again).
@Suite("An MP4 longer than a 32-bit duration")
struct LongMP4Tests {
  @Test("73 minutes of pictures: finished in place, version 1 mdhd, ffprobe reads 4,400 s")
  func aLongFileIsFinishedInPlace() throws {
    let executor = ThreadExecutor(name: "test.long")
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
