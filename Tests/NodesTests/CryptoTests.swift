import Foundation
import MediaTestSupport
import Nodes
import Testing

@Suite("Crypto and checksums through the C libraries")
struct CryptoTests {
  @Test("SHA-256 matches the FIPS 180-2 test vectors")
  func sha256Vectors() {
    #expect(
      SHA256Digest.hexHash(Data("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    #expect(SHA256Digest.hexHash(Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
  }

  @Test("CRC-32 matches zlib's check value")
  func crc32CheckValue() {
    let value = Data("123456789".utf8).withUnsafeBytes { CRC32.checksum($0) }
    #expect(value == 0xCBF4_3926)
  }

  @Test(
    "AES-128-CBC decrypts in place what it alone holds, a shared buffer after a copy, at any offset and length",
    arguments: [0, 1, 15, 16, 17, 1_000, 65_536])
  func decryptInPlace(length: Int) throws {
    let cipher = try AES128CBC()
    let key = (0..<16).map { UInt8($0 &* 7) }
    let iv = (0..<16).map { UInt8(255 - $0) }
    let plaintext = Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 5) })
    let header = Data(repeating: 0xEE, count: 64)
    let object = header + (try cipher.encrypt(plaintext, key: key, iv: iv))
    // Held alone: the same bytes are decrypted (no second buffer).
    var alone = Data(object)
    let before = alone.withUnsafeBytes { $0.baseAddress }
    let count = try cipher.decrypt(inPlace: &alone, from: alone.startIndex + 64, key: key, iv: iv)
    #expect(alone.withUnsafeBytes { $0.baseAddress } == before)
    #expect(count == length && alone[64..<64 + count] == plaintext && alone.prefix(64) == header)
    // Shared: the other holder keeps the ciphertext (compared with a copy of its own).
    let pristine = Data(object)
    let shared = object
    var mine = object
    #expect(try cipher.decrypt(inPlace: &mine, from: mine.startIndex + 64, key: key, iv: iv) == length)
    #expect(shared == pristine && mine[64..<64 + length] == plaintext)
    // A slice whose indices do not start at 0.
    var slice = (Data([1, 2, 3]) + object).dropFirst(3)
    let sliced = try cipher.decrypt(inPlace: &slice, from: slice.startIndex + 64, key: key, iv: iv)
    #expect(sliced == length && slice[slice.startIndex + 64..<slice.startIndex + 64 + sliced] == plaintext)
    // A wrong key fails on the padding (with probability 255/256: this key does) or the block count.
    var wrong = Data(object)
    #expect(throws: MediaError.self) {
      _ = try cipher.decrypt(inPlace: &wrong, from: wrong.startIndex + 64, key: iv, iv: iv)
    }
    var ragged = Data(object.dropLast())
    #expect(throws: MediaError.self) {
      _ = try cipher.decrypt(inPlace: &ragged, from: ragged.startIndex + 64, key: key, iv: iv)
    }
  }

  @Test("the FFmpeg and curl libraries are linked and report their versions")
  func libraryVersions() {
    #expect(LibraryVersions.summary.hasPrefix("libavcodec 59."))
    #expect(LibraryVersions.summary.contains("libcurl/"))
  }
}
