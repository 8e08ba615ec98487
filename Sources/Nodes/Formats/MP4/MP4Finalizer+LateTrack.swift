import Foundation

extension MP4Finalizer {
  /// Declares one more track in the fragmented MP4 at `path`, in place: `trak` is added to its `moov`
  /// (after the last `trak`), `trex` to the `moov`'s `mvex`, and the `mvhd`'s next track id moves past
  /// it; the `moov` grows into the `free` box reserved after it for the final index. A sound that begins
  /// after the file was made gets its track this way, and the file stays a valid fragmented MP4 at every
  /// step (what is past the old `moov` is written first, into the room no reader looks into; then the
  /// head, with one `pwrite`), so the fragments that follow may carry the track.
  ///
  /// Returns false, writing nothing, when the room left would be less than a `free` box's header (8
  /// bytes: the finalizer needs it); throws ``MP4Error`` when the file does not start with `ftyp`,
  /// `moov`, `free`, and `writeFailed` when it cannot be written.
  static func addTrack(_ trak: MP4Box, trex: MP4Box, toFileAt path: String) throws -> Bool {
    guard let file = FileHandle(forUpdatingAtPath: path) else { throw MP4Error.malformed("cannot open \(path)") }
    defer { try? file.close() }
    let (moovBox, available, parsed) = try header(of: file)
    var moov = parsed
    guard let mvex = moov.children.firstIndex(where: { $0.type == "mvex" }),
      let mvhd = moov.children.firstIndex(where: { $0.type == "mvhd" })
    else { throw MP4Error.malformed("a moov without mvhd or mvex") }
    let after = (moov.children.lastIndex { $0.type == "trak" } ?? mvhd) + 1
    moov.children.insert(trak, at: after)
    moov.children[mvex + (after <= mvex ? 1 : 0)].children.append(trex)
    // The next track id: the last field of a version 0 or 1 `mvhd`.
    var movieHeader = moov.children[mvhd]
    movieHeader.payload = Data(movieHeader.payload)
    if movieHeader.payload.count >= 4, let id = trak.child("tkhd").map(Self.trackID) {
      let at = movieHeader.payload.count - 4
      movieHeader.payload.setBigEndian(max(movieHeader.payload.bigEndian(UInt32.self, at: at), id + 1), at: at)
      moov.children[mvhd] = movieHeader
    }
    let remainder = available - moov.encodedSize
    guard remainder >= 8 else { return false }
    var bytes = moov.encoded
    bytes.appendBigEndian(UInt32(remainder))
    bytes.append(contentsOf: Array("free".utf8))
    var writer = IndexWriter(
      descriptor: file.fileDescriptor, start: moovBox.offset, headLength: Int(moovBox.size) + 8, path: path)
    try bytes.withUnsafeBytes { try writer.write($0) }
    try writer.writeHead()
    return true
  }

  /// The track id of a `tkhd` (version 0 or 1).
  static func trackID(_ tkhd: MP4Box) -> UInt32 {
    tkhd.payload.first == 1 ? tkhd.payload.bigEndian(UInt32.self, at: 20) : tkhd.payload.bigEndian(UInt32.self, at: 12)
  }
}
