import Foundation
import PipelineGraph

/// Mixes the sound of several tracks into one: each input converted to the output's rate and channels
/// (libswresample), scaled by its gain, summed, and kept inside full scale by a soft limiter (a sum that
/// would clip is bent smoothly toward full scale instead of wrapping or squaring off) — the heart of an
/// audio compositor.
///
/// Inputs are told apart by their frames' track (a ``TrackSource`` tags them) and placed by their
/// timestamps from the origin (the first frame of any input): a hole in one input is silence in it. The
/// output is 16-bit interleaved in blocks of ``blockSamples``, each made once an input still running has
/// reached its end and every other has too, has ended, or has stalled — lags more than ``maximumLag``
/// behind and brought nothing for as long on the pipeline's clock (a live track that starts late or
/// stops does not hold the others back; what it brings for a stretch already mixed is dropped).
/// The end of stream mixes up to the end of the longest input.
///
/// Confined to its pipeline's executor, with the `Node` lifecycle.
public final class AudioMixer: Node {
  /// Consumes the inputs' sound.
  public typealias Input = DecodedFrame
  /// Emits the mix.
  public typealias Output = DecodedFrame

  private final class Lane {
    let gain: Float
    let converter: SampleConverter
    /// Samples (interleaved) from sample position `start` on.
    var samples: [Int16] = []
    var start: Int64 = 0
    var ended = false
    var started = false
    /// When its last frame arrived (pipeline clock).
    var arrival: ClockInstant?
    let channels: Int
    /// Where its samples end (a position counts one sample of every channel).
    var end: Int64 { start + Int64(samples.count / channels) }

    init(gain: Float, format: AudioDeviceFormat) {
      self.gain = gain
      channels = format.channels
      converter = SampleConverter(to: format)
    }
  }

  /// The node's name.
  public let name: String
  /// The output track.
  public let output: TrackID
  /// The output's rate and channels.
  public let format: AudioDeviceFormat
  /// Samples per channel in one output frame.
  public let blockSamples = 1024
  /// How far behind the most advanced input an input may be before blocks are mixed without it.
  public let maximumLag: MediaDuration
  private var lanes: [TrackID: Lane] = [:]
  private var origin: MediaTime?
  /// When the first frame of any input arrived (pipeline clock).
  private var firstArrival: ClockInstant?
  /// The next block's first sample position.
  private var position: Int64 = 0
  /// Samples that the limiter bent (the sum went past its knee).
  public private(set) var limitedSamples = 0

  /// A mixer of `inputs` with their `gains` (linear, 1 by default) into `format`, emitting frames of
  /// track `output`.
  /// - Throws: ``TiError`` `invalidArgument` for no input, mismatched gains, or a format outside 8–192 kHz
  ///   and 1–2 channels.
  public init(
    name: String = "AudioMixer", inputs: [TrackID], gains: [Double]? = nil,
    format: AudioDeviceFormat = AudioDeviceFormat(sampleRate: 48_000, channels: 2), output: TrackID,
    maximumLag: MediaDuration = .microseconds(500_000)
  ) throws {
    let gains = gains ?? inputs.map { _ in 1 }
    guard !inputs.isEmpty, gains.count == inputs.count, Set(inputs).count == inputs.count,
      gains.allSatisfy({ $0.isFinite && $0 >= 0 && $0 <= 16 })
    else { throw TiError(.invalidArgument, "a mixer needs distinct inputs, each with a gain of 0…16") }
    guard (8_000...192_000).contains(format.sampleRate), (1...2).contains(format.channels) else {
      throw TiError(.invalidArgument, "a mix of \(format.sampleRate) Hz ×\(format.channels) is not supported")
    }
    self.name = name
    self.output = output
    self.format = format
    self.maximumLag = maximumLag
    for (input, gain) in zip(inputs, gains) { lanes[input] = Lane(gain: Float(gain), format: format) }
  }

  private func samples(in duration: MediaDuration) -> Int64 {
    duration.microseconds / 1_000 * Int64(format.sampleRate) / 1_000
  }

  /// Takes one input frame.
  public func process(_ input: DecodedFrame, context: NodeContext<DecodedFrame>) throws {
    guard let lane = lanes[input.track], input.frame.width == 0, input.frame.sampleCount > 0 else { return }
    if origin == nil {
      origin = input.time
      firstArrival = context.now
    }
    lane.arrival = context.now
    guard let origin, let (converted, count) = try lane.converter.convert(input.frame) else { return }
    let channels = format.channels
    let at = max(0, samples(in: (try? input.time - origin) ?? .zero))
    if !lane.started {
      lane.started = true
      lane.start = at
    } else if at > lane.end + Int64(format.sampleRate / 100) {
      // A hole of more than 10 ms: silence in this input.
      lane.samples += [Int16](repeating: 0, count: Int(at - lane.end) * channels)
    }
    converted.pointer.pointee.data.0!.withMemoryRebound(to: Int16.self, capacity: count * channels) { base in
      lane.samples += UnsafeBufferPointer(start: base, count: count * channels)
    }
    // What lies before the next block was mixed without it.
    if lane.start < position {
      let drop = Int(min(position - lane.start, Int64(lane.samples.count / channels))) * channels
      lane.samples.removeFirst(drop)
      lane.start += Int64(drop / channels)
    }
    try mixReady(context: context, final: false)
  }

  /// An input's ``TrackEnded``: it no longer holds blocks back.
  public func handle(_ event: PipelineEvent, context: NodeContext<DecodedFrame>) throws {
    if case .custom(let payload) = event, let ended = payload as? TrackEnded {
      lanes[ended.track]?.ended = true
      return try mixReady(context: context, final: false)
    }
    context.send(event)
  }

  private func mixReady(context: NodeContext<DecodedFrame>, final: Bool) throws {
    guard origin != nil else { return }
    let lag = samples(in: maximumLag)
    let now = context.now
    // An input that lags behind and has brought nothing for as long (on the pipeline's clock) has
    // stalled: a live track that stops, not a file that decodes more slowly than another.
    let stalled = { (lane: Lane) -> Bool in
      guard let since = lane.arrival ?? self.firstArrival else { return false }
      return now.microseconds - since.microseconds > self.maximumLag.microseconds
    }
    while true {
      let blockEnd = position + Int64(blockSamples)
      if final {
        guard (lanes.values.filter(\.started).map(\.end).max() ?? 0) > position else { return }
      } else {
        // An input still running must have reached the block's end (the mix never runs ahead of the
        // sound), and every other running input too, unless it lags more than the limit behind it.
        let running = lanes.values.filter { !$0.ended }
        guard let leader = running.filter(\.started).map(\.end).max(), leader >= blockEnd else { return }
        let waiting = running.contains { lane in
          lane.end < blockEnd && (leader - (lane.started ? lane.end : position) <= lag || !stalled(lane))
        }
        guard !waiting else { return }
      }
      try mix(context: context)
    }
  }

  private func mix(context: NodeContext<DecodedFrame>) throws {
    guard let origin else { return }
    let channels = format.channels
    var sum = [Float](repeating: 0, count: blockSamples * channels)
    for lane in lanes.values where lane.started {
      let offset = Int(lane.start - position)
      for index in 0..<blockSamples {
        let source = index - offset
        guard source >= 0, source < lane.samples.count / channels else { continue }
        for channel in 0..<channels {
          sum[index * channels + channel] += Float(lane.samples[source * channels + channel]) * lane.gain
        }
      }
      // Consumed: what lies before the next block.
      let used = Int(max(0, min(Int64(lane.samples.count / channels), position + Int64(blockSamples) - lane.start)))
      lane.samples.removeFirst(used * channels)
      lane.start += Int64(used)
    }
    let frame = try FrameBuffer.sound(sampleRate: format.sampleRate, channels: channels, count: blockSamples) {
      samples in
      for index in 0..<samples.count { samples[index] = limit(sum[index]) }
    }
    let time = try origin + MediaDuration.microseconds(position * 1_000_000 / Int64(format.sampleRate))
    position += Int64(blockSamples)
    context.emit(
      DecodedFrame(
        track: output, time: time,
        duration: .microseconds(Int64(blockSamples) * 1_000_000 / Int64(format.sampleRate)), frame: frame))
  }

  /// The soft limiter: linear up to the knee (90 % of full scale), then bent toward full scale.
  private func limit(_ value: Float) -> Int16 {
    let full: Float = 32_767
    let knee = 0.9 * full
    let magnitude = abs(value)
    guard magnitude > knee else { return Int16(value.rounded()) }
    limitedSamples += 1
    let room = full - knee
    let bent = knee + room * (1 - exp(-(magnitude - knee) / room))
    return Int16((value < 0 ? -bent : bent).rounded())
  }

  /// Mixes up to the end of the longest input.
  public func finish(context: NodeContext<DecodedFrame>) throws { try mixReady(context: context, final: true) }

  /// Forgets what was queued (a seek).
  public func flush(context: NodeContext<DecodedFrame>) {
    for lane in lanes.values {
      lane.samples = []
      lane.started = false
      lane.converter.reset()
    }
    origin = nil
    position = 0
  }
}
