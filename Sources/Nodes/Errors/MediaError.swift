import Foundation
import PipelineGraph

/// The engine's error: what kind of failure it was (a ``Kind`` named for the engine, not for any SDK), a
/// message for people, where it arose (its ``Domain``), the error underneath it (a libav*, curl or POSIX
/// failure, kept as ``cause``), the graph node that reported it, and, when the failure makes a stretch of a
/// recording unusable, the gap reason it stands for.
///
/// Nodes never choose an SDK's error code: each facade maps a kind to its seed's code at its edge
/// (`TiError` in TiCloudStorage for seed 000, `RecordingEngine.error(for:)` in TrackRecording for seed 003), so one node
/// serves every seed.
///
/// Two errors are equal when their kind, message, gap reason, domain and node are: the cause is kept for
/// people (``detailedDescription``, the logs), not compared.
public struct MediaError: Error, Sendable, CustomStringConvertible, Equatable {
  /// What kind of failure it was.
  public var kind: Kind
  /// What happened, for logs and the command line.
  public var message: String
  /// The gap reason this failure stands for, when it concerns a stretch of media.
  public var gapReason: GapReason?
  /// Where the failure arose.
  public var domain: Domain
  /// The error underneath, when another library or the system reported it first.
  public var cause: (any Error)?
  /// The graph node that reported the failure (`NodeFailure.nodeName`), when a graph did.
  public var node: String?

  /// What went wrong, as the engine sees it.
  public enum Kind: String, Sendable, Hashable, CaseIterable {
    /// A value given to a node, a source or a call is missing or out of range.
    case invalidArgument
    /// A span, count or size beyond a documented limit.
    case limitExceeded
    /// Memory, threads, descriptors or a bounded queue ran out.
    case resourceExhausted
    /// An output (a file, a pipe) could not be created or written.
    case writeFailed
    /// A container, codec, or a change of codec or picture size the node does not handle.
    case unsupportedFormat
    /// A library or the system failed in a way no other kind names.
    case ioFailed
    /// The work was cancelled.
    case cancelled
    /// Media that cannot be decrypted, parsed or decoded into valid frames.
    case unreadableMedia
    /// The range or track holds no media that can be used.
    case noMedia
    /// A writer fell behind what it is fed by more than it may hold.
    case fellBehind
    /// The recording service could not be asked (no useful answer after the retries).
    case serviceUnavailable
    /// The service says the credentials (the token) have expired.
    case credentialsExpired
    /// The service refuses the credentials, or they give no access.
    case accessDenied
    /// The service says the object does not exist.
    case notFound
    /// An object could not be fetched after the bounded retries.
    case downloadFailed
    /// The local network is down (no route, no interface).
    case networkUnavailable
    /// The service's host name does not resolve.
    case hostUnresolved
  }

  /// Where a failure arose: which part of the system, whatever it is reported as.
  public enum Domain: String, Sendable, Hashable, CaseIterable {
    /// A caller's request or argument (a range, a path, a flag).
    case argument
    /// An SDK's lifecycle and state rules (initialize, bindings, tasks).
    case lifecycle
    /// The cloud service's answers (listings, tokens, object URLs).
    case cloud
    /// The network under it (connections, DNS, transfers).
    case network
    /// Files and folders (the work root, outputs).
    case storage
    /// Media: containers, codecs, segments, pictures and sound (libav*).
    case media
    /// The pipeline engine itself (cancellation, limits, internal failures).
    case engine

    /// The domain a failure of `kind` usually comes from (when the failure does not say).
    public init(of kind: Kind) {
      switch kind {
      case .invalidArgument, .limitExceeded: self = .argument
      case .credentialsExpired, .accessDenied, .serviceUnavailable, .notFound: self = .cloud
      case .networkUnavailable, .hostUnresolved, .downloadFailed: self = .network
      case .writeFailed: self = .storage
      case .unsupportedFormat, .unreadableMedia, .noMedia: self = .media
      case .resourceExhausted, .ioFailed, .cancelled, .fellBehind: self = .engine
      }
    }
  }

  /// Creates an error; its domain follows from `kind` unless given.
  public init(
    _ kind: Kind, _ message: String, gapReason: GapReason? = nil, domain: Domain? = nil, cause: (any Error)? = nil
  ) {
    self.kind = kind
    self.message = message
    self.gapReason = gapReason
    self.domain = domain ?? Domain(of: kind)
    self.cause = cause
  }

  /// `error` as a ``MediaError``: itself; the one a `NodeFailure` carries, noting the node; or `ioFailed`
  /// with its text for any other error, which is kept as the cause.
  public init(_ error: any Error) {
    switch error {
    case let error as MediaError: self = error
    case let failure as NodeFailure:
      self.init(failure.error)
      if node == nil { node = failure.nodeName }
    default: self.init(.ioFailed, String(describing: error), domain: .engine, cause: error)
    }
  }

  /// An error that makes a stretch of media unusable: the kind follows from the reason.
  public static func gap(_ reason: GapReason, _ message: String, cause: (any Error)? = nil) -> MediaError {
    MediaError(Kind(of: reason), message, gapReason: reason, cause: cause)
  }

  /// The causes under this error, outermost first (a cause that is itself a ``MediaError`` goes on).
  public var causes: [any Error] {
    var chain: [any Error] = []
    var next = cause
    while let current = next, chain.count < 16 {
      chain.append(current)
      next = (current as? MediaError)?.cause
    }
    return chain
  }

  /// `kind: message`, with the gap reason when there is one.
  public var description: String {
    if let gapReason { return "\(kind.rawValue): \(message) [\(gapReason.rawValue)]" }
    return "\(kind.rawValue): \(message)"
  }

  /// ``description`` with the domain, the node and every cause, for logs.
  public var detailedDescription: String { Self.detailed(description, domain: domain, node: node, causes: causes) }

  /// `description` followed by `{domain, in node}` and `; caused by …` for each cause: the log line of an
  /// error of the engine or of an SDK built on it.
  public static func detailed(_ description: String, domain: Domain, node: String?, causes: [any Error]) -> String {
    var text = "\(description) {\(domain.rawValue)"
    if let node { text += ", in \(node)" }
    text += "}"
    for cause in causes { text += "; caused by \(String(describing: cause))" }
    return text
  }

  /// Equal kinds, messages, gap reasons, domains and nodes (causes are not compared).
  public static func == (lhs: MediaError, rhs: MediaError) -> Bool {
    lhs.kind == rhs.kind && lhs.message == rhs.message && lhs.gapReason == rhs.gapReason && lhs.domain == rhs.domain
      && lhs.node == rhs.node
  }
}

extension MediaError.Kind {
  /// The kind of failure that leaves a gap for `reason`.
  public init(of reason: GapReason) {
    switch reason {
    case .notFound: self = .notFound
    case .downloadFailed: self = .downloadFailed
    case .integrityFailed, .mediaUnreadable, .decryptionFailed, .noKeyFrame: self = .unreadableMedia
    case .unsupportedMedia: self = .unsupportedFormat
    case .trackUnavailable, .noRecording: self = .noMedia
    case .unknown: self = .ioFailed
    }
  }
}

/// A failure a C library reported with a status code (libav*'s `AVERROR`, a POSIX `errno`, curl's
/// `CURLcode`): the cause under a ``MediaError``.
public struct LibraryFailure: Error, Sendable, CustomStringConvertible, Hashable {
  /// The library (`libavformat`, `libc`, `libcurl`, …).
  public var library: String
  /// Its status code.
  public var status: Int32
  /// Its text for the code.
  public var text: String

  /// A failure of `library` with `status`, described by `text`.
  public init(library: String, status: Int32, text: String) {
    self.library = library
    self.status = status
    self.text = text
  }

  /// `library status: text`.
  public var description: String { "\(library) \(status): \(text)" }

  /// The system's failure `code` (an `errno`).
  public static func posix(_ code: Int32) -> LibraryFailure {
    LibraryFailure(library: "libc", status: code, text: String(cString: strerror(code)))
  }
}
