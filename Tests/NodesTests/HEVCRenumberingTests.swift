import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import Testing

/// `HEVCRenumbering` rewrites a libx265 stream's VPS, SPS, PPS and slice headers; ffmpeg, which decodes
/// the rewritten stream, is the judge: the same pictures, under ids the other stream does not use.
@Suite("H.265 parameter sets renumbered")
struct HEVCRenumberingTests {
  /// A 2-second raw H.265 stream: B-frames, an open group of pictures, four slices per picture (so
  /// later slices are rewritten too; libx265 makes independent slices only, and one sub-layer — the SPS's
  /// sub-layer branch is written to the standard but not exercised here).
  static func makeStream(in directory: URL) throws -> URL {
    let file = directory.appendingPathComponent("slices.h265")
    _ = try run(
      "/usr/bin/ffmpeg",
      [
        "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "2", "-pix_fmt", "yuv420p",
        "-c:v", "libx265", "-x265-params", "bframes=4:keyint=25:slices=4:repeat-headers=1:log-level=error",
        "-f", "hevc", file.path,
      ])
    return file
  }

  static func pictureHashes(_ file: URL) throws -> (hashes: [String], errors: String) {
    let hashes = try run("/usr/bin/ffmpeg", ["-v", "error", "-i", file.path, "-f", "framemd5", "-"])
      .split(separator: "\n").filter { !$0.hasPrefix("#") }.map { String($0.split(separator: ",").last ?? "") }
    let errors = try runForStandardError("/usr/bin/ffmpeg", ["-v", "error", "-i", file.path, "-f", "null", "-"])
    return (hashes, errors)
  }

  @Test("moved away from its own ids, and from random ones, the stream decodes to the same pictures")
  func renumberedStreamsDecodeTheSame() throws {
    let directory = try TemporaryDirectory()
    let file = try Self.makeStream(in: directory.url)
    let stream = try Data(contentsOf: file)
    let own = HEVCParameterSetIDs(in: stream)
    #expect(own.video == [0] && own.sequence == [0] && own.picture == [0], "libx265 numbers from 0")
    let original = try Self.pictureHashes(file)
    #expect(original.hashes.count == 50 && original.errors.isEmpty)

    var generator = SeededGenerator(seed: fuzzSeed(0x6865_7663))
    var takens = [own]
    for _ in 0..<fuzzCases(6) {
      var taken = HEVCParameterSetIDs()
      taken.video = Set((0..<Int(generator.next() % 15)).map { _ in Int(generator.next() % 16) }).union([0])
      taken.sequence = Set((0..<Int(generator.next() % 15)).map { _ in Int(generator.next() % 16) }).union([0])
      taken.picture = Set((0..<Int(generator.next() % 40)).map { _ in Int(generator.next() % 64) }).union([0])
      takens.append(taken)
    }
    for (round, taken) in takens.enumerated() {
      let renumbering = HEVCRenumbering(moving: own, awayFrom: taken)
      #expect(!renumbering.isIdentity, "round \(round)")
      let rewritten = renumbering.apply(to: stream)
      let ids = HEVCParameterSetIDs(in: rewritten)
      #expect(ids.video.isDisjoint(with: taken.video), "round \(round): VPS \(ids.video) against \(taken.video)")
      #expect(ids.sequence.isDisjoint(with: taken.sequence), "round \(round): SPS \(ids.sequence)")
      #expect(ids.picture.isDisjoint(with: taken.picture), "round \(round): PPS \(ids.picture)")
      let output = directory.url.appendingPathComponent("renumbered-\(round).h265")
      try rewritten.write(to: output)
      let decoded = try Self.pictureHashes(output)
      #expect(decoded.hashes == original.hashes, "round \(round): pictures differ")
      #expect(decoded.errors.isEmpty, "round \(round): \(decoded.errors)")
    }
  }

  @Test("with no free id left, nothing moves and the stream is returned as it was")
  func noFreeIdKeepsTheStream() throws {
    let directory = try TemporaryDirectory()
    let stream = try Data(contentsOf: try Self.makeStream(in: directory.url))
    var taken = HEVCParameterSetIDs()
    taken.video = Set(0...15)
    taken.sequence = Set(0...15)
    taken.picture = Set(0...63)
    let renumbering = HEVCRenumbering(moving: HEVCParameterSetIDs(in: stream), awayFrom: taken)
    #expect(renumbering.isIdentity)
    #expect(renumbering.apply(to: stream) == stream)
  }
}
