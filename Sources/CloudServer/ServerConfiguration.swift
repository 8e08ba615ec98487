import Foundation

/// What a ``ReferenceServer`` serves and how.
///
/// A value; no states. The server calls ``log`` and ``now`` on libmicrohttpd's threads, several at once,
/// so both must be thread-safe.
public struct ServerConfiguration: Sendable {
  /// The library directory (`index.json` and its objects, as `tipipe synth` writes them).
  public var root: URL
  /// The address to bind: loopback unless the caller says otherwise.
  public var host = "127.0.0.1"
  /// The port; 0 picks a free one (read ``ReferenceServer/port``).
  public var port: UInt16 = 8080
  /// The HMAC secret of tokens and presigned URLs.
  public var secret: String
  /// Hosts (`name` or `name:port`, compared without case) that index entries may name in absolute
  /// `http`/`https` URLs: such an entry is listed as it is, and its host serves it under its own rules
  /// (a CDN, a bucket). An absolute URL to any other host is a bad entry: its object is not served.
  public var objectHosts: Set<String> = []
  /// How long a presigned object URL stays valid, in seconds.
  public var urlLifetimeSeconds: Int64 = 300
  /// Threads of the epoll pool (a thread per connection instead while latency or bandwidth faults sleep).
  public var threads = 4
  /// The most connections served at once.
  public var connectionLimit = 1024
  /// Injected faults.
  public var faults = ServerFaults()
  /// What log uploads (`POST /v1/logs`) may cost.
  public var uploads = UploadLimits()
  /// Receives one line per request (method, path without query, status, bytes): never tokens or
  /// signatures. Nil: no log.
  public var log: (@Sendable (String) -> Void)?
  /// The clock of token and signature expiry, in Unix seconds (tests move it).
  public var now: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }

  /// Serves `root` with `secret`.
  public init(root: URL, secret: String) {
    self.root = root
    self.secret = secret
  }
}

/// What the log uploads of one device may cost the server (docs/security.md). Counted since the server
/// started; an upload over any limit is refused before its body is stored, and an archive is inspected
/// by reading at most what its limits allow, never unpacked whole.
public struct UploadLimits: Sendable {
  /// The largest body of one upload (a raw dump may hold 1 GiB, logs a few more megabytes).
  public var maximumBytes: Int64 = (1 << 30) + (64 << 20)
  /// Bytes one device may have stored in all.
  public var quotaBytes: Int64 = 4 << 30
  /// Uploads one device may have stored in all.
  public var quotaCount = 1000
  /// Uploads one device may start in any 60 seconds.
  public var perMinute = 6
  /// How many times its compressed size an archive may unpack to (gzip compresses logs about 10×, video
  /// barely; a gzip bomb 1000×).
  public var maximumExpansion: Int64 = 100
  /// The most an archive may unpack to, whatever its size.
  public var maximumUnpackedBytes: Int64 = 8 << 30

  /// The defaults above.
  public init() {}
}
