import Dispatch
import Foundation
import Nodes
import PipelineGraph
import TiCloudStorage

/// `tipipe list` and `tipipe days` (`spec/cli.md`): the listing queries as JSON.
enum ListCommand {
  static let summary = "the merged recording ranges of [start, end) (listRecordings)"
  static let usage = """
    usage: tipipe list --endpoint E --token K --start T --end T

    Prints {"code":0,"recordings":[{"start_ms":…,"end_ms":…}]}: the recording ranges inside
    [start, end) (at most 10 days), clipped, ascending, overlapping and abutting ones merged. On
    failure prints {"code":N,"recordings":[]} and the error line on stderr, exit 1. E is http(s)://…
    (the cloud API) or file:///DIR (a local library, any non-empty token). Runs through the SDK facade
    (TiCloudStorage.listRecordings) with its work root in --cache DIR (default ~/.cache/tirtc).
    """

  static func run(_ arguments: [String]) throws -> Int32 {
    // Parsed in a closure of its own: nothing of the parser stays in this frame, which the main thread
    // keeps while it runs the main queue (LeakSanitizer would report it).
    let (endpoint, token, start, end, cache) = try { () throws -> (String, String, Int64, Int64, URL) in
      let flags = try FlagParser(
        arguments,
        known: [
          "--endpoint": .value, "--token": .value, "--start": .value, "--end": .value, "--quiet": .boolean,
          "--cache": .value,
        ])
      let endpoint = try flags.required("--endpoint")
      _ = try recordingService(endpoint: endpoint)  // a malformed endpoint is a usage error (exit 2)
      let token = try flags.required("--token")
      guard let start = try flags.time("--start") else { throw UsageError(message: "--start is required") }
      guard let end = try flags.time("--end") else { throw UsageError(message: "--end is required") }
      let cache = try FacadeSession.cacheDirectory(flags)
      return (endpoint, token, start, end, cache)
    }()
    FacadeSession.run(
      endpoint: endpoint, token: token, cache: cache,
      failureLines: { ["{\"code\":\($0.code.rawValue),\"recordings\":[]}"] }
    ) { storage in
      // The facade's listRecordings, as an application calls it.
      FacadeSession.stopOnSignal()
      let result = FacadeSession.waitOnMain { done in
        storage.listRecordings(startTimeMs: start, endTimeMs: end, completion: done)
      }
      guard result.code == TiCloudStorageErrorCode.ok else {
        StandardOutput.line("{\"code\":\(result.code),\"recordings\":[]}")
        reportError(FacadeSession.error(result.code, result.message))
        return 1
      }
      let items = result.recordings.map { "{\"start_ms\":\($0.startTimeMs),\"end_ms\":\($0.endTimeMs)}" }
      StandardOutput.line("{\"code\":0,\"recordings\":[\(items.joined(separator: ","))]}")
      return 0
    }
  }
}

/// `tipipe days`.
enum DaysCommand {
  static let summary = "which days of a date range have recordings (listRecordingDays)"
  static let usage = """
    usage: tipipe days --endpoint E --token K --start-date YYYY-MM-DD --end-date YYYY-MM-DD
                       [--time-zone Asia/Shanghai]

    Prints {"code":0,"days":[{"date":"2026-11-30","has_recording":true}]}: every day from start to end
    inclusive (at most 31), each from local midnight to local midnight in the IANA time zone. On failure
    prints {"code":N,"days":[]} and the error line on stderr, exit 1 (rangeTooLarge (6117) beyond 31 days,
    invalidArgument (6000) for a malformed date or an unknown zone). Runs through the SDK facade
    (TiCloudStorage.listRecordingDays) with its work root in --cache DIR (default ~/.cache/tirtc).
    """

  static func run(_ arguments: [String]) throws -> Int32 {
    // Parsed in a closure of its own: nothing of the parser stays in this frame, which the main thread
    // keeps while it runs the main queue (LeakSanitizer would report it).
    let (endpoint, token, startDate, endDate, zone, cache) = try {
      () throws -> (String, String, String, String, String, URL) in
      let flags = try FlagParser(
        arguments,
        known: [
          "--endpoint": .value, "--token": .value, "--start-date": .value, "--end-date": .value, "--time-zone": .value,
          "--quiet": .boolean, "--cache": .value,
        ])
      let endpoint = try flags.required("--endpoint")
      _ = try recordingService(endpoint: endpoint)  // a malformed endpoint is a usage error (exit 2)
      let token = try flags.required("--token")
      let startDate = try flags.required("--start-date")
      let endDate = try flags.required("--end-date")
      let zone = flags.string("--time-zone") ?? "Asia/Shanghai"
      let cache = try FacadeSession.cacheDirectory(flags)
      return (endpoint, token, startDate, endDate, zone, cache)
    }()
    FacadeSession.run(
      endpoint: endpoint, token: token, cache: cache, failureLines: { ["{\"code\":\($0.code.rawValue),\"days\":[]}"] }
    ) { storage in
      // The facade's listRecordingDays, as an application calls it.
      FacadeSession.stopOnSignal()
      let result = FacadeSession.waitOnMain { done in
        storage.listRecordingDays(startDate: startDate, endDate: endDate, timeZoneId: zone, completion: done)
      }
      guard result.code == TiCloudStorageErrorCode.ok else {
        StandardOutput.line("{\"code\":\(result.code),\"days\":[]}")
        reportError(FacadeSession.error(result.code, result.message))
        return 1
      }
      let items = result.days.map { "{\"date\":\"\($0.date)\",\"has_recording\":\($0.hasRecording)}" }
      StandardOutput.line("{\"code\":0,\"days\":[\(items.joined(separator: ","))]}")
      return 0
    }
  }
}

/// Runs a completion-form query and waits for its one result (the command line has nothing else to do).
func waitFor<Value: Sendable>(
  _ start: (@escaping @Sendable (Result<Value, TiError>) -> Void) -> ServiceRequest
) -> Result<Value, TiError> {
  let done = DispatchSemaphore(value: 0)
  let box = ResultBox<Value>()
  let request = start { result in
    box.value = result
    done.signal()
  }
  Interruption.shared.onSignal { _ in request.cancel() }
  done.wait()
  Interruption.shared.removeHandler()
  return box.value!
}

/// The result handed from the completion's thread to the waiting one (the semaphore orders the two).
private final class ResultBox<Value: Sendable>: @unchecked Sendable {
  var value: Result<Value, TiError>?
}

/// The error line of `spec/cli.md`.
func reportError(_ error: TiError) { StandardError.report(error) }
