import Nodes
import PipelineGraph
import Testing

@testable import TiCloudStorage

/// The one place where the engine's failures get seed-000 codes: `TiError(_:)` and `TiErrorCode(_:)`.
@Suite struct ErrorMappingTests {
  @Test("codes have stable names; any error reads as a TiError")
  func codeNames() {
    #expect(TiErrorCode.tokenExpired.description == "tokenExpired (6014)")
    #expect(TiErrorCode(rawValue: 6044).name == "workDirectoryUnavailable")
    #expect(TiErrorCode(rawValue: 7777).name == "code7777")
    #expect(TiError(TiError(.tokenExpired, "late")).code == .tokenExpired)
    #expect(TiError(GraphError.empty).code == .ioFailed)
  }

  @Test("every engine kind maps to a distinct code the seed names, the cloud's as spec/cloud-api.md says")
  func everyKindHasItsCode() {
    let codes = MediaError.Kind.allCases.map(TiErrorCode.init)
    #expect(Set(codes).count == MediaError.Kind.allCases.count)
    #expect(codes.allSatisfy { !$0.name.hasPrefix("code") && $0 != .ok })
    // spec/cloud-api.md's table, by the kind the cloud client reports each answer as.
    let table: [(MediaError.Kind, Int32)] = [
      (.invalidArgument, 6000), (.credentialsExpired, 6014), (.accessDenied, 6024), (.serviceUnavailable, 6123),
      (.notFound, 6134), (.downloadFailed, 6135), (.unreadableMedia, 6122), (.networkUnavailable, 6136),
      (.hostUnresolved, 6137),
    ]
    for (kind, code) in table { #expect(TiErrorCode(kind).rawValue == code, "\(kind)") }
  }

  @Test("an engine failure keeps its message, gap reason, domain, node and cause under its seed code")
  func engineFailureKeepsItsStory() {
    var failure = MediaError.gap(.integrityFailed, "object 3 fails its hash", cause: LibraryFailure.posix(5))
    failure.node = "verifier"
    let error = TiError(failure)
    #expect(error.code == .recordingUnreadable && error.message == "object 3 fails its hash")
    #expect(error.gapReason == .integrityFailed && error.domain == .media && error.node == "verifier")
    #expect(error.description == "recordingUnreadable (6122): object 3 fails its hash [integrityFailed]")
    #expect(error.causes.map { String(describing: $0) } == ["libc 5: Input/output error"])
    #expect(TiError(MediaError(.writeFailed, "disk full")).domain == .storage)
  }
}
