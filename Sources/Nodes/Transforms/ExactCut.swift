import Foundation
import PipelineGraph

/// Makes a stream of packets start exactly at a time between keyframes (a *smart cut*): the group of
/// pictures that holds `start` is decoded and its pictures from `start` on are re-encoded with the same
/// codec and size (the first one a keyframe, shown from `start`); everything from the next keyframe on
/// is copied as it came. Only the edge is encoded, so an exact cut costs about as much as a keyframe cut.
/// The edge is re-encoded as 8-bit 4:2:0: a stream of another pixel format or of an odd size fails the
/// node with `unsupportedFormat` rather than mix formats in one track.
///
/// It sits where a keyframe-aligned stream begins (after a ``RangeGate`` or a demuxer trimming at
/// `start`): video before the first keyframe is dropped; the first group of pictures is held until the
/// next keyframe and, for an open group of pictures (H.265 CRA), the leading pictures after it that are
/// shown before it (they refer to the group being replaced: they are re-encoded with it and their
/// originals dropped). Audio that ends by `start` is dropped, the rest waits with the held video and
/// follows it. Re-encoded pictures are decoded before they are shown by the reordering delay of the
/// copied stream, so decode times keep increasing into it. A stream whose first keyframe is at or after
/// `start` passes unchanged. Each ``StretchStart`` event (a gate's next kept stretch) starts a new cut at
/// its time, so every stretch of a ``RangeGate`` or a ``Valve`` begins exactly where it was asked to.
///
/// A packet of the edge that the decoder refuses (bad bytes in a damaged file) costs its own pictures,
/// not the cut: ``damagedPackets`` counts them.
///
/// What it holds is bounded by ``holdLimit``: a group of pictures that grows past it (a stream with no
/// second keyframe within it, as intra-refresh cameras make) fails the node with `resourceExhausted`
/// rather than hold the file in memory.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle; a flush starts again (a new cut).
public final class ExactCut: Node {
  /// Consumes packets in decode order.
  public typealias Input = EncodedPacket
  /// Emits the cut stream.
  public typealias Output = EncodedPacket

  /// Why a cut could not be made exactly where a keyframe cut of the same stream can be made: the cause of
  /// the `MediaError` the node fails with.
  public enum Refusal: Error, Sendable, Hashable {
    /// The pictures are not 8-bit 4:2:0 of even size, the only ones the edge is re-encoded as.
    case pictureFormat
    /// The group of pictures grew past ``ExactCut/holdLimit`` without a next keyframe.
    case groupTooLarge
  }

  private enum Held {
    case packet(EncodedPacket)
    case event(PipelineEvent)
  }

  /// The node's name.
  public let name = "ExactCut"
  /// Where the output starts (each ``StretchStart`` moves it: every stretch is cut exactly).
  public private(set) var start: MediaTime
  /// The video track cut.
  public let videoTrack: TrackID
  /// The audio track cut with it, if any.
  public let audioTrack: TrackID?
  /// The re-encoding quality (x264/x265 constant rate factor).
  public let quality: Int
  private var passing = false
  private var keyframe: EncodedPacket?
  private var next: EncodedPacket?
  private var held: [Held] = []
  private var decoder: MediaDecoder?
  private var encoder: PictureEncoder?
  /// H.265: the edge's parameter sets moved to ids the copied stream does not use.
  private var renumbering: HEVCRenumbering?
  /// The last picture decoded, waiting for the next one to give its duration.
  private var pendingPicture: (time: MediaTime, duration: MediaDuration, frame: FrameBuffer)?
  private var encoded: [EncodedPacket] = []
  private var encodedFormat: TrackFormat?
  /// The most bytes held while a group of pictures is read: the packets waiting (audio, other tracks) and
  /// the re-encoded pictures (the group's own packets are decoded as they come, not kept).
  public static let holdLimit = 128 << 20
  private var heldBytes = 0
  /// Pictures re-encoded (0 when the stream started at a keyframe).
  public private(set) var picturesEncoded = 0
  /// Packets or pictures of the edge the decoder refused (damaged): skipped, their pictures missing.
  public private(set) var damagedPackets = 0

  /// A cut of `videoTrack` (and `audioTrack` with it) at `start`.
  public init(start: MediaTime, videoTrack: TrackID, audioTrack: TrackID? = nil, quality: Int = 18) {
    self.start = start
    self.videoTrack = videoTrack
    self.audioTrack = audioTrack
    self.quality = quality
  }

  /// Holds, re-encodes or passes a packet.
  public func process(_ input: EncodedPacket, context: NodeContext<EncodedPacket>) throws {
    guard !passing else { return context.emit(input) }
    if input.track == audioTrack {
      guard input.time.advanced(by: input.duration, notAfter: MediaTime(microseconds: .max)) > start else { return }
      return try hold(input)
    }
    guard input.track == videoTrack else { return try hold(input) }
    guard let keyframe else {
      guard input.isKeyframe else { return }
      guard input.time < start else {
        // The stream starts at or after `start` on its own.
        passing = true
        return release(then: input, context)
      }
      self.keyframe = input
      return try decode(input)
    }
    guard let next else {
      if input.isKeyframe && input.time > keyframe.time {
        self.next = input
      }
      // A leading picture of the keyframe's own open group (shown before it) refers to the group before,
      // which was not decoded: it cannot be, and it is shown before `start` anyway.
      if !input.isKeyframe && input.time < keyframe.time { return }
      return try decode(input)
    }
    if input.time < next.time {
      // A leading picture of an open group of pictures: it refers to the group being replaced.
      return try decode(input)
    }
    try cut(context, followedBy: input)
    context.emit(input)
  }

  private func hold(_ packet: EncodedPacket) throws {
    held.append(.packet(packet))
    try count(packet.data.count)
  }

  private func count(_ bytes: Int) throws {
    heldBytes += bytes
    guard heldBytes <= Self.holdLimit else {
      throw MediaError(
        .resourceExhausted,
        "an exact cut at \(start) holds the group of pictures until the next keyframe, and this one passed "
          + "\(Self.holdLimit >> 20) MiB without one (cut at a keyframe instead)", cause: Refusal.groupTooLarge)
    }
  }

  private func decode(_ packet: EncodedPacket) throws {
    var packet = packet
    if self.decoder == nil, !packet.format.parameterSets.isEmpty {
      // The first picture decoded carries the stream's parameter sets: a keyframe that is not an IDR (an
      // open group of pictures' I picture) comes without them from an MP4 or a Matroska file.
      packet = EncodedPacket(
        track: packet.track, format: packet.format, time: packet.time, decodeTime: packet.decodeTime,
        duration: packet.duration, isKeyframe: packet.isKeyframe, data: packet.format.parameterSets + packet.data,
        isHidden: packet.isHidden)
    }
    let decoder = try self.decoder ?? MediaDecoder(format: packet.format, threads: FrameDecoder.defaultThreads)
    self.decoder = decoder
    // A damaged packet (bad bytes the decoder refuses) costs its own pictures, as ffmpeg skips it and as a
    // keyframe cut of the same file copies the rest: the cut goes on with the next packet.
    do { try decoder.send(packet) } catch let error as MediaError where error.kind == .unreadableMedia {
      damagedPackets += 1
      return
    }
    try receive(from: decoder)
  }

  /// Takes the pictures decoded so far; one the decoder fails on (a damaged packet's) is counted and
  /// skipped, and those after it are still taken.
  private func receive(from decoder: MediaDecoder) throws {
    // (Each failure is one picture the decoder gives up: bounded, whatever it does.)
    for _ in 0..<64 {
      do { return try decoder.receive { try accept(($0, $1, $2)) } } catch let error as MediaError
        where error.kind == .unreadableMedia
      {
        damagedPackets += 1
      }
    }
  }

  /// A picture in presentation order: the one before it now has its duration.
  private func accept(_ picture: (time: MediaTime, duration: MediaDuration, frame: FrameBuffer)) throws {
    if let limit = next?.time, picture.time >= limit { return }
    if let pending = pendingPicture, let duration = try? picture.time - pending.time, duration > .zero {
      try encode(pending.frame, at: pending.time, lasting: duration)
    }
    pendingPicture = picture
  }

  private func encode(_ picture: FrameBuffer, at time: MediaTime, lasting duration: MediaDuration) throws {
    let end = time.advanced(by: duration, notAfter: MediaTime(microseconds: .max))
    guard end > start else { return }
    // The picture shown at `start` is shown from `start`.
    let shown = max(time, start)
    // The re-encoded pictures share one track with the copied ones: same size, same 8-bit 4:2:0 (what
    // the encoder makes here); anything else would mix formats in one stream.
    guard let pixels = picture.pixelFormat, [.yuv420p, .yuvj420p].contains(pixels), picture.width % 2 == 0,
      picture.height % 2 == 0
    else {
      throw MediaError(
        .unsupportedFormat,
        "an exact cut re-encodes 8-bit 4:2:0 pictures of even size; this stream has "
          + "\(picture.pixelFormat.map { "\($0)" } ?? "unknown") \(picture.width)x\(picture.height) pictures "
          + "(cut at a keyframe instead)", cause: Refusal.pictureFormat)
    }
    let codec = keyframe?.format.codec ?? .h264
    let encoder =
      try self.encoder
      ?? PictureEncoder(
        .init(
          codec: codec, width: picture.width, height: picture.height, quality: quality, keyframeInterval: nil,
          preset: "veryfast", parameterSetId: freeParameterSetId(among: copiedParameterSets),
          h264Profile: codec == .h264 ? PictureEncoder.H264Profile(in: copiedParameterSets) : nil,
          signal: PictureEncoder.Signal(of: picture)))
    self.encoder = encoder
    var (data, isKeyframe) = try encoder.encode(picture, at: shown, keyframe: picturesEncoded == 0)
    if codec == .h265 {
      // libx265 numbers its sets from 0 and has no option to do otherwise: they are renumbered here.
      let renumbering =
        self.renumbering
        ?? HEVCRenumbering(
          moving: HEVCParameterSetIDs(in: VideoParameterProbe.parameterSets(in: data, codec: .h265)),
          awayFrom: HEVCParameterSetIDs(in: copiedParameterSets))
      self.renumbering = renumbering
      data = renumbering.apply(to: data)
    }
    var format =
      encodedFormat
      ?? TrackFormat(
        codec: encoder.settings.codec, width: encoder.settings.width, height: encoder.settings.height,
        displayMatrix: keyframe?.format.displayMatrix ?? [])
    if isKeyframe {
      let sets = VideoParameterProbe.parameterSets(in: data, codec: format.codec)
      // The edge's sets (ids of their own) and the copied stream's, so that the one sample entry a
      // file's track takes from its first packet describes every picture, the copied ones too.
      if !sets.isEmpty { format.parameterSets = sets + copiedParameterSets }
    }
    encodedFormat = format
    picturesEncoded += 1
    try count(data.count)
    encoded.append(
      EncodedPacket(
        track: videoTrack, format: format, time: shown, duration: (try? end - shown) ?? duration,
        isKeyframe: isKeyframe, data: data))
  }

  /// The parameter sets of the copied stream: its keyframes' formats, or what the first one carries.
  private var copiedParameterSets: Data {
    var sets = Data()
    for packet in [keyframe, next].compactMap({ $0 }) {
      let own =
        packet.format.parameterSets.isEmpty
        ? VideoParameterProbe.parameterSets(in: packet.data, codec: packet.format.codec) : packet.format.parameterSets
      if sets.range(of: own) == nil { sets.append(own) }
    }
    return sets
  }

  /// The smallest H.264 SPS/PPS id `sets` do not take (x264 gives its PPS the SPS's id).
  private func freeParameterSetId(among sets: Data) -> Int {
    let taken = VideoParameterProbe.h264ParameterSetIDs(in: sets)
    return (0...31).first { !taken.contains($0) } ?? 0
  }

  /// The held group is complete: its pictures from `start` on are encoded and sent, decoded ahead of
  /// their time by the copied stream's reordering delay, then what was held, then the next keyframe.
  private func cut(_ context: NodeContext<EncodedPacket>, followedBy following: EncodedPacket? = nil) throws {
    passing = true
    if let decoder {
      decoder.sendEndOfStream()
      try receive(from: decoder)
    }
    if let pending = pendingPicture {
      let end = next?.time ?? pending.time.advanced(by: pending.duration, notAfter: MediaTime(microseconds: .max))
      if let duration = try? end - pending.time, duration > .zero {
        try encode(pending.frame, at: pending.time, lasting: duration)
      }
    }
    pendingPicture = nil
    decoder = nil
    // The copied stream's reordering delay (the next keyframe's; without one, the replaced group's own):
    // a stretch's decode times keep the same distance to its presentation times throughout.
    let delay = (next ?? keyframe).flatMap { try? $0.time - $0.decodeTime } ?? .zero
    if let format = encodedFormat, !encoded.isEmpty {
      context.send(.formatChange(FormatChange(track: videoTrack, format: format, time: start)))
    }
    let pictures = encoded.map { packet in
      EncodedPacket(
        track: packet.track, format: packet.format, time: packet.time,
        decodeTime: (try? packet.time - delay) ?? packet.time, duration: packet.duration,
        isKeyframe: packet.isKeyframe, data: packet.data)
    }
    encoded = []
    // The next keyframe lasts, in decode order, until the picture that follows it once the leading
    // pictures are gone: decode times stay continuous.
    var copied = next
    if let next, let following, let step = try? following.decodeTime - next.decodeTime, step > .zero {
      copied = next.withDuration(step)
    }
    release(then: copied, after: pictures, context)
  }

  /// Sends what was held, in time order with the re-encoded `pictures` (audio never waits behind a whole
  /// group of pictures: a writer would take the audio for missing), but the copied video's own format
  /// announcements (sent again before its first keyframe), then `packet`.
  private func release(
    then packet: EncodedPacket?, after pictures: [EncodedPacket] = [], _ context: NodeContext<EncodedPacket>
  ) {
    let items = held
    held = []
    var nextPicture = 0
    for item in items {
      switch item {
      case .packet(let packet):
        while nextPicture < pictures.count, pictures[nextPicture].time <= packet.time {
          context.emit(pictures[nextPicture])
          nextPicture += 1
        }
        context.emit(packet)
      case .event(let event):
        if picturesEncoded > 0, case .formatChange(let change as FormatChange) = event, change.track == videoTrack {
          continue
        }
        context.send(event)
      }
    }
    for picture in pictures[nextPicture...] { context.emit(picture) }
    guard let packet else { return }
    if picturesEncoded > 0 {
      context.send(.formatChange(FormatChange(track: videoTrack, format: packet.format, time: packet.time)))
    }
    context.emit(packet)
  }

  /// Events keep their place among held packets; a ``StretchStart`` of the video track begins a new cut
  /// there (the stretches of a ``RangeGate`` or a ``Valve``, each cut exactly).
  public func handle(_ event: PipelineEvent, context: NodeContext<EncodedPacket>) throws {
    if case .custom(let payload as StretchStart) = event, payload.track == videoTrack {
      if !passing { try cut(context) }
      reset()
      start = payload.time
    }
    guard passing else { return held.append(.event(event)) }
    context.send(event)
  }

  /// The stream ended inside the first group: it is cut at its end.
  public func finish(context: NodeContext<EncodedPacket>) throws {
    if !passing { try cut(context) }
  }

  /// Starts again: a new cut.
  public func flush(context: NodeContext<EncodedPacket>) { reset() }

  private func reset() {
    passing = false
    heldBytes = 0
    keyframe = nil
    next = nil
    held = []
    decoder = nil
    encoder = nil
    renumbering = nil
    pendingPicture = nil
    encoded = []
    encodedFormat = nil
    picturesEncoded = 0
  }
}
