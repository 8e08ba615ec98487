internal import CCrypto
import Foundation

/// SHA-256 through OpenSSL's EVP API (SHA-NI where the CPU has it): the integrity check of segment objects.
public enum SHA256Digest {
  /// The digest of `bytes`, as 32 bytes.
  public static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
    _ = CryptoLibrary.initialized
    var digest = [UInt8](repeating: 0, count: 32)
    var length: UInt32 = 0
    let status = digest.withUnsafeMutableBufferPointer { output in
      EVP_Digest(bytes.baseAddress, bytes.count, output.baseAddress, &length, EVP_sha256(), nil)
    }
    // EVP_Digest fails only on allocation failure or a missing algorithm, neither of which a caller
    // can handle; OpenSSL's default provider always has SHA-256.
    precondition(status == 1 && length == 32, "OpenSSL SHA-256 is unavailable")
    return digest
  }

  /// The digest of `bytes` in lowercase hexadecimal, as the index's `sha256` field holds it.
  public static func hexHash<Bytes: ContiguousBytes>(_ bytes: Bytes) -> String {
    bytes.withUnsafeBytes { hash($0) }.map { byte in
      let digits = Array("0123456789abcdef".utf8)
      return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
    }.joined()
  }
}
