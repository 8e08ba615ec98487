import Foundation
import MediaTestSupport
import Testing

@testable import CloudServer

/// The server's cache of what it made on request (preview sheets, stream segments): kept values are
/// served again without making them, at most `makers` are made at once and never one value twice at
/// once (both refused with the cache's `busy` answer), and the oldest go first past the count or the
/// bytes.
@Suite struct RecentlyMadeTests {
  private typealias NotServed = RequestHandler.NotServed
  private let busy = NotServed(answer: .error(503, "unavailable", "busy"))

  private func status(_ result: Result<String, NotServed>) -> Int? {
    guard case .failure(let refusal) = result, case .error(let status, _, _) = refusal.answer else { return nil }
    return status
  }

  @Test func aValueBeingMadeIsNotMadeAgainAndTheMakersAreBounded() throws {
    let cache = RecentlyMade<Int, String>(capacity: 4, makers: 2, busy: busy)
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      _ = cache.value(for: 1) { () throws(NotServed) in
        started.signal()
        // Bounded: a test that failed before releasing it does not leave the thread blocked for good.
        _ = release.wait(timeout: .now() + Double(testDeadline.components.seconds))
        return "one"
      }
      finished.signal()
    }
    try started.wait(for: "the first value to start being made")
    // While 1 is being made (one maker of two busy): 1 again is refused at once, 2 is made.
    #expect(status(cache.value(for: 1) { () throws(NotServed) in "again" }) == 503)
    #expect(try cache.value(for: 2) { () throws(NotServed) in "two" }.get() == "two")
    // Past the makers: a value made while both are busy is refused.
    let single = RecentlyMade<Int, String>(capacity: 4, makers: 1, busy: busy)
    let began = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
      _ = single.value(for: 1) { () throws(NotServed) in
        began.signal()
        _ = go.wait(timeout: .now() + Double(testDeadline.components.seconds))
        return "one"
      }
      done.signal()
    }
    try began.wait(for: "the single maker to start")
    #expect(status(single.value(for: 2) { () throws(NotServed) in "two" }) == 503)
    go.signal()
    try done.wait(for: "the single maker to end")
    release.signal()
    try finished.wait(for: "the first value to be made")
    // Made once, then served as kept.
    var made = 0
    let kept = cache.value(for: 1) { () throws(NotServed) in
      made += 1
      return "again"
    }
    #expect(try kept.get() == "one" && made == 0)
    #expect(try cache.value(for: 2) { () throws(NotServed) in "remade" }.get() == "two")
  }

  @Test func theOldestGoFirstPastTheCountOrTheBytesAndAFailureIsNotKept() throws {
    let counted = RecentlyMade<Int, String>(capacity: 2, makers: 2, busy: busy)
    for key in 1...3 { _ = counted.value(for: key) { () throws(NotServed) in "v\(key)" } }
    var remade: [Int] = []
    for key in [3, 2, 1] {
      _ = counted.value(for: key) { () throws(NotServed) in
        remade.append(key)
        return "new"
      }
    }
    // 1 went when 3 came: 3 and 2 are served as kept, 1 is made again.
    #expect(remade == [1])

    let sized = RecentlyMade<Int, String>(capacity: 8, makers: 1, byteLimit: 10, bytes: { $0.utf8.count }, busy: busy)
    _ = sized.value(for: 1) { () throws(NotServed) in String(repeating: "a", count: 6) }
    _ = sized.value(for: 2) { () throws(NotServed) in String(repeating: "b", count: 6) }
    var again = 0
    _ = sized.value(for: 1) { () throws(NotServed) in
      again += 1
      return "a"
    }
    var kept2 = 0
    _ = sized.value(for: 2) { () throws(NotServed) in
      kept2 += 1
      return "b"
    }
    #expect(again == 1 && kept2 == 0, "12 bytes past a limit of 10: the oldest went, the newer stayed")
    // The newest is kept even alone past the limit.
    _ = sized.value(for: 3) { () throws(NotServed) in String(repeating: "c", count: 20) }
    var newest = 0
    _ = sized.value(for: 3) { () throws(NotServed) in
      newest += 1
      return "c"
    }
    #expect(newest == 0)

    let failing = RecentlyMade<Int, String>(capacity: 2, makers: 1, busy: busy)
    let refused = failing.value(for: 1) { () throws(NotServed) in throw NotServed(answer: .error(500, "internal", "x"))
    }
    #expect(status(refused) == 500)
    #expect(try failing.value(for: 1) { () throws(NotServed) in "made" }.get() == "made")
  }
}
