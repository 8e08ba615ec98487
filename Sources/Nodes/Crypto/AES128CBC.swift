internal import CCrypto
import Foundation
import PipelineGraph

/// AES-128-CBC with PKCS#7 padding through OpenSSL's EVP API (AES-NI where the CPU has it).
///
/// Owns one `EVP_CIPHER_CTX`, freed in `deinit`; reuse one instance for many objects.
/// Not thread-safe: one owner (a node) uses it, one call at a time. No lifecycle: any number of calls.
public final class AES128CBC {
  private let context: OpaquePointer

  /// Allocates the cipher context.
  /// - Throws: `MediaError(.resourceExhausted)` when OpenSSL cannot allocate it.
  public init() throws {
    _ = CryptoLibrary.initialized
    guard let context = EVP_CIPHER_CTX_new() else {
      throw MediaError(.resourceExhausted, "OpenSSL could not allocate a cipher context")
    }
    self.context = context
  }

  deinit { EVP_CIPHER_CTX_free(context) }

  /// Decrypts `ciphertext` with `key` and `iv` (16 bytes each) and removes the padding.
  /// - Throws: `decryptionFailed` for a wrong key size, a ciphertext that is not whole blocks, or bad
  ///   padding (what a wrong key produces, with probability 255/256).
  public func decrypt(_ ciphertext: Data, key: [UInt8], iv: [UInt8]) throws -> Data {
    var text = ciphertext
    let length = try decrypt(inPlace: &text, from: text.startIndex, key: key, iv: iv)
    return text.prefix(length)
  }

  /// Decrypts the bytes of `data` from index `start` on in place with `key` and `iv` (16 bytes each);
  /// returns the plaintext's length (the padding removed; what follows it in `data` is left over).
  /// In place when `data` holds the only reference to its bytes (a shared buffer is copied first).
  /// - Precondition: `start` lies within `data`'s indices (or at its end).
  /// - Throws: as ``decrypt(_:key:iv:)``.
  public func decrypt(inPlace data: inout Data, from start: Data.Index, key: [UInt8], iv: [UInt8]) throws -> Int {
    precondition(data.startIndex <= start && start <= data.endIndex, "the ciphertext starts outside the data")
    let count = data.endIndex - start
    try begin(count: count, key: key, iv: iv, encrypt: false)
    let offset = start - data.startIndex
    // Whole blocks, without OpenSSL's padding: it decrypts in place (input and output the same pointer,
    // the context fresh) and writes exactly what it reads, and the padding is checked here.
    let length = data.withUnsafeMutableBytes { bytes -> Int? in
      let text = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + offset
      var written: Int32 = 0
      guard EVP_CipherUpdate(context, text, &written, text, Int32(count)) == 1, Int(written) == count else {
        return nil
      }
      // PKCS#7: the last byte says how many bytes of padding there are (1 to 16), each of that value.
      let padding = Int(text[count - 1])
      guard (1...16).contains(padding), (count - padding..<count).allSatisfy({ Int(text[$0]) == padding }) else {
        return nil
      }
      return count - padding
    }
    guard let length else { throw MediaError.gap(.decryptionFailed, "bad padding after decryption (wrong key?)") }
    return length
  }

  /// Checks the key, the IV and (decrypting) that `count` bytes are whole blocks, and sets the context up
  /// (with OpenSSL's padding to encrypt; decryption checks the padding itself, in place).
  private func begin(count: Int, key: [UInt8], iv: [UInt8], encrypt: Bool) throws {
    guard key.count == 16, iv.count == 16 else {
      throw MediaError.gap(.decryptionFailed, "AES-128 needs a 16-byte key and IV (got \(key.count) and \(iv.count))")
    }
    if !encrypt && (count <= 0 || count % 16 != 0) {
      throw MediaError.gap(.decryptionFailed, "ciphertext of \(max(count, 0)) bytes is not a whole number of blocks")
    }
    // OpenSSL counts in Int32 (and encrypting adds a block of padding).
    guard count <= Int(Int32.max) - 16 else {
      throw MediaError.gap(.decryptionFailed, "\(count) bytes are more than one call of OpenSSL takes")
    }
    guard EVP_CipherInit_ex(context, EVP_aes_128_cbc(), nil, key, iv, encrypt ? 1 : 0) == 1,
      EVP_CIPHER_CTX_set_padding(context, encrypt ? 1 : 0) == 1
    else {
      throw MediaError.gap(.decryptionFailed, "OpenSSL refused the key")
    }
  }

  /// Encrypts `plaintext` with `key` and `iv` (16 bytes each), adding PKCS#7 padding.
  public func encrypt(_ plaintext: Data, key: [UInt8], iv: [UInt8]) throws -> Data {
    try begin(count: plaintext.count, key: key, iv: iv, encrypt: true)
    // The output goes into a pooled buffer: objects are megabytes, and fresh memory for each would
    // cost a zero-filled page fault per 4 KB (and let glibc's heap grow with the recording's length).
    var failed = false
    let output = BufferPool.shared.data(capacity: plaintext.count + 16) { buffer -> Int in
      let out = buffer.assumingMemoryBound(to: UInt8.self)
      var written: Int32 = 0
      var finalWritten: Int32 = 0
      let updated = plaintext.withUnsafeBytes { inBytes -> Int32 in
        EVP_CipherUpdate(
          context, out, &written, inBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(inBytes.count))
      }
      guard updated == 1, EVP_CipherFinal_ex(context, out + Int(written), &finalWritten) == 1 else {
        failed = true
        return 0
      }
      return Int(written + finalWritten)
    }
    guard !failed else { throw MediaError.gap(.decryptionFailed, "encryption failed") }
    return output
  }
}
