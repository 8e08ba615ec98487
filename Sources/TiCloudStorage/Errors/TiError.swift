import Nodes
import PipelineGraph

/// The Ti Cloud Storage SDK's error: a seed-000 code, a message for people, where it arose (its
/// ``Domain``), the error underneath it (a libav*, curl or POSIX failure; an engine failure's own cause),
/// the graph node that reported it, and, when the failure makes a stretch of a recording unusable, the
/// gap reason it maps to.
///
/// This is where the engine's failures get their seed codes: ``init(_:)`` maps a `MediaError`'s kind with
/// `TiErrorCode.init(_:)` (spec/cloud-api.md's table for the cloud's kinds); the nodes below never name one.
///
/// Two errors are equal when their code, message, gap reason, domain and node are: the cause is kept for
/// people (``detailedDescription``, the logs), not compared.
public struct TiError: Error, Sendable, CustomStringConvertible, Equatable {
  /// Where a failure arose: the engine's domains.
  public typealias Domain = MediaError.Domain

  /// The seed's error code.
  public var code: TiErrorCode
  /// What happened, for logs and the command line.
  public var message: String
  /// The gap reason this failure stands for, when it concerns a stretch of media.
  public var gapReason: GapReason?
  /// Where the failure arose.
  public var domain: Domain
  /// The error underneath, when the engine, another library or the system reported it first.
  public var cause: (any Error)?
  /// The graph node that reported the failure (`NodeFailure.nodeName`), when a graph did.
  public var node: String?

  /// Creates an error; its domain follows from `code` unless given.
  public init(
    _ code: TiErrorCode, _ message: String, gapReason: GapReason? = nil, domain: Domain? = nil,
    cause: (any Error)? = nil
  ) {
    self.code = code
    self.message = message
    self.gapReason = gapReason
    self.domain = domain ?? code.domain
    self.cause = cause
  }

  /// `error` as a ``TiError``: itself; an engine failure (a `MediaError`, or one a `NodeFailure` carries)
  /// with the seed code of its kind, its message, gap reason, domain and node, and its cause; or `ioFailed`
  /// with the text of any other error, which is kept as the cause.
  public init(_ error: any Error) {
    switch error {
    case let error as TiError: self = error
    case let failure as NodeFailure:
      self.init(failure.error)
      if node == nil { node = failure.nodeName }
    case let error as MediaError:
      self.init(
        TiErrorCode(error.kind), error.message, gapReason: error.gapReason, domain: error.domain, cause: error.cause)
      node = error.node
    default: self.init(.ioFailed, String(describing: error), domain: .engine, cause: error)
    }
  }

  /// A facade call refused by its checks with `code`, an `Int32` as the SDK's methods return it (a
  /// binding missing, a task running, not initialized …): the seed reports such a refusal as the code alone.
  static func refused(_ code: Int32) -> TiError {
    let code = TiErrorCode(rawValue: code)
    return TiError(code, "refused: \(code.name)")
  }

  /// The causes under this error, outermost first (a cause that is itself a ``TiError`` or a `MediaError`
  /// goes on).
  public var causes: [any Error] {
    var chain: [any Error] = []
    var next = cause
    while let current = next, chain.count < 16 {
      chain.append(current)
      next = (current as? TiError)?.cause ?? (current as? MediaError)?.cause
    }
    return chain
  }

  /// `name (code): message`, the command line's error line without its prefix.
  public var description: String {
    if let gapReason { return "\(code): \(message) [\(gapReason.rawValue)]" }
    return "\(code): \(message)"
  }

  /// ``description`` with the domain, the node and every cause, for logs.
  public var detailedDescription: String {
    MediaError.detailed(description, domain: domain, node: node, causes: causes)
  }

  /// Equal codes, messages, gap reasons, domains and nodes (causes are not compared).
  public static func == (lhs: TiError, rhs: TiError) -> Bool {
    lhs.code == rhs.code && lhs.message == rhs.message && lhs.gapReason == rhs.gapReason && lhs.domain == rhs.domain
      && lhs.node == rhs.node
  }
}

extension TiErrorCode {
  /// The seed-000 code a failure of the engine's `kind` is reported with: the one place where an engine
  /// failure becomes a seed code (spec/cloud-api.md's table for the cloud's kinds).
  public init(_ kind: MediaError.Kind) {
    self =
      switch kind {
      case .invalidArgument: .invalidArgument
      case .limitExceeded: .rangeTooLarge
      case .resourceExhausted: .resourceExhausted
      case .writeFailed: .fileWriteFailed
      case .unsupportedFormat: .unsupportedFormat
      case .ioFailed: .ioFailed
      case .cancelled: .cancelled
      case .unreadableMedia: .recordingUnreadable
      case .noMedia: .noRecordableMedia
      case .fellBehind: .recordingOverrun
      case .serviceUnavailable: .cloudStorageUnavailable
      case .credentialsExpired: .tokenExpired
      case .accessDenied: .permissionDenied
      case .notFound: .recordingNotFound
      case .downloadFailed: .recordingDownloadFailed
      case .networkUnavailable: .networkUnavailable
      case .hostUnresolved: .endpointDnsResolutionFailed
      }
  }
}

extension TiErrorCode {
  /// The domain a failure with this code usually comes from (when the failure does not say).
  public var domain: TiError.Domain {
    switch self {
    case .invalidArgument, .rangeTooLarge: .argument
    case .notInitialized, .alreadyInitialized, .inUse, .notStarted, .notBound, .notConfigured, .noFrame,
      .channelMismatch:
      .lifecycle
    case .tokenExpired, .permissionDenied, .cloudStorageUnavailable, .recordingNotFound: .cloud
    case .networkUnavailable, .endpointDnsResolutionFailed, .recordingDownloadFailed: .network
    case .workDirectoryUnavailable, .fileStatusUnreadable, .fileWriteFailed: .storage
    case .unsupportedFormat, .recordingUnreadable, .noRecordableMedia: .media
    default: .engine
    }
  }
}
