import Foundation
import PipelineGraph

/// Splits a fragmented MP4 into what a streaming client takes apart: the initialization section
/// (`ftyp` + `moov`, HLS's `EXT-X-MAP`, MSE's init segment) and the media (`moof` + `mdat` pairs), with
/// each fragment's decode time (`tfdt`) moved into a longer timeline — a file written from 0 becomes a
/// segment of a stream that starts earlier.
enum FragmentSplitter {
  /// `file`'s initialization and media; every `tfdt` of a video track moved by `videoShift`, of an audio
  /// track by `audioShift` (in each track's own timescale, read from the `moov`). Other top-level boxes
  /// (`free`, `mfra`, `sidx`) are left out.
  /// - Throws: ``MP4Error`` for a file that is not a fragmented MP4 or a time that does not fit.
  static func split(_ file: Data, videoShift: MediaDuration, audioShift: MediaDuration) throws -> (
    initialization: Data, media: Data
  ) {
    let boxes = try MP4Box.parse(file)
    guard let ftyp = boxes.first(where: { $0.type == "ftyp" }), let moov = boxes.first(where: { $0.type == "moov" })
    else { throw MP4Error.malformed("no ftyp and moov") }
    // Each track's shift in its timescale.
    var shifts: [UInt32: UInt64] = [:]
    for trak in moov.children("trak") {
      guard let tkhd = trak.child("tkhd"), let mdia = trak.child("mdia"), let mdhd = mdia.child("mdhd"),
        let hdlr = mdia.child("hdlr"), tkhd.payload.count >= 24, mdhd.payload.count >= 24, hdlr.payload.count >= 12
      else { throw MP4Error.malformed("a track without its headers") }
      let id = tkhd.payload.bigEndian(UInt32.self, at: tkhd.payload[0] == 1 ? 20 : 12)
      let timescale = Int64(mdhd.payload.bigEndian(UInt32.self, at: mdhd.payload[0] == 1 ? 20 : 12))
      let handler = String(decoding: hdlr.payload[8..<12], as: UTF8.self)
      let shift = handler == "vide" ? videoShift : audioShift
      let (scaled, overflow) = shift.microseconds.multipliedReportingOverflow(by: timescale)
      guard !overflow, shift.microseconds >= 0 else { throw MP4Error.malformed("a shift that does not fit") }
      shifts[id] = UInt64((scaled + 500_000) / 1_000_000)
    }
    var initialization = ftyp.encoded
    initialization.append(moov.encoded)
    var media = Data()
    for var box in boxes where box.type == "moof" || box.type == "mdat" {
      if box.type == "moof" {
        for (index, traf) in box.children.enumerated() where traf.type == "traf" {
          box.children[index] = try shifted(traf, by: shifts)
        }
      }
      media.append(box.encoded)
    }
    return (initialization, media)
  }

  /// `traf` with its `tfdt` moved by its track's shift (the box keeps its size: `trun`'s data offsets,
  /// counted from the `moof`, stay right).
  private static func shifted(_ traf: MP4Box, by shifts: [UInt32: UInt64]) throws -> MP4Box {
    guard let tfhd = traf.child("tfhd"), tfhd.payload.count >= 8 else { throw MP4Error.malformed("traf without tfhd") }
    let shift = shifts[tfhd.payload.bigEndian(UInt32.self, at: 4)] ?? 0
    var traf = traf
    for (index, box) in traf.children.enumerated() where box.type == "tfdt" {
      var payload = box.payload
      if payload.first == 1, payload.count >= 12 {
        let (time, overflow) = payload.bigEndian(UInt64.self, at: 4).addingReportingOverflow(shift)
        guard !overflow else { throw MP4Error.malformed("a decode time that does not fit") }
        payload.setBigEndian(time, at: 4)
      } else if payload.count >= 8 {
        let time = UInt64(payload.bigEndian(UInt32.self, at: 4)) + shift
        guard let narrow = UInt32(exactly: time) else { throw MP4Error.malformed("a decode time over 32 bits") }
        payload.setBigEndian(narrow, at: 4)
      }
      traf.children[index].payload = payload
    }
    return traf
  }
}
