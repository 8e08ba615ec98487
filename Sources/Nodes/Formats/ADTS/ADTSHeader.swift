import Foundation

/// The fixed part of an ADTS header (ISO/IEC 13818-7), enough to check a record and build an
/// AudioSpecificConfig.
public struct ADTSHeader: Hashable, Sendable {
  /// The sampling-frequency table of ADTS/ASC.
  public static let sampleRates = [
    96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
  ]

  /// MPEG-4 audio object type (2 = AAC-LC).
  public var objectType: Int
  /// Index into ``sampleRates``.
  public var sampleRateIndex: Int
  /// Channel configuration (1 mono, 2 stereo).
  public var channelConfiguration: Int
  /// Length of the whole frame, header included.
  public var frameLength: Int
  /// Header length: 7, or 9 with a CRC.
  public var headerLength: Int

  /// The sample rate in Hz, if the index is valid.
  public var sampleRate: Int? { sampleRateIndex < Self.sampleRates.count ? Self.sampleRates[sampleRateIndex] : nil }

  /// Parses the header at the start of `bytes`; nil when it is not an ADTS header.
  public init?(_ bytes: Data) {
    guard bytes.count >= 7 else { return nil }
    // The six bytes read at once: `Data`'s subscript costs a representation switch a byte (every AAC
    // frame of an export is parsed here).
    var h: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0)
    bytes.withUnsafeBytes { raw in
      Swift.withUnsafeMutableBytes(of: &h) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[0..<6])) }
    }
    guard h.0 == 0xFF, h.1 & 0xF6 == 0xF0 else { return nil }  // sync word, layer 0
    let protectionAbsent = h.1 & 0x01 == 1
    objectType = Int(h.2 >> 6) + 1
    sampleRateIndex = Int((h.2 >> 2) & 0x0F)
    channelConfiguration = Int((h.2 & 0x01) << 2 | h.3 >> 6)
    frameLength = Int(h.3 & 0x03) << 11 | Int(h.4) << 3 | Int(h.5 >> 5)
    headerLength = protectionAbsent ? 7 : 9
  }

  /// A 7-byte header (no CRC) for an AAC-LC frame of `payloadLength` raw bytes.
  public static func make(sampleRate: Int, channels: Int, payloadLength: Int) -> Data? {
    guard let index = sampleRates.firstIndex(of: sampleRate), (1...7).contains(channels) else { return nil }
    let length = payloadLength + 7
    guard length < 1 << 13 else { return nil }
    let profile = 1  // AAC-LC (object type 2) minus one
    return Data([
      0xFF, 0xF1,
      UInt8(profile << 6 | index << 2 | channels >> 2),
      UInt8((channels & 3) << 6 | length >> 11),
      UInt8((length >> 3) & 0xFF),
      UInt8((length & 7) << 5 | 0x1F),
      0xFC,
    ])
  }

  /// The two-byte AudioSpecificConfig this header implies.
  public var audioSpecificConfig: Data {
    Data([
      UInt8(objectType << 3 | sampleRateIndex >> 1),
      UInt8((sampleRateIndex & 1) << 7 | channelConfiguration << 3),
    ])
  }
}
