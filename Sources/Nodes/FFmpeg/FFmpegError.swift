internal import CFFmpeg
import PipelineGraph

/// Turns libav* return codes into typed errors, in one place.
enum FFmpeg {
  /// The text of an AVERROR code.
  static func message(for code: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 128)
    av_strerror(code, &buffer, buffer.count)
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// Returns `result` when it is not negative; otherwise throws `kind` with what failed and why.
  @discardableResult
  static func check(_ result: Int32, _ what: @autoclosure () -> String, kind: MediaError.Kind = .ioFailed) throws
    -> Int32
  {
    guard result < 0 else { return result }
    let cause = failure(result)
    throw MediaError(kind, "\(what()): \(cause.text) (\(result))", domain: .media, cause: cause)
  }

  /// An AVERROR as the cause under a ``MediaError``.
  static func failure(_ code: Int32) -> LibraryFailure {
    LibraryFailure(library: "libav", status: code, text: message(for: code))
  }

  static let again = cff_error_eagain()
  static let endOfFile = cff_error_eof()
  static let invalidData = cff_error_invalid_data()

  /// Whether `error` is libav's failure of `code`.
  static func failed(_ error: any Error, with code: Int32) -> Bool {
    ((error as? MediaError)?.cause as? LibraryFailure)?.status == code
  }
}
