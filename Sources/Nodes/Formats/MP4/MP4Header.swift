import Foundation

/// The start of a fragmented MP4 of H.264 and AAC: its `ftyp` and the empty `moov` that declares the
/// tracks, byte for byte what libavformat 5.1 writes with `movflags empty_moov+default_base_moof+negative_cts_offsets`
/// (but the `udta` naming the muxer).
///
/// Written here so that a stream copy of H.264 needs no FFmpeg library (loading them costs ~25 ms a
/// process, a tenth of a one-core 30-minute export's own work). The video track's timescale is 1 MHz
/// (microseconds, the muxer's choice for that time base), the sound's its sample rate. What is not plain
/// H.264 in Annex B with its SPS and PPS (H.265, a profile whose `avcC` libavformat fills from other
/// fields, an SPS that cannot be read) gets ``make(video:audio:)`` nil: libavformat writes those.
/// `MP4HeaderTests` compares the two writers' bytes.
enum MP4Header {
  /// The video track's timescale (ticks a second).
  static let videoTimescale = 1_000_000

  /// The header's bytes, or nil when libavformat should write it.
  static func make(video: TrackFormat?, audio: TrackFormat?) -> Data? {
    guard video != nil || audio != nil else { return nil }
    var tracks: [MP4Box] = []
    if let video {
      // libavformat refuses a picture wider or higher than 65,535: left to it, the export fails as before.
      guard video.codec == .h264, (0...0xFFFF).contains(video.width), (0...0xFFFF).contains(video.height),
        let entry = avc1(video)
      else { return nil }
      tracks.append(trak(id: 1, handler: "vide", timescale: videoTimescale, video: video, entry: entry))
    }
    if let audio {
      guard audio.codec == .aac, (1...Int(Int32.max)).contains(audio.sampleRate) else { return nil }
      let id = UInt32(tracks.count + 1)
      tracks.append(trak(id: id, handler: "soun", timescale: audio.sampleRate, video: nil, entry: mp4a(audio, id: id)))
    }
    let mvex = MP4Box(
      type: "mvex",
      children: (1...tracks.count).map { id in
        fullBox("trex") { $0.appendWords(UInt32(id), 1, 0, 0, 0) }
      })
    let moov = MP4Box(type: "moov", children: [mvhd()] + tracks + [mvex])
    var bytes = Data()
    MP4Box(type: "ftyp", payload: Data("iso6".utf8) + Data([0, 0, 2, 0]) + Data("iso6mp41".utf8)).encode(into: &bytes)
    moov.encode(into: &bytes)
    return bytes
  }

  /// The `trak` of an AAC track `id` and its `trex`, for a sound that begins after the file was made
  /// (``MP4Finalizer/addTrack(_:trex:toFileAt:)``); nil for what is not AAC at a rate a `mdhd` holds.
  static func lateAudio(_ audio: TrackFormat, id: UInt32) -> (trak: MP4Box, trex: MP4Box)? {
    guard audio.codec == .aac, (1...Int(Int32.max)).contains(audio.sampleRate) else { return nil }
    return (
      trak(id: id, handler: "soun", timescale: audio.sampleRate, video: nil, entry: mp4a(audio, id: id)),
      fullBox("trex") { $0.appendWords(id, 1, 0, 0, 0) }
    )
  }

  private static func mvhd() -> MP4Box {
    fullBox("mvhd") { data in
      data.appendWords(0, 0, 1000, 0, 0x0001_0000)  // times, timescale 1000, duration, rate 1.0
      data.appendBigEndian(UInt16(0x0100))  // volume 1.0
      data.append(Data(count: 10))
      data.appendMatrix()
      data.append(Data(count: 24))
      data.appendBigEndian(UInt32(2))  // next track id (libavformat writes 2 into an empty moov)
    }
  }

  private static func trak(id: UInt32, handler: String, timescale: Int, video: TrackFormat?, entry: Data) -> MP4Box {
    let tkhd = fullBox("tkhd", flags: 3) { data in
      data.appendWords(0, 0, id, 0, 0, 0, 0)  // times, id, reserved, duration, reserved ×2
      data.appendHalfWords(0, video == nil ? 1 : 0, video == nil ? 0x0100 : 0, 0)
      // The picture's own matrix (a rotated source is shown turned, as it was), else the identity.
      if let matrix = video?.displayMatrix, matrix.count == 9 {
        for value in matrix { data.appendBigEndian(UInt32(bitPattern: value)) }
      } else {
        data.appendMatrix()
      }
      // In 16.16 fixed point (``make(video:audio:)`` took sizes up to 65,535 only).
      data.appendWords(UInt32(video?.width ?? 0) << 16, UInt32(video?.height ?? 0) << 16)
    }
    let mdhd = fullBox("mdhd") { data in
      data.appendWords(0, 0, UInt32(timescale), 0)
      data.appendHalfWords(0x55C4, 0)  // "und"
    }
    let name = video == nil ? "SoundHandler" : "VideoHandler"
    let hdlr = fullBox("hdlr") { data in
      data.appendBigEndian(UInt32(0))
      data.append(Data(handler.utf8))
      data.append(Data(count: 12))
      data.append(Data(name.utf8) + [0])
    }
    let header =
      video == nil
      ? fullBox("smhd") { $0.appendBigEndian(UInt32(0)) }
      : fullBox("vmhd", flags: 1) { $0.appendHalfWords(0, 0, 0, 0) }
    var url = Data()
    fullBox("url ", flags: 1) { _ in }.encode(into: &url)
    // One data reference: the file itself.
    let dinf = MP4Box(type: "dinf", children: [fullBox("dref") { $0.append(Data([0, 0, 0, 1]) + url) }])
    let stbl = MP4Box(
      type: "stbl",
      children: [
        fullBox("stsd") { $0.append(Data([0, 0, 0, 1]) + entry) },  // one entry
        fullBox("stts") { $0.appendBigEndian(UInt32(0)) },
        fullBox("stsc") { $0.appendBigEndian(UInt32(0)) },
        fullBox("stsz") { $0.appendWords(0, 0) },
        fullBox("stco") { $0.appendBigEndian(UInt32(0)) },
      ])
    let minf = MP4Box(type: "minf", children: [header, dinf, stbl])
    return MP4Box(type: "trak", children: [tkhd, MP4Box(type: "mdia", children: [mdhd, hdlr, minf])])
  }

  /// The `avc1` sample entry with its `avcC` (as `ff_isom_write_avcc` makes it from Annex B parameter
  /// sets); nil when libavformat should make it.
  private static func avc1(_ video: TrackFormat) -> Data? {
    let sets = video.parameterSets
    guard sets.starts(with: [0, 0, 1]) || sets.starts(with: [0, 0, 0, 1]) else { return nil }
    var sequences: [Data] = []
    var pictures: [Data] = []
    var extensions: [Data] = []
    for range in sets.withUnsafeBytes({ AnnexB.nalUnits(in: $0) }) {
      let unit = sets[(sets.startIndex + range.lowerBound)..<(sets.startIndex + range.upperBound)]
      guard unit.count <= Int(UInt16.max) else { return nil }
      guard let header = unit.first else { continue }
      switch header & 0x1F {
      case 7: sequences.append(unit)
      case 8: pictures.append(unit)
      case 13: extensions.append(unit)
      default: continue
      }
    }
    guard (1..<32).contains(sequences.count), (1..<256).contains(pictures.count), extensions.count < 256,
      sequences[0].count >= 4, let first = H264SequenceParameterSet(Data(sequences[0]))
    else { return nil }
    // libavformat reads the chroma format and bit depths with another list of profiles than its decoder.
    guard ![134, 135, 139, 144].contains(first.profile) else { return nil }
    // The SPS's bytes after its header, as they are (emulation prevention included), as libavformat copies them.
    let head = sequences[0].dropFirst().prefix(3)
    var avcC = Data([1]) + head + Data([0xFF])
    avcC.append(0xE0 | UInt8(sequences.count))
    for unit in sequences { avcC.appendBigEndian(UInt16(unit.count)); avcC.append(unit) }
    avcC.append(UInt8(pictures.count))
    for unit in pictures { avcC.appendBigEndian(UInt16(unit.count)); avcC.append(unit) }
    if ![66, 77, 88].contains(first.profile) {
      avcC.append(0xFC | UInt8(first.chromaFormat))
      avcC.append(0xF8 | UInt8(first.lumaBitDepth - 8))
      avcC.append(0xF8 | UInt8(first.chromaBitDepth - 8))
      avcC.append(UInt8(extensions.count))
      for unit in extensions { avcC.appendBigEndian(UInt16(unit.count)); avcC.append(unit) }
    }
    var entry = Data()
    entry.append(Data(count: 6))
    entry.appendBigEndian(UInt16(1))  // data reference index
    entry.append(Data(count: 16))  // version, revision, vendor, temporal and spatial quality
    entry.appendHalfWords(UInt16(truncatingIfNeeded: video.width), UInt16(truncatingIfNeeded: video.height))
    entry.appendWords(0x0048_0000, 0x0048_0000, 0)  // 72 dpi × 72 dpi, data size
    entry.appendBigEndian(UInt16(1))  // frame count
    entry.append(Data(count: 32))  // compressor name (none)
    entry.appendHalfWords(0x18, 0xFFFF)  // depth, colour table
    MP4Box(type: "avcC", payload: avcC).encode(into: &entry)
    var box = Data()
    MP4Box(type: "avc1", payload: entry).encode(into: &box)
    return box
  }

  /// The `mp4a` sample entry with its `esds` (bit rates unknown: zeros).
  private static func mp4a(_ audio: TrackFormat, id: UInt32) -> Data {
    let config = audio.audioSpecificConfig
    var entry = Data(count: 6)
    entry.appendBigEndian(UInt16(1))  // data reference index
    entry.append(Data(count: 8))  // version, revision, vendor
    entry.appendHalfWords(2, 16, 0, 0)  // channels (2 in an MP4), bits, compression, packet size
    entry.appendHalfWords(UInt16(audio.sampleRate <= Int(UInt16.max) ? audio.sampleRate : 0), 0)
    let specific = config.isEmpty ? Data() : descriptor(0x05, config)
    var decoder = Data([0x40, 0x15])  // AAC, an audio stream
    decoder.append(Data(count: 11))  // buffer size, maximum and average bit rates
    decoder.append(specific)
    var stream = Data()
    stream.appendBigEndian(UInt16(id))  // ES_ID: the track's id, as libavformat writes it
    stream.append(0)
    stream.append(descriptor(0x04, decoder))
    stream.append(descriptor(0x06, Data([0x02])))
    let esds = fullBox("esds") { $0.append(descriptor(0x03, stream)) }
    esds.encode(into: &entry)
    var box = Data()
    MP4Box(type: "mp4a", payload: entry).encode(into: &box)
    return box
  }

  /// An MPEG-4 descriptor with its length in four bytes of seven bits, as libavformat writes them.
  private static func descriptor(_ tag: UInt8, _ body: Data) -> Data {
    let length = body.count
    var bytes = Data([tag])
    for shift in [21, 14, 7] { bytes.append(UInt8(0x80 | (length >> shift) & 0x7F)) }
    bytes.append(UInt8(length & 0x7F))
    return bytes + body
  }

  private static func fullBox(_ type: String, flags: UInt32 = 0, _ body: (inout Data) -> Void) -> MP4Box {
    var payload = Data()
    payload.appendBigEndian(flags)
    body(&payload)
    return MP4Box(type: type, payload: payload)
  }
}

extension Data {
  fileprivate mutating func appendWords(_ values: UInt32...) {
    for value in values { appendBigEndian(value) }
  }

  fileprivate mutating func appendHalfWords(_ values: UInt16...) {
    for value in values { appendBigEndian(value) }
  }

  /// The identity matrix of `mvhd` and `tkhd`.
  fileprivate mutating func appendMatrix() {
    appendWords(0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000)
  }
}
