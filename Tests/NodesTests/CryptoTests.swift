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

  @Test("the FFmpeg and curl libraries are linked and report their versions")
  func libraryVersions() {
    #expect(LibraryVersions.summary.hasPrefix("libavcodec 59."))
    #expect(LibraryVersions.summary.contains("libcurl/"))
  }
}
