import Nodes
import PipelineGraph
import Testing

@Suite("The engine's errors")
struct MediaErrorTests {
  @Test("a gap reason gives its kind; any error reads as a MediaError; the log line names node and cause")
  func kindsAndConversions() {
    #expect(MediaError.gap(.integrityFailed, "x").kind == .unreadableMedia)
    #expect(MediaError.gap(.integrityFailed, "x").gapReason == .integrityFailed)
    #expect(MediaError.gap(.notFound, "x").kind == .notFound)
    #expect(MediaError.gap(.trackUnavailable, "x").kind == .noMedia)
    #expect(MediaError(MediaError(.credentialsExpired, "late")).kind == .credentialsExpired)
    let other = MediaError(GraphError.empty)
    #expect(other.kind == .ioFailed && other.domain == .engine && other.cause is GraphError)
    var placed = MediaError(.unreadableMedia, "bad slice", cause: LibraryFailure.posix(5))
    placed.node = "decoder"
    #expect(
      placed.detailedDescription
        == "unreadableMedia: bad slice {media, in decoder}; caused by libc 5: Input/output error")
  }

  @Test("every kind has a domain, and every gap reason a kind")
  func everyKindIsPlaced() {
    let domains = Set(MediaError.Kind.allCases.map(MediaError.Domain.init(of:)))
    #expect(domains.isSubset(of: Set(MediaError.Domain.allCases)) && domains.count >= 5)
    #expect(MediaError.Domain(of: .hostUnresolved) == .network)
    #expect(MediaError.Domain(of: .writeFailed) == .storage)
    for reason in GapReason.allCases { #expect(MediaError.gap(reason, "r").gapReason == reason) }
  }
}
