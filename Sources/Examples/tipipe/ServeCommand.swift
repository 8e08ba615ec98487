import CloudServer
import Foundation
import Nodes

/// `tipipe serve` and `tipipe token` (`spec/cli.md`): the reference cloud server and its tokens.
enum ServeCommand {
  static let summary = "serve a library over the cloud API (spec/cloud-api.md), with fault injection"
  static let usage = """
    usage: tipipe serve --root DIR [--host 127.0.0.1] [--port 8080] [--secret-file F] [--url-ttl SECONDS]
                        [--threads N] [--object-host HOST[:PORT]]... [--insecure] [--quiet]
                        [upload limits] [fault flags]

    Serves the library in DIR (index.json and its objects, as `tipipe synth` writes them) per
    spec/cloud-api.md: GET /v1/recordings with a bearer token (`tipipe token`), presigned object URLs,
    Range answers (206; 416 for a bad range), JSON error bodies. Binds 127.0.0.1 by default; --port 0
    picks a free port. Prints `listening on http://HOST:PORT` on stdout, then one line per request on
    stderr (never tokens or signatures) unless --quiet. SIGINT, SIGTERM or SIGHUP stop it (exit 0).
    The signing secret comes from --secret-file F (its one line), else TIPIPE_SECRET, else --secret S
    (visible to every local user through ps: warned about), else the public "tipipe-dev-secret". An
    address other than loopback with that public secret is refused unless --insecure: anyone could sign
    tokens for it. --url-ttl (300) is how long object URLs stay valid.

    Only regular files under ROOT/objects are served (symlinks resolved and checked). An index entry
    may instead name an absolute http(s) URL on a host given with --object-host (repeatable; HOST
    matches the default port only, HOST:PORT that port): it is listed as it is, for that host to serve.
    Any other entry is answered 500 and named in the log.

    Scrub previews: GET /thumbnails?start_ms=S&end_ms=E&channel=N&every_ms=I[&width=160][&columns=10]
    with the device's bearer token answers the WebVTT index of a sprite of keyframe thumbnails (one per
    I ms, as `tipipe thumbnails` makes it), whose cues name GET /thumbnails.jpg?… at a presigned URL
    (loadable without the token, --url-ttl long). One sheet is made at a time (429 meanwhile); the last
    four are kept.

    HLS: GET /hls/index.m3u8?start_ms=S&end_ms=E&channel=N[&audio_channel=M] with the bearer token (or
    the presigned URL its answer names in X-Presigned-URL, for players that cannot send one) answers a
    VOD playlist of fMP4 segments made on the fly by stream copy, one per object, an init section
    (EXT-X-MAP) per run of objects (with &maps=each, per object: a picture size may change between
    objects), decrypted here; a gap
    is an EXT-X-DISCONTINUITY (closed up in the stream's times; EXT-X-PROGRAM-DATE-TIME gives each run's
    wall clock). At most two segments are made at once (503 meanwhile); the last eight are kept.

    Log uploads (POST /v1/logs) take a device token (Authorization: Bearer) and are kept as received in
    ROOT/uploads; each device's, since the server started, within (defaults in brackets):
      --upload-max-bytes N         one upload's body [1140850688]
      --upload-quota-bytes N       all of a device's uploads [4294967296]
      --upload-quota-count N       a device's uploads [1000]
      --uploads-per-minute N       uploads a device starts in any minute [6]
      --upload-max-expansion N     how many times its size an archive may unpack to [100]

    Fault flags (per object id, "first N" counts that object's requests):
      --fail-first N               the first N requests of each object answer --fail-status
      --fail-rate P                each object request answers --fail-status with probability P
      --fail-status CODE           status of injected failures (default 500; 429 too)
      --truncate-first N           the first N requests of each object send half the body, then close
      --truncate-rate P            each object request is truncated with probability P
      --ignore-range               object requests are answered whole (200), whatever their Range asks
      --reset-first N              the first N requests of each object close the connection unanswered
      --expire-signatures-first N  the first N requests of each object answer 403 signature_expired
      --latency-ms MS              wait MS before every answer
      --bandwidth BYTES            send object bodies at most BYTES per second
      --stall-object ID            every request of object ID sends 1000 bytes, then nothing for 10 s,
                                   then closes (repeatable)
      --token-requests N           after N listing requests, every token counts as expired (401)
      --listing-status CODE        every listing answers CODE (e.g. 429, 500, 503)
      --malformed-listing          every listing answers 200 with a body that is not JSON
      --seed N                     seed of the random faults (default 1)
    """

  /// The development secret everyone knows (spec/cli.md's default).
  static let defaultSecret = "tipipe-dev-secret"

  /// 127.0.0.0/8, ::1 and localhost: only this machine can connect.
  static func isLoopback(_ host: String) -> Bool {
    if host == "localhost" || host == "::1" || host == "[::1]" { return true }
    let parts = host.split(separator: ".", omittingEmptySubsequences: false)
    return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
  }

  static func run(_ arguments: [String]) throws -> Int32 {
    let flags = try FlagParser(
      arguments,
      known: [
        "--root": .value, "--host": .value, "--port": .value, "--secret": .value, "--url-ttl": .value,
        "--insecure": .boolean, "--upload-max-bytes": .value, "--upload-quota-bytes": .value,
        "--upload-quota-count": .value, "--uploads-per-minute": .value, "--upload-max-expansion": .value,
        "--threads": .value, "--object-host": .repeated, "--quiet": .boolean, "--fail-first": .value,
        "--fail-rate": .value,
        "--fail-status": .value, "--ignore-range": .boolean, "--truncate-first": .value, "--truncate-rate": .value,
        "--reset-first": .value,
        "--expire-signatures-first": .value, "--latency-ms": .value, "--bandwidth": .value, "--stall-object": .repeated,
        "--token-requests": .value, "--listing-status": .value, "--malformed-listing": .boolean, "--seed": .value,
      ])
    let root = try flags.required("--root")
    guard !root.isEmpty else { throw UsageError(message: "--root must not be empty") }
    var configuration = ServerConfiguration(
      root: URL(fileURLWithPath: root), secret: flags.string("--secret") ?? defaultSecret)
    guard !configuration.secret.isEmpty else { throw UsageError(message: "--secret must not be empty") }
    configuration.host = flags.string("--host") ?? "127.0.0.1"
    if configuration.secret == defaultSecret && !isLoopback(configuration.host) && !flags.has("--insecure") {
      throw UsageError(
        message: "serving \(configuration.host) with the public default secret would let anyone sign tokens: "
          + "give --secret-file (or TIPIPE_SECRET), or --insecure to do it anyway")
    }
    configuration.port = UInt16(try flags.integer("--port", default: 8080, range: 0...65535))
    configuration.urlLifetimeSeconds = Int64(try flags.integer("--url-ttl", default: 300, range: 0...604_800))
    configuration.threads = try flags.integer("--threads", default: 4, range: 1...256)
    for host in flags.all("--object-host") {
      guard !host.isEmpty, !host.contains("/"), !host.contains("@"),
        URLComponents(string: "http://\(host)")?.host != nil
      else { throw UsageError(message: "--object-host takes HOST or HOST:PORT, not \(host.oneLine)") }
      configuration.objectHosts.insert(host.lowercased())
    }
    var uploads = UploadLimits()
    uploads.maximumBytes = Int64(
      try flags.integer("--upload-max-bytes", default: Int(uploads.maximumBytes), range: 0...(1 << 40)))
    uploads.quotaBytes = Int64(
      try flags.integer("--upload-quota-bytes", default: Int(uploads.quotaBytes), range: 0...(1 << 50)))
    uploads.quotaCount = try flags.integer(
      "--upload-quota-count", default: uploads.quotaCount, range: 0...1_000_000_000)
    uploads.perMinute = try flags.integer("--uploads-per-minute", default: uploads.perMinute, range: 0...1_000_000)
    uploads.maximumExpansion = Int64(
      try flags.integer("--upload-max-expansion", default: Int(uploads.maximumExpansion), range: 1...1_000_000))
    configuration.uploads = uploads
    var faults = ServerFaults()
    faults.failFirst = try flags.integer("--fail-first", default: 0, range: 0...1_000_000)
    faults.failRate = try probability(flags, "--fail-rate")
    faults.failStatus = try flags.integer("--fail-status", default: 500, range: 400...599)
    faults.truncateFirst = try flags.integer("--truncate-first", default: 0, range: 0...1_000_000)
    faults.truncateRate = try probability(flags, "--truncate-rate")
    faults.ignoresRanges = flags.has("--ignore-range")
    faults.resetFirst = try flags.integer("--reset-first", default: 0, range: 0...1_000_000)
    faults.expireSignaturesFirst = try flags.integer("--expire-signatures-first", default: 0, range: 0...1_000_000)
    faults.latencyMilliseconds = try flags.integer("--latency-ms", default: 0, range: 0...60_000)
    faults.bytesPerSecond = try flags.integer("--bandwidth", default: 0, range: 0...(1 << 40))
    faults.stalledObjects = Set(flags.all("--stall-object"))
    if flags.string("--token-requests") != nil {
      faults.tokenRequests = try flags.integer("--token-requests", default: 0, range: 0...1_000_000_000)
    }
    if flags.string("--listing-status") != nil {
      faults.listingStatus = try flags.integer("--listing-status", default: 500, range: 400...599)
    }
    faults.malformedListing = flags.has("--malformed-listing")
    faults.seed = UInt64(try flags.integer("--seed", default: 1, range: 0...Int.max))
    configuration.faults = faults
    if !flags.has("--quiet") {
      configuration.log = { line in StandardError.write(Data("\(line)\n".utf8)) }
    }

    let server = try ReferenceServer(configuration)
    _ = StandardOutput.write(Data("listening on \(server.endpoint)\n".utf8))
    Interruption.shared.onSignal { _ in
      server.stop()
      _exit(0)
    }
    while true { pause() }
  }

  private static func probability(_ flags: FlagParser, _ flag: String) throws -> Double {
    guard let text = flags.string(flag) else { return 0 }
    guard let value = Double(text), (0...1).contains(value) else {
      throw UsageError(message: "\(flag) must be a probability in 0...1")
    }
    return value
  }
}

/// `tipipe token`: a device token for the reference server.
enum TokenCommand {
  static let summary = "print a device token for tipipe serve"
  static let usage = """
    usage: tipipe token --device-id ID [--secret-file F] [--ttl SECONDS]

    Prints v1.<device_id>.<expires>.<hex(HMAC-SHA256(secret, "v1.<device_id>.<expires>"))>, valid for
    --ttl seconds (default 3600; 0 gives a token that has already expired). The secret comes from
    --secret-file, TIPIPE_SECRET or --secret (warned about), else "tipipe-dev-secret", as for tipipe serve.
    """

  static func run(_ arguments: [String]) throws -> Int32 {
    let flags = try FlagParser(arguments, known: ["--device-id": .value, "--secret": .value, "--ttl": .value])
    let device = try flags.required("--device-id")
    guard !device.isEmpty, !device.contains(where: { $0.isWhitespace }) else {
      throw UsageError(message: "--device-id must be non-empty, without spaces")
    }
    let secret = flags.string("--secret") ?? ServeCommand.defaultSecret
    guard !secret.isEmpty else { throw UsageError(message: "--secret must not be empty") }
    let ttl = try flags.integer("--ttl", default: 3600, range: 0...315_360_000)
    let now = Int64(Date().timeIntervalSince1970)
    StandardOutput.line(CloudToken(deviceId: device, expires: now + Int64(ttl)).signed(secret: secret))
    return 0
  }
}
