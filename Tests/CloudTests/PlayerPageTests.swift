import CloudServer
import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import Testing

/// `GET /player` in a real browser (headless Chromium, issue 26): the page lists the range, loads the HLS
/// fragments through Media Source Extensions with its own loader, seeks as a click does to the picture
/// recorded at that time (read back from a canvas and compared with ffmpeg's decode of an export), plays
/// across the gap to the end, and shows a bad token as an error.
///
/// One browser at a time: five Chromiums at once on two cores starve each other (and a page's time to its
/// first picture with them).
@Suite(.serialized) struct PlayerPageTests {
  private func value(_ key: String, in line: String) -> String? {
    line.split(separator: " ").first { $0.hasPrefix("\(key)=") }.map { String($0.dropFirst(key.count + 1)) }
  }

  /// The picture's lumas a frame line carries (`luma=` in hex, a byte a pixel).
  private func luma(in frame: String) -> [UInt8] {
    let hex = value("luma", in: frame) ?? ""
    return stride(from: 0, to: hex.count, by: 2).compactMap { offset -> UInt8? in
      let index = hex.index(hex.startIndex, offsetBy: offset)
      return UInt8(hex[index..<hex.index(index, offsetBy: 2)], radix: 16)
    }
  }

  @Test func thePagePlaysSeeksAndCrossesTheGapInChromium() throws {
    let (served, start) = try servedLibraryWithAGap()
    let seek = start + 20_000
    let page =
      "\(served.server.endpoint)/player#token=\(served.token)&start=\(start)&end=\(start + 30_000)&channel=0"
      + "&audio=1&test=1&seek=\(seek)&rate=4"
    let lines = try chromiumConsole(page, marker: "tipipe-player ")
    // Before anything plays, the clock shows the range's first recorded instant and the page offers the
    // playlist for other players.
    let clock = try #require(lines.first { $0.hasPrefix("tipipe-player clock") }, "\(lines)")
    let format = DateFormatter()
    format.locale = Locale(identifier: "en_US_POSIX")
    format.timeZone = TimeZone(identifier: "UTC")
    format.dateFormat = "yyyy-MM-dd HH:mm:ss.SSS"
    let first = format.string(from: Date(timeIntervalSince1970: Double(start) / 1000))
    #expect(clock == "tipipe-player clock \(first) hls=1", "\(clock) \(first)")
    // The duration shown is the listing's: 30 s less the 6 s gap, in two runs of objects.
    let ready = try #require(lines.first { $0.hasPrefix("tipipe-player ready") }, "\(lines)")
    #expect(value("duration", in: ready) == "24.000" && value("listed", in: ready) == "24.000", "\(ready)")
    #expect(value("runs", in: ready) == "2" && value("segments", in: ready) == "6", "\(ready)")
    // The click-seek shows the picture recorded at 20 s.
    let frame = try #require(lines.first { $0.hasPrefix("tipipe-player frame") }, "\(lines)")
    #expect(
      value("wall", in: frame) == "\(seek)" && value("presented", in: frame) == "1" && value("drawn", in: frame) != "0",
      "\(frame.prefix(80))")
    let shown = luma(in: frame)
    #expect(shown.count == 64 * 48)
    let export = try TemporaryDirectory("player-export")
    let exported = export.url.appendingPathComponent("after-gap.mp4")
    let done = try tipipe([
      "export", "--endpoint", "file://" + served.library.path, "--start", "\(start + 18_000)", "--end",
      "\(start + 30_000)", "--video-channel", "0", "--out", exported.path, "--quiet",
    ])
    try #require(done.status == 0, "\(done.stderr)")
    // The codecs the buffer was opened with: H.264 of the level ffprobe reads in the same recording, and
    // AAC.
    let codecs = try #require(lines.first { $0.hasPrefix("tipipe-player codecs") }, "\(lines)")
    let level = try Self.probe("level", of: exported)
    #expect(
      codecs.hasPrefix("tipipe-player codecs avc1.") && codecs.hasSuffix(String(format: "%02x,mp4a.40.2", level)),
      "\(codecs) level \(level)")
    // Chromium's scaling is not ffmpeg's: the picture at 20 s must match far better than its
    // neighbours half a second away.
    let match = lumaPSNR(shown, try ffmpegLuma(of: exported, at: 2, width: 64, height: 48))
    let before = lumaPSNR(shown, try ffmpegLuma(of: exported, at: 1.5, width: 64, height: 48))
    let after = lumaPSNR(shown, try ffmpegLuma(of: exported, at: 2.5, width: 64, height: 48))
    #expect(
      match >= 28 && match > max(before, after) + 3,
      "\(match) dB; \(before), \(after) dB half a second away; \(frame.split(separator: " ").filter { !$0.hasPrefix("luma=") }) mean luma \(shown.reduce(0) { $0 + Int($1) } / max(1, shown.count))"
    )
    // Played from 2 s before the gap to the end: the gap crossed (the audio after it starts 48 ms after
    // the picture, on its own frame grid: the page jumps that hole once, as players do), to the end.
    let ended = try #require(lines.first { $0.hasPrefix("tipipe-player ended") }, "\(lines)")
    #expect(value("crossed", in: ended).flatMap(Int.init).map { $0 >= 1 } == true, "\(ended)")
    #expect(value("jumps", in: ended).flatMap(Int.init).map { $0 <= 1 } == true, "\(ended)")
    #expect(value("current", in: ended).flatMap(Double.init).map { abs($0 - 24) < 0.1 } == true, "\(ended)")
    #expect(!lines.contains { $0.contains("error") }, "\(lines)")
  }

  @Test func aRangeThatStartsInsideAGOPPlaysFromItsFirstKeyframeToTheEnd() throws {
    let (served, start) = try servedLibraryWithAGap()
    // From 1 s: the first keyframe in the range is at 3 s; the page jumps the hole before it and the one
    // at the gap, and plays to the end.
    let lines = try chromiumConsole(
      "\(served.server.endpoint)/player#token=\(served.token)&start=\(start + 1_000)&end=\(start + 30_000)"
        + "&channel=0&audio=1&test=1&seek=\(start + 5_000)&rate=8&from=start",
      marker: "tipipe-player ")
    let ended = try #require(lines.first { $0.hasPrefix("tipipe-player ended") }, "\(lines)")
    #expect(value("current", in: ended).flatMap(Double.init).map { abs($0 - 23) < 0.1 } == true, "\(ended)")
    #expect(value("jumps", in: ended).flatMap(Int.init).map { (1...2).contains($0) } == true, "\(ended)")
    #expect(!lines.contains { $0.contains("error") }, "\(lines)")
  }

  @Test(arguments: [(change: 10, insideAnObject: false, seekTo: 15), (change: 12, insideAnObject: true, seekTo: 13)])
  func aPictureSizeChangeInsideARunShowsTheNewSize(change: Int, insideAnObject: Bool, seekTo: Int) throws {
    let (served, start) = try servedLibraryWithAResize(at: change, insideAnObject: insideAnObject)
    // A seek after the change from 320x240 to 160x120 (at an object's start: the segment's own init
    // section says the new size; inside the object: only the keyframe's parameter sets do), then on to
    // the end.
    let seek = start + Int64(seekTo) * 1000
    let lines = try chromiumConsole(
      "\(served.server.endpoint)/player#token=\(served.token)&start=\(start)&end=\(start + 20_000)&channel=0"
        + "&audio=1&test=1&seek=\(seek)&rate=4&luma=160x120",
      marker: "tipipe-player ")
    let frame = try #require(lines.first { $0.hasPrefix("tipipe-player frame") }, "\(lines)")
    #expect(
      value("wall", in: frame) == "\(seek)" && value("size", in: frame) == "160x120"
        && value("drawn", in: frame) != "0",
      "\(frame.prefix(100))")
    let shown = luma(in: frame)
    let export = try TemporaryDirectory("player-resize")
    let exported = export.url.appendingPathComponent("after-change.mp4")
    let done = try tipipe([
      "export", "--endpoint", "file://" + served.library.path, "--start", "\(start + Int64(change) * 1000)", "--end",
      "\(start + 20_000)", "--video-channel", "0", "--out", exported.path, "--quiet",
    ])
    try #require(done.status == 0, "\(done.stderr)")
    let at = Double(seekTo - change)
    // Read back at the picture's own size and judged by correlation: this Chromium draws a picture this
    // small with its levels compressed (about 38 + 0.63 Y, also without a change), which PSNR would count
    // against it; the picture is the one recorded at the seek's time, not one half a second away.
    let match = lumaCorrelation(shown, try ffmpegLuma(of: exported, at: at, width: 160, height: 120))
    let away = try [at - 0.5, at + 0.5].map {
      lumaCorrelation(shown, try ffmpegLuma(of: exported, at: $0, width: 160, height: 120))
    }
    #expect(
      match >= 0.95 && away.allSatisfy { $0 < match - 0.2 },
      "\(match); \(away) half a second away; \(frame.split(separator: " ").filter { !$0.hasPrefix("luma=") })")
    let ended = try #require(lines.first { $0.hasPrefix("tipipe-player ended") }, "\(lines)")
    #expect(value("current", in: ended).flatMap(Double.init).map { abs($0 - 20) < 0.1 } == true, "\(ended)")
    #expect(!lines.contains { $0.contains("error") }, "\(lines)")
  }

  /// The Pearson correlation of two pictures' lumas (1: the same picture up to its levels).
  private func lumaCorrelation(_ a: [UInt8], _ b: [UInt8]) -> Double {
    guard a.count == b.count, !a.isEmpty else { return 0 }
    let (x, y) = (a.map(Double.init), b.map(Double.init))
    let (mx, my) = (x.reduce(0, +) / Double(x.count), y.reduce(0, +) / Double(y.count))
    var (sxy, sxx, syy) = (0.0, 0.0, 0.0)
    for (p, q) in zip(x, y) {
      sxy += (p - mx) * (q - my)
      sxx += (p - mx) * (p - mx)
      syy += (q - my) * (q - my)
    }
    return sxx > 0 && syy > 0 ? sxy / (sxx * syy).squareRoot() : 0
  }

  /// An integer field of the first video stream of `file`, as ffprobe reads it.
  static func probe(_ field: String, of file: URL) throws -> Int {
    let text = try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=\(field)", "-of", "csv=p=0", file.path])
    return try #require(Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), "\(field): \(text)")
  }

  @Test func anH265RecordingNamesItsCodecExactlyAndOffersThePlaylistWhereTheBrowserCannotDecodeIt() throws {
    let (served, start) = try servedLibraryWithAGap(codec: .h265)
    let lines = try chromiumConsole(
      "\(served.server.endpoint)/player#token=\(served.token)&start=\(start)&end=\(start + 30_000)&channel=0"
        + "&audio=1&test=1&seek=\(start + 5_000)&rate=8&from=start",
      marker: "tipipe-player ")
    let export = try TemporaryDirectory("player-h265")
    let exported = export.url.appendingPathComponent("h265.mp4")
    let done = try tipipe([
      "export", "--endpoint", "file://" + served.library.path, "--start", "\(start)", "--end", "\(start + 6_000)",
      "--video-channel", "0", "--out", exported.path, "--quiet",
    ])
    try #require(done.status == 0, "\(done.stderr)")
    // hvc1.<profile>.<compatibility flags, bit-reversed>.L<level>.<constraint bytes>: libx265's Main
    // profile is compatible with Main and Main 10 (flags 1 and 2: 6), progressive and frame-only
    // (constraint byte 0x90).
    let profileName = try run(
      "/usr/bin/ffprobe",
      ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=profile", "-of", "csv=p=0", exported.path])
    let profile = try #require(
      ["Main": 1, "Main 10": 2, "Main Still Picture": 3, "Rext": 4][
        profileName.trimmingCharacters(in: .whitespacesAndNewlines)], "profile \(profileName)")
    let level = try Self.probe("level", of: exported)
    let codecs = try #require(lines.first { $0.hasPrefix("tipipe-player codecs") }, "\(lines)")
    #expect(codecs == "tipipe-player codecs hvc1.\(profile).6.L\(level).90,mp4a.40.2", "\(codecs)")
    // Chromium here has no H.265 decoder for Media Source Extensions: the page says so and keeps the
    // playlist's link; a browser that has one plays.
    let clock = try #require(lines.first { $0.hasPrefix("tipipe-player clock") }, "\(lines)")
    #expect(clock.hasSuffix("hls=1"), "\(clock)")
    if let error = lines.first(where: { $0.hasPrefix("tipipe-player error") }) {
      #expect(error.hasPrefix("tipipe-player error this browser cannot play video/mp4; codecs="), "\(error)")
      #expect(!lines.contains { $0.hasPrefix("tipipe-player ready") }, "\(lines)")
    } else {
      #expect(lines.contains { $0.hasPrefix("tipipe-player ended") }, "\(lines)")
    }
  }

  @Test func aBadTokenIsAnErrorNotASpinner() throws {
    let (served, start) = try servedLibraryWithAGap()
    let expired = CloudToken(deviceId: served.deviceId, expires: now() - 10).signed(secret: secret)
    let lines = try chromiumConsole(
      "\(served.server.endpoint)/player#token=\(expired)&start=\(start)&end=\(start + 30_000)&channel=0&test=1",
      marker: "tipipe-player ")
    #expect(lines.count == 1 && lines.first?.hasPrefix("tipipe-player error 401 token_expired") == true, "\(lines)")
    // The page itself: no data, its own script only, no referrer.
    let head = try run("/usr/bin/curl", ["-s", "-D", "-", "-o", "/dev/null", "\(served.server.endpoint)/player"])
    #expect(
      head.contains("Content-Security-Policy: default-src 'self'") && head.contains("Referrer-Policy: no-referrer"))
  }
}
