import Foundation
import MediaTestSupport
import PipelineGraph
import Testing

@testable import Nodes

/// `MP4FragmentWriter` with values at its limits: what it refuses is refused before anything changes, and
/// a write that fails stops it (the finished index would otherwise describe bytes the file does not hold).
@Suite("MP4 fragment writer at its limits")
struct MP4FragmentWriterTests {
  private static let audio = MP4FragmentWriter.Track(id: 1, timescale: 16_000, lengthPrefixed: false)
  private static let video = MP4FragmentWriter.Track(id: 2, timescale: 1_000_000, lengthPrefixed: true)

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
    let directory = try TemporaryDirectory()
    let path = directory.url.appendingPathComponent("f.mp4").path
    #expect(FileManager.default.createFile(atPath: path, contents: Data()))
    let writer = try MP4FragmentWriter(path: path, tracks: [Self.audio])
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
    let directory = try TemporaryDirectory()
    let path = directory.url.appendingPathComponent("f.mp4").path
    #expect(FileManager.default.createFile(atPath: path, contents: Data()))
    let writer = try MP4FragmentWriter(path: path, tracks: [Self.video])
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
    let directory = try TemporaryDirectory()
    let path = directory.url.appendingPathComponent("f.mp4").path
    #expect(FileManager.default.createFile(atPath: path, contents: Data()))
    let writer = try MP4FragmentWriter(path: path, tracks: [Self.video])
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
