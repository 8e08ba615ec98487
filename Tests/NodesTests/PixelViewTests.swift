import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

@Suite("Reading pixels and samples")
struct PixelViewTests {
  @Test("decoded pictures expose their planes; PixelConverter makes gray and RGB of the same picture")
  func planesAndConversion() throws {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: smallOptions(seconds: 3)).write(to: directory.url)
    let run = try decode(
      library: directory.url,
      range: MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 3000))
    let picture = try #require(run.videoFrames.first)
    #expect(picture.pixelFormat == .yuv420p)
    let yuv = picture.withPlanes { planes in planes.map { [$0.bytesPerLine, $0.height] } }
    #expect(yuv == [[320, 240], [160, 120], [160, 120]])
    let luma = picture.withPlanes { planes in planes[0].row(120).reduce(0) { $0 + Int($1) } }

    let gray = try NodeHarness(try PixelConverter(to: .gray8))
    gray.push(picture)
    gray.runUntilIdle()
    let converted = try #require(gray.outputItems.first)
    #expect(converted.pixelFormat == .gray8)
    #expect(converted.withPlanes { $0.map { [$0.bytesPerLine, $0.height] } } == [[320, 240]])
    // Gray is the luma plane (limited range stretched to full): same picture, brighter or equal on average.
    let grayRow = converted.withPlanes { planes in planes[0].row(120).reduce(0) { $0 + Int($1) } }
    #expect(abs(grayRow - luma) < 320 * 40, "gray \(grayRow) against luma \(luma)")

    let rgb = try NodeHarness(try PixelConverter(to: .rgb24, width: 160, height: 120))
    rgb.push(picture)
    rgb.runUntilIdle()
    let small = try #require(rgb.outputItems.first)
    #expect(small.pixelFormat == .rgb24)
    #expect(small.withPlanes { $0.map { [$0.bytesPerLine, $0.height] } } == [[480, 120]])
    #expect(small.time == picture.time)
    #expect(throws: MediaError.self) { try PixelConverter(to: .other("no-such-format")) }
  }

  @Test("decoded audio exposes its samples; synthetic pictures have the bytes asked for")
  func samplesAndFactories() throws {
    let directory = try TemporaryDirectory()
    try LibrarySynthesizer(options: smallOptions(seconds: 3)).write(to: directory.url)
    let run = try decode(
      library: directory.url,
      range: MediaRange(startMilliseconds: recordingStart, endMilliseconds: recordingStart + 3000))
    let audio = try #require(run.audioFrames.first)
    #expect(audio.pixelFormat == nil)
    try audio.withSamples { samples in
      let samples = try #require(samples)
      #expect(samples.layout == .floatPlanar)
      #expect(samples.channels == 1 && samples.count == 1024)
      #expect(samples.planes.count == 1 && samples.planes[0].count == 1024 * 4)
    }
    let picture = try SyntheticFrames.picture(time: MediaTime(milliseconds: 0), width: 5, height: 3) { plane, x, y in
      UInt8(plane * 100 + y * 10 + x)
    }
    let bytes = picture.withPlanes { planes in planes.map { plane in (0..<plane.height).map { Array(plane.row($0)) } } }
    #expect(bytes[0] == [[0, 1, 2, 3, 4], [10, 11, 12, 13, 14], [20, 21, 22, 23, 24]])
    #expect(bytes[1] == [[100, 101, 102], [110, 111, 112]])
    #expect(picture.withSamples { $0 == nil })
  }
}
