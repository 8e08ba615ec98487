import Foundation
import PipelineGraph

/// The framework's error: a seed-000 code, a message for people, where it arose (its ``Domain``), the
/// error underneath it (a libav*, curl or POSIX failure, kept as ``cause``), the graph node that
/// reported it, and, when the failure makes a stretch of a recording unusable, the gap reason it maps to.
///
/// Two errors are equal when their code, message, gap reason, domain and node are: the cause is kept for
/// people (``detailedDescription``, the logs), not compared.
public struct TiError: Error, Sendable, CustomStringConvertible, Equatable {
  /// The seed's error code.
  public var code: TiErrorCode
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

  /// Where a failure arose: which part of the system, whatever the seed code it is reported with.
  public enum Domain: String, Sendable, Hashable, CaseIterable {
    /// A caller's request or argument (a range, a path, a flag).
    case argument
    /// The SDK's lifecycle and state rules (initialize, bindings, tasks).
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

    /// The domain a seed code usually comes from (when the failure does not say).
    public init(of code: TiErrorCode) {
      switch code {
      case .invalidArgument, .rangeTooLarge: self = .argument
      case .notInitialized, .alreadyInitialized, .inUse, .notStarted, .notBound, .notConfigured, .noFrame,
        .channelMismatch:
        self = .lifecycle
      case .tokenExpired, .permissionDenied, .cloudStorageUnavailable, .recordingNotFound: self = .cloud
      case .networkUnavailable, .endpointDnsResolutionFailed, .recordingDownloadFailed: self = .network
      case .workDirectoryUnavailable, .fileStatusUnreadable, .fileWriteFailed: self = .storage
      case .unsupportedFormat, .recordingUnreadable, .noRecordableMedia: self = .media
      default: self = .engine
      }
    }
  }

  /// Creates an error; its domain follows from `code` unless given.
  public init(
    _ code: TiErrorCode, _ message: String, gapReason: GapReason? = nil, domain: Domain? = nil,
    cause: (any Error)? = nil
  ) {
    self.code = code
    self.message = message
    self.gapReason = gapReason
    self.domain = domain ?? Domain(of: code)
    self.cause = cause
  }

  /// `error` as a ``TiError``: itself; the one a `NodeFailure` carries, noting the node; or `ioFailed`
  /// with its text for any other error, which is kept as the cause.
  public init(_ error: any Error) {
    switch error {
    case let error as TiError: self = error
    case let failure as NodeFailure:
      self.init(failure.error)
      if node == nil { node = failure.nodeName }
    default: self.init(.ioFailed, String(describing: error), domain: .engine, cause: error)
    }
  }

  /// An error that makes a stretch of media unusable: the code follows from the reason.
  public static func gap(_ reason: GapReason, _ message: String, cause: (any Error)? = nil) -> TiError {
    let code: TiErrorCode =
      switch reason {
      case .notFound: .recordingNotFound
      case .downloadFailed: .recordingDownloadFailed
      case .integrityFailed, .mediaUnreadable, .decryptionFailed, .noKeyFrame: .recordingUnreadable
      case .unsupportedMedia: .unsupportedFormat
      case .trackUnavailable, .noRecording: .noRecordableMedia
      case .unknown: .ioFailed
      }
    return TiError(code, message, gapReason: reason, cause: cause)
  }

  /// The causes under this error, outermost first (a cause that is itself a ``TiError`` goes on).
  public var causes: [any Error] {
    var chain: [any Error] = []
    var next = cause
    while let current = next, chain.count < 16 {
      chain.append(current)
      next = (current as? TiError)?.cause
    }
    return chain
  }

  /// `error: name (code): message`, the command line's error line without its prefix.
  public var description: String {
    if let gapReason { return "\(code): \(message) [\(gapReason.rawValue)]" }
    return "\(code): \(message)"
  }

  /// ``description`` with the domain, the node and every cause, for logs.
  public var detailedDescription: String {
    var text = "\(description) {\(domain.rawValue)"
    if let node { text += ", in \(node)" }
    text += "}"
    for cause in causes { text += "; caused by \(String(describing: cause))" }
    return text
  }

  /// Equal codes, messages, gap reasons, domains and nodes (causes are not compared).
  public static func == (lhs: TiError, rhs: TiError) -> Bool {
    lhs.code == rhs.code && lhs.message == rhs.message && lhs.gapReason == rhs.gapReason && lhs.domain == rhs.domain
      && lhs.node == rhs.node
  }
}

/// A failure a C library reported with a status code (libav*'s `AVERROR`, a POSIX `errno`, curl's
/// `CURLcode`): the cause under a ``TiError``.
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
