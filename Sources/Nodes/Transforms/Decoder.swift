import CFFmpeg
import Foundation
import PipelineGraph

/// Decodes one track's packets with libavcodec (H.264, H.265, AAC, G.711) into ``DecodedFrame``s.
///
/// The decoder opens at the track's first packet and reopens at a `formatChange`; a `gap` or a flush
/// resets it (decoding restarts at the keyframe the demuxer guarantees). `keyframesOnly` skips every
/// non-keyframe (trick play at high speeds). A packet libavcodec rejects is a failure of this node with
/// `recordingUnreadable`/`mediaUnreadable`.
public final class Decoder: Node {
  /// Consumes packets.
  public typealias Input = EncodedPacket
  /// Emits frames.
  public typealias Output = DecodedFrame

  /// The node's name.
  public let name: String
  /// The track decoded; packets of other tracks are ignored.
  public let track: TrackID
  /// Decoding threads (libavcodec's `thread_count`).
  public let threads: Int
  /// Decode keyframes only.
  public var keyframesOnly: Bool

  private var context: CodecContext?
  private var openFormat: TrackFormat?
  private let packet: Packet
  /// Frames decoded so far.
  public private(set) var framesDecoded = 0

  /// Creates a decoder for `track`.
  public init(name: String = "Decoder", track: TrackID, threads: Int = 1, keyframesOnly: Bool = false) throws {
    self.name = name
    self.track = track
    self.threads = max(1, threads)
    self.keyframesOnly = keyframesOnly
    packet = try Packet()
  }

  /// Decodes one packet and emits the frames it completes.
  public func process(_ input: EncodedPacket, context: NodeContext<DecodedFrame>) throws {
    guard input.track == track, !keyframesOnly || input.isKeyframe else { return }
    if openFormat?.codec != input.format.codec || openFormat?.sampleRate != input.format.sampleRate
      || openFormat?.channels != input.format.channels || self.context == nil
    {
      try drain(context: context)
      try open(input.format)
    }
    guard let codecContext = self.context else { return }
    let size = input.data.count
    try FFmpeg.check(av_new_packet(packet.pointer, Int32(size)), "allocating a packet", code: .resourceExhausted)
    defer { av_packet_unref(packet.pointer) }
    input.data.withUnsafeBytes { raw in
      if let base = raw.baseAddress {
        packet.pointer.pointee.data.update(from: base.assumingMemoryBound(to: UInt8.self), count: size)
      }
    }
    packet.pointer.pointee.pts = input.time.microseconds
    packet.pointer.pointee.dts = input.decodeTime.microseconds
    packet.pointer.pointee.duration = input.duration.microseconds
    if input.isKeyframe { packet.pointer.pointee.flags |= AV_PKT_FLAG_KEY }
    let sent = avcodec_send_packet(codecContext.pointer, packet.pointer)
    if sent < 0 && sent != FFmpeg.again {
      throw TiError(
        .recordingUnreadable, "\(track) at \(input.time): \(FFmpeg.message(for: sent))", gapReason: .mediaUnreadable)
    }
    try receive(context: context)
  }

  private func open(_ format: TrackFormat) throws {
    let codec = try CodecContext(codec: try CodecContext.decoder(for: format.codec))
    let c = codec.pointer
    c.pointee.thread_count = Int32(threads)
    c.pointee.pkt_timebase = AVRational(num: 1, den: 1_000_000)
    if format.codec.kind == .audio {
      c.pointee.sample_rate = Int32(format.sampleRate)
      av_channel_layout_default(&c.pointee.ch_layout, Int32(format.channels))
    }
    try codec.open()
    context = codec
    openFormat = format
  }

  private func receive(context: NodeContext<DecodedFrame>) throws {
    guard let codecContext = self.context else { return }
    while true {
      let frame = try Frame()
      let status = avcodec_receive_frame(codecContext.pointer, frame.pointer)
      if status == FFmpeg.again || status == FFmpeg.endOfFile { return }
      if status < 0 {
        throw TiError(.recordingUnreadable, "\(track): \(FFmpeg.message(for: status))", gapReason: .mediaUnreadable)
      }
      let pts = frame.pointer.pointee.best_effort_timestamp
      let time = MediaTime(microseconds: pts == cff_nopts_value() ? frame.pointer.pointee.pts : pts)
      framesDecoded += 1
      context.emit(
        DecodedFrame(
          track: track, time: time, duration: .microseconds(frame.pointer.pointee.pkt_duration), frame: frame))
    }
  }

  private func drain(context: NodeContext<DecodedFrame>) throws {
    guard let codecContext = self.context else { return }
    avcodec_send_packet(codecContext.pointer, nil)
    try receive(context: context)
    self.context = nil
    openFormat = nil
  }

  /// A format change of the track reopens the decoder at its next packet; a gap resets it.
  public func handle(_ event: PipelineEvent, context: NodeContext<DecodedFrame>) throws {
    switch try MediaEvent(event) {
    case .formatChange(let change) where change.track == track:
      try drain(context: context)
    case .gap:
      try drain(context: context)
    default:
      break
    }
    context.send(event)
  }

  /// Emits the frames still inside the decoder.
  public func finish(context: NodeContext<DecodedFrame>) throws { try drain(context: context) }

  /// Drops the decoder's state (a seek).
  public func flush(context: NodeContext<DecodedFrame>) {
    self.context = nil
    openFormat = nil
  }
}
