import Foundation

/// The reference server's device token (`spec/cloud-api.md`, "Authentication"):
/// `v1.<device_id>.<expires_unix_seconds>.<hex(HMAC-SHA256(secret, "v1.<device_id>.<expires>"))>`.
///
/// The SDK treats tokens as opaque; only the server and `tipipe token` read or make them.
public struct CloudToken: Sendable, Hashable {
  /// The device the token grants access to.
  public var deviceId: String
  /// When it expires, in Unix seconds.
  public var expires: Int64

  /// Why a token string is refused.
  public enum Refusal: Error, Sendable, Equatable {
    /// Not a `v1` token, or its signature does not match.
    case invalid
    /// Well signed, but past its expiry.
    case expired
  }

  /// Creates a token description.
  public init(deviceId: String, expires: Int64) {
    self.deviceId = deviceId
    self.expires = expires
  }

  /// The signed token string.
  public func signed(secret: String) -> String {
    let body = "v1.\(deviceId).\(expires)"
    return "\(body).\(HMACSHA256.hex(body, key: secret))"
  }

  /// Reads and checks a token string at time `now` (Unix seconds).
  ///
  /// The device id may itself contain dots: the expiry and the signature are the last two fields.
  public static func verify(_ text: String, secret: String, now: Int64) throws(Refusal) -> CloudToken {
    guard text.hasPrefix("v1."), text.utf8.count <= 4096 else { throw .invalid }
    let fields = text.split(separator: ".", omittingEmptySubsequences: false)
    guard fields.count >= 4, let expires = Int64(fields[fields.count - 2]) else { throw .invalid }
    let signature = String(fields[fields.count - 1])
    let body = fields.dropLast().joined(separator: ".")
    guard HMACSHA256.matches(signature, HMACSHA256.hex(body, key: secret)) else { throw .invalid }
    let deviceId = fields.dropFirst().dropLast(2).joined(separator: ".")
    guard !deviceId.isEmpty else { throw .invalid }
    guard expires > now else { throw .expired }
    return CloudToken(deviceId: deviceId, expires: expires)
  }
}
