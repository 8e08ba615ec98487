import Nodes
import PipelineGraph
import Testing

@Suite("Seed error codes")
struct ErrorCodeTests {
  @Test("codes have stable names; a gap reason gives its code; any error reads as a TiError")
  func errorCodeNames() {
    #expect(TiErrorCode.tokenExpired.description == "tokenExpired (6014)")
    #expect(TiErrorCode(rawValue: 6044).name == "workDirectoryUnavailable")
    #expect(TiErrorCode(rawValue: 7777).name == "code7777")
    #expect(TiError.gap(.integrityFailed, "x").code == .recordingUnreadable)
    #expect(TiError.gap(.notFound, "x").code == .recordingNotFound)
    #expect(TiError(TiError(.tokenExpired, "late")).code == .tokenExpired)
    #expect(TiError(GraphError.empty).code == .ioFailed)
  }
}
