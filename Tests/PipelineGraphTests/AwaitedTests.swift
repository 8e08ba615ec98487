import Dispatch
import PipelineGraph
import PipelineTestKit
import Testing

@Suite("Awaited")
struct AwaitedTests {
  @Test("a value handed over from another thread is awaited and waited for; the first one wins")
  func firstValueWins() async {
    let awaited = Awaited<Int>()
    #expect(!awaited.isFulfilled)
    let handOver: @Sendable (Int) -> Void = awaited.fulfill
    DispatchQueue.global().async {
      handOver(7)
      handOver(8)
    }
    #expect(await awaited.value == 7)
    #expect(awaited.wait() == 7)
    #expect(awaited.isFulfilled)
    #expect(await awaited.value == 7)
  }

  @Test("several awaiting tasks all get the value")
  func manyWaiters() async {
    let awaited = Awaited<String>()
    async let first = awaited.value
    async let second = awaited.value
    awaited.fulfill("done")
    #expect(await [first, second] == ["done", "done"])
  }
}
