internal import CCrypto
import Foundation

/// SHA-256 over bytes that arrive in pieces (a download): OpenSSL's EVP digest context, owned by this
/// object and freed in `deinit`.
final class SHA256Stream {
  private let context: OpaquePointer

  init() {
    _ = CryptoLibrary.initialized
    // Allocation failure and a missing SHA-256 are not recoverable (see SHA256Digest).
    guard let context = EVP_MD_CTX_new() else { fatalError("OpenSSL cannot allocate a digest context") }
    self.context = context
    reset()
  }

  deinit { EVP_MD_CTX_free(context) }

  /// Starts over (the bytes so far are forgotten).
  func reset() {
    precondition(EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1, "OpenSSL SHA-256 is unavailable")
  }

  /// Adds the next bytes.
  func update(_ bytes: UnsafeRawBufferPointer) {
    guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
    precondition(EVP_DigestUpdate(context, base, bytes.count) == 1, "OpenSSL SHA-256 update failed")
  }

  /// The digest of everything added, in lowercase hex; the stream must be reset before more bytes.
  func finalHex() -> String {
    var digest = [UInt8](repeating: 0, count: 32)
    var length: UInt32 = 0
    precondition(EVP_DigestFinal_ex(context, &digest, &length) == 1 && length == 32, "OpenSSL SHA-256 final failed")
    return Hex.encode(digest)
  }
}
