import Dispatch
import PipelineGraph
import Testing

@Suite("Published values")
struct PublishedTests {
  @Test("a reader sees what was published, at its next look")
  func readerFollowsThePublisher() {
    let published = Published([1])
    var reader = published.reader()
    #expect(reader.current == [1])
    published.publish([1, 2])
    #expect(reader.current == [1, 2])
    #expect(reader.current == [1, 2])
    published.publish([])
    #expect(reader.current == [])
    #expect(published.value == [])
  }

  @Test("a reader on another thread never sees a torn value and ends with the last one")
  func concurrentPublishing() {
    let published = Published([0, 0])
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      for value in 1...10_000 { published.publish([value, value]) }
      done.signal()
    }
    var reader = published.reader()
    var consistent = true
    var previous = 0
    var monotonic = true
    while done.wait(timeout: .now()) == .timedOut {
      let value = reader.current
      consistent = consistent && value[0] == value[1]
      monotonic = monotonic && value[0] >= previous
      previous = value[0]
    }
    #expect(consistent && monotonic)
    #expect(reader.current == [10_000, 10_000])
  }
}
