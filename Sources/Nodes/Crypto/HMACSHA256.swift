internal import CCrypto
import Foundation

/// HMAC-SHA256 through OpenSSL: the signature of the reference server's tokens and presigned URLs.
public enum HMACSHA256 {
  /// The 32-byte MAC of `message` under `key`.
  public static func authenticate(_ message: String, key: String) -> [UInt8] {
    _ = CryptoLibrary.initialized
    var mac = [UInt8](repeating: 0, count: 32)
    var length: UInt32 = 0
    let keyBytes = Array(key.utf8)
    let messageBytes = Array(message.utf8)
    let result = keyBytes.withUnsafeBytes { keyBuffer in
      messageBytes.withUnsafeBytes { messageBuffer in
        mac.withUnsafeMutableBufferPointer { output in
          HMAC(
            EVP_sha256(), keyBuffer.baseAddress, Int32(keyBuffer.count),
            messageBuffer.bindMemory(to: UInt8.self).baseAddress,
            messageBuffer.count, output.baseAddress, &length)
        }
      }
    }
    // HMAC fails only when OpenSSL cannot allocate or lacks SHA-256, which no caller can handle.
    precondition(result != nil && length == 32, "OpenSSL HMAC-SHA256 is unavailable")
    return mac
  }

  /// The MAC in lowercase hexadecimal.
  public static func hex(_ message: String, key: String) -> String { Hex.encode(authenticate(message, key: key)) }

  /// Compares a hex MAC with the expected one in time independent of where they differ.
  public static func matches(_ candidate: String, _ expected: String) -> Bool {
    let a = Array(candidate.utf8)
    let b = Array(expected.utf8)
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for index in a.indices { difference |= a[index] ^ b[index] }
    return difference == 0
  }
}
