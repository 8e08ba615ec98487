import Foundation

/// Sends a log package to an endpoint's log-upload route and returns the log id the service gave it.
///
/// - `http(s)://`: `POST {endpoint}/v1/logs` with the package as the body (`application/gzip`), the
///   app id in `X-Ti-App-Id` and a device token as `Authorization: Bearer` (the route refuses uploads
///   without one: docs/security.md); the answer is `201 {"log_id": "…"}`. Transient failures are retried as
///   for a listing (each attempt sends the whole file again).
/// - `file://` (a local library): the package is copied to the library's `uploads/<log id>.tar.gz`.
///
/// Failures are the kinds a listing's are: an unresolved host `hostUnresolved`, an unreachable one
/// `networkUnavailable`, refused, exhausted or a bad answer `serviceUnavailable`; a local copy that fails
/// `ioFailed`.
public enum LogUpload {
  /// The longest log id accepted from a service (a longer one is not usable).
  public static let maximumLogIdLength = 128

  /// Sends `package` (a `.tar.gz`) to `endpoint` for `appId`, showing `token`; `completion` runs once,
  /// never inside the call: on the network thread for an `http(s)://` upload, else on a Dispatch global
  /// queue.
  public static func send(
    _ package: URL, to endpoint: String, appId: String, token: String? = nil,
    completion: @escaping @Sendable (Result<String, MediaError>) -> Void
  ) {
    guard let url = URL(string: endpoint), let scheme = url.scheme?.lowercased() else {
      let failure = MediaError(.invalidArgument, "the endpoint '\(endpoint)' is not a URL")
      DispatchQueue.global().async { completion(.failure(failure)) }
      return
    }
    if scheme == "file" {
      DispatchQueue.global().async {
        completion(
          Result { try libraryDirectory(of: url) }.mapError { MediaError($0) }.flatMap {
            storeLocally(package, library: $0)
          })
      }
      return
    }
    guard !appId.contains(where: { $0.isNewline }), !(token ?? "").contains(where: { $0.isNewline }) else {
      DispatchQueue.global().async {
        completion(.failure(MediaError(.invalidArgument, "the app id or the token contains a line break")))
      }
      return
    }
    let base = endpoint.hasSuffix("/") ? endpoint : endpoint + "/"
    var headers = ["Content-Type: application/gzip", "X-Ti-App-Id: \(appId)"]
    if let token, !token.isEmpty { headers.append("Authorization: Bearer \(token)") }
    var request = HTTPExchange.Request(url: base + "v1/logs", headers: headers)
    request.upload = package
    let exchange = HTTPExchange(request) { outcome in completion(answer(outcome, endpoint: endpoint)) }
    HTTPTransport.shared.submit(exchange)
  }

  /// Whether `logId` is one to hand to support: printable ASCII letters, digits, `-`, `_`, `.`.
  public static func isUsable(_ logId: String) -> Bool {
    !logId.isEmpty && logId.count <= maximumLogIdLength
      && logId.unicodeScalars.allSatisfy {
        $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0))
      }
  }

  static func answer(_ outcome: HTTPOutcome, endpoint: String) -> Result<String, MediaError> {
    switch outcome {
    case .success(_, let body, _):
      let json = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
      guard let logId = json?["log_id"] as? String, isUsable(logId) else {
        return .failure(MediaError(.serviceUnavailable, "the log upload's answer has no usable log_id"))
      }
      return .success(logId)
    case .refused(let status, let error, let message):
      return .failure(
        MediaError(
          .serviceUnavailable,
          "the log upload was refused: HTTP \(status) \(error ?? "")\(message.map { ": \($0)" } ?? "")"))
    case .unresolvedHost, .unreachable, .exhausted, .oversized, .cancelled:
      return .failure(outcome.transferError("the log upload", endpoint: endpoint)!)
    }
  }

  private static func storeLocally(_ package: URL, library: URL) -> Result<String, MediaError> {
    let folder = library.appendingPathComponent("uploads", isDirectory: true)
    let logId = "local-" + UUID().uuidString.lowercased()
    let destination = folder.appendingPathComponent("\(logId).tar.gz")
    let temporary = folder.appendingPathComponent(".incoming-\(logId)")
    do {
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      try FileManager.default.copyItem(at: package, to: temporary)
      guard rename(temporary.path, destination.path) == 0 else { throw MediaError(.ioFailed, "cannot rename") }
      return .success(logId)
    } catch {
      try? FileManager.default.removeItem(at: temporary)
      return .failure(MediaError(.ioFailed, "cannot store the log upload in \(folder.path): \(error)"))
    }
  }
}
