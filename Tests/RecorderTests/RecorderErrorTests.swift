import Foundation
import Nodes
import Testing

@testable import TrackRecording

/// Where the engine's failures meet seed 003: `RecordingEngine.error(for:)`.
@Suite struct RecorderErrorTests {
  @Test("a failure a system call explained is the system's error; any other is writerFailed (-3)")
  func engineFailuresBecomeSeed003Errors() throws {
    let full = MediaError(.writeFailed, "writing a.mp4: no space", cause: LibraryFailure.posix(ENOSPC))
    let system = RecordingEngine.error(for: full) as NSError
    #expect(system.domain == NSPOSIXErrorDomain && system.code == Int(ENOSPC))
    #expect(system.localizedDescription == "writing a.mp4: no space")
    // The engine's failure stays under it, for whoever wants its kind.
    #expect(system.userInfo[NSUnderlyingErrorKey] as? MediaError == full)
    // A codec refusing a size says EINVAL through libav: the writer failed, not the system.
    let refused = MediaError(
      .unsupportedFormat, "opening the encoder: Invalid argument",
      cause: LibraryFailure(library: "libav", status: -EINVAL, text: "Invalid argument"))
    for failure in [refused, MediaError(.fellBehind, "behind")] {
      let error = RecordingEngine.error(for: failure) as NSError
      #expect(error.domain == "RecordingEngine" && error.code == RecordingEngine.writerFailed)
      #expect(error.localizedDescription == failure.message)
    }
  }
}
