import Dispatch
import Foundation
import Nodes

/// A raw audio/video diagnostic capture of a Replay (the seed's raw dump, rules.md X): what the Replay
/// reads of the chosen channels, as it arrived, into a folder of the SDK cache (`dumps/rawdump-…`).
///
/// Created by ``TiCloudStorageReplay/startRawDump(options:)``. One dump runs at a time in the process; it
/// captures across plays and seeks while media flows (nothing while nothing is read, X7) and ends by
/// itself after 5 minutes (``TiCloudStorage/maximumRawDumpDurationMs``), at 1 GiB
/// (``TiCloudStorage/maximumRawDumpBytes``), or when its Replay is disposed. Its files stay in the
/// cache; the next ``TiRtcLogging/upload(completion:)`` after it ended includes them, once (X15, X16).
public final class TiRawDump: @unchecked Sendable {
  private let writer: RawDumpWriter

  init(writer: RawDumpWriter) {
    self.writer = writer
  }

  /// The dump's folder in the SDK cache.
  public var directoryPath: String { writer.directory.path }

  /// Ends the capture and returns its final result (X4); every call gets the same one, also after the
  /// dump ended by itself. Resumes in the caller's context.
  public func stop() async -> TiRawDumpStopResult {
    await withCheckedContinuation { continuation in
      writer.finish(.stopped) { continuation.resume(returning: TiRawDumpStopResult($0)) }
    }
  }

  /// ``stop()`` with a completion called once on the main queue (X5).
  public func stop(completion: @escaping @MainActor @Sendable (TiRawDumpStopResult) -> Void) {
    writer.finish(.stopped) { summary in
      let result = TiRawDumpStopResult(summary)
      DispatchQueue.main.async { MainActor.assumeIsolated { completion(result) } }
    }
  }
}
