import Foundation
import PipelineGraph

/// Mixes the sound of several tracks into one: each input converted to the output's rate and channels
/// (libswresample), scaled by its gain, summed, and kept inside full scale by a soft limiter (a sum that
/// would clip is bent smoothly toward full scale instead of wrapping or squaring off) — the heart of an
/// audio compositor.
///
/// Inputs are told apart by their frames' track (a ``TrackSource`` tags them) and placed by their
/// timestamps from the origin (given — files composed from their start: a sound that starts 2 s into
/// its file is placed 2 s in, and sound before it is left out — or else the first frame of any input): a
/// hole in one input is silence in it. The output is 16-bit interleaved in blocks of ``blockSamples``,
/// each made once an input still running has reached its end and every other has too, has ended, or has
/// stalled — lags more than ``maximumLag`` behind and brought nothing for ``stallTime`` on the pipeline's
/// clock (a live track that starts late or stops does not hold the others back; what it brings for a
/// stretch already mixed is dropped).
/// The end of stream mixes up to the end of the longest input. What a mixer holds and does stays bounded
/// whatever the inputs' times: a hole is never stored as silence, an input ``maximumAhead`` ahead of the
/// mix is held back (its lane in ``admission`` closes, and its ``TrackSource`` waits), and a stretch of
/// more than ``maximumHole`` that no input carries is a hole in the output, not blocks of silence.
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
    /// Stretches of samples (interleaved), in order, each from its sample position `start` on: a hole is
    /// the space between two stretches (silence, never stored).
    var stretches: [(start: Int64, samples: [Int16])] = []
    var ended = false
    var started = false
    /// When its last frame arrived (pipeline clock).
    var arrival: ClockInstant?
    let channels: Int
    /// Where its samples end (a position counts one sample of every channel).
    var end: Int64 = 0
    /// Where its first sample not yet mixed lies, if any.
    var first: Int64? { stretches.first?.start }

    init(gain: Float, format: AudioDeviceFormat) {
      self.gain = gain
      channels = format.channels
      converter = SampleConverter(to: format)
    }

    /// Adds samples at `position`: right after the last ones when they come within `join` (10 ms) of
    /// them (timestamps jitter, and a resampler delays: continuous sound stays continuous), a stretch of
    /// their own after a longer hole.
    func add(_ samples: UnsafeBufferPointer<Int16>, at position: Int64, join: Int64) {
      if started, position <= end + join {
        if let last = stretches.indices.last,
          stretches[last].start + Int64(stretches[last].samples.count / channels) == end
        {
          stretches[last].samples += samples
        } else {
          stretches.append((end, Array(samples)))
        }
      } else {
        stretches.append((max(position, end), Array(samples)))
      }
      started = true
      end = stretches[stretches.count - 1].start + Int64(stretches[stretches.count - 1].samples.count / channels)
    }

    /// Forgets every sample before `position` (mixed already, or mixed without them).
    func drop(before position: Int64) {
      while let stretch = stretches.first, stretch.start < position {
        let count = Int64(stretch.samples.count / channels)
        if stretch.start + count <= position {
          stretches.removeFirst()
        } else {
          stretches[0].samples.removeFirst(Int(position - stretch.start) * channels)
          stretches[0].start = position
        }
      }
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
  /// The longest stretch no input carries that the mix fills with silence (10 s); past it (inputs whose
  /// time jumped) the mix has a hole.
  public static let maximumHole = MediaDuration.microseconds(10_000_000)
  /// How far an input may run ahead of the mix while another is waited for (2 s): past it its lane in
  /// ``admission`` is closed (its ``TrackSource`` waits); past four times it (a source that ignores the
  /// admission) the mix goes on without the slower one, so what is queued stays bounded.
  public static let maximumAhead = MediaDuration.microseconds(2_000_000)
  /// Holds back the sources of inputs that run ahead (give it to their ``TrackSource``s).
  public let admission = LaneAdmission()
  /// The look again while a lane is closed.
  private var recheck: ClockTimer?
  private var timeBase: TimeBase { TimeBase(numerator: 1, denominator: Int32(format.sampleRate))! }
  /// How far behind the most advanced input an input may be before blocks are mixed without it (once it
  /// has also brought nothing for ``stallTime``).
  public let maximumLag: MediaDuration
  /// How long (on the pipeline's clock) an input that lags more than ``maximumLag`` behind may bring
  /// nothing before it is taken as stalled. Kept apart from the lag: the lag must stay below what the
  /// admission lets the others run ahead (``maximumAhead``), or a stall would never be found.
  public let stallTime: MediaDuration
  private var lanes: [TrackID: Lane] = [:]
  private var origin: MediaTime?
  /// The origin given, kept through a flush.
  private let givenOrigin: MediaTime?
  /// When the first frame of any input arrived (pipeline clock).
  private var firstArrival: ClockInstant?
  /// The next block's first sample position.
  private var position: Int64 = 0
  /// Samples that the limiter bent (the sum went past its knee).
  public private(set) var limitedSamples = 0

  /// A mixer of `inputs` with their `gains` (linear, 1 by default) into `format`, emitting frames of
  /// track `output` from `origin` (nil: the first frame of any input); ``stallTime`` is `stallTime`, or
  /// `maximumLag` when not given.
  /// - Throws: ``MediaError`` `invalidArgument` for no input, mismatched gains, or a format outside 8–192 kHz
  ///   and 1–2 channels.
  public init(
    name: String = "AudioMixer", inputs: [TrackID], gains: [Double]? = nil,
    format: AudioDeviceFormat = AudioDeviceFormat(sampleRate: 48_000, channels: 2), output: TrackID,
    maximumLag: MediaDuration = .microseconds(500_000), stallTime: MediaDuration? = nil, origin: MediaTime? = nil
  ) throws {
    let gains = gains ?? inputs.map { _ in 1 }
    guard !inputs.isEmpty, gains.count == inputs.count, Set(inputs).count == inputs.count,
      gains.allSatisfy({ $0.isFinite && $0 >= 0 && $0 <= 16 })
    else { throw MediaError(.invalidArgument, "a mixer needs distinct inputs, each with a gain of 0…16") }
    guard (8_000...192_000).contains(format.sampleRate), (1...2).contains(format.channels) else {
      throw MediaError(.invalidArgument, "a mix of \(format.sampleRate) Hz ×\(format.channels) is not supported")
    }
    self.name = name
    self.output = output
    self.format = format
    self.maximumLag = maximumLag
    self.stallTime = stallTime ?? maximumLag
    self.origin = origin
    givenOrigin = origin
    for (input, gain) in zip(inputs, gains) { lanes[input] = Lane(gain: Float(gain), format: format) }
  }

  /// Samples in `duration` (whole seconds and the rest apart: no overflow for any duration).
  private func samples(in duration: MediaDuration) -> Int64 {
    let rate = Int64(format.sampleRate)
    return duration.microseconds / 1_000_000 * rate + duration.microseconds % 1_000_000 * rate / 1_000_000
  }

  /// Takes one input frame.
  public func process(_ input: DecodedFrame, context: NodeContext<DecodedFrame>) throws {
    guard let lane = lanes[input.track], input.frame.width == 0, input.frame.sampleCount > 0 else { return }
    if firstArrival == nil {
      origin = origin ?? input.time
      firstArrival = context.now
    }
    lane.arrival = context.now
    guard let origin, let (converted, count) = try lane.converter.convert(input.frame) else { return }
    let channels = format.channels
    // Sound before a given origin (a frame a file's start cuts into) is left out, not moved to it.
    let offset = samples(in: (try? input.time - origin) ?? .zero)
    let skipped = offset < 0 ? Int(min(Int64(count), -offset)) : 0
    if skipped < count {
      converted.pointer.pointee.data.0!.withMemoryRebound(to: Int16.self, capacity: count * channels) { base in
        lane.add(
          UnsafeBufferPointer(start: base + skipped * channels, count: (count - skipped) * channels),
          at: max(0, offset),
          join: Int64(format.sampleRate / 100))
      }
    }
    // What lies before the next block was mixed without it.
    lane.drop(before: position)
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
    guard origin != nil, firstArrival != nil else { return }
    let lag = samples(in: maximumLag)
    let now = context.now
    // An input that lags behind and has brought nothing for as long (on the pipeline's clock) has
    // stalled: a live track that stops, not a file that decodes more slowly than another.
    let stalled = { (lane: Lane) -> Bool in
      guard let since = lane.arrival ?? self.firstArrival else { return false }
      return now.microseconds - since.microseconds > self.stallTime.microseconds
    }
    let ahead = 4 * samples(in: Self.maximumAhead)
    defer { admit(below: ahead / 4, context: context) }
    while true {
      let blockEnd = position + Int64(blockSamples)
      if final {
        guard (lanes.values.filter(\.started).map(\.end).max() ?? 0) > position else { return }
      } else {
        // An input still running must have reached the block's end (the mix never runs ahead of the
        // sound), and every other running input too, unless it lags more than the limit behind it — or
        // one input is more than four times `maximumAhead` ahead of the mix (its source ignored the
        // admission: what is queued stays bounded).
        let running = lanes.values.filter { !$0.ended }
        guard let leader = running.filter(\.started).map(\.end).max(), leader >= blockEnd else { return }
        let waiting = running.contains { lane in
          lane.end < blockEnd && (leader - (lane.started ? lane.end : position) <= lag || !stalled(lane))
        }
        guard !waiting || leader - position > ahead else { return }
      }
      // Nothing of any input for longer than `maximumHole` ahead (inputs whose time jumped): the mix
      // has a hole there instead of blocks of silence.
      let next = lanes.values.compactMap(\.first).min()
      if let next, next - position > samples(in: Self.maximumHole) {
        position = next
        continue
      }
      try mix(context: context)
    }
  }

  /// Closes the lanes of inputs `limit` samples ahead of the mix, opens the others; while one is closed,
  /// looks again just after every ``stallTime`` of the clock (an input that stopped must be found stalled even though
  /// nothing arrives any more).
  private func admit(below limit: Int64, context: NodeContext<DecodedFrame>) {
    let closed = admission.update(lanes.map { input, lane in (input, lane.ended || lane.end - position < limit) })
    guard closed, recheck == nil else { return }
    recheck = context.scheduleTimer(after: .microseconds(stallTime.microseconds + 1_000)) { [unowned self] in
      recheck = nil
      do { try mixReady(context: context, final: false) } catch { context.fail(error) }
    }
  }

  private func mix(context: NodeContext<DecodedFrame>) throws {
    guard let origin else { return }
    let channels = format.channels
    var sum = [Float](repeating: 0, count: blockSamples * channels)
    let blockEnd = position + Int64(blockSamples)
    for lane in lanes.values {
      for stretch in lane.stretches {
        guard stretch.start < blockEnd else { break }
        let count = Int64(stretch.samples.count / channels)
        let from = max(position, stretch.start)
        let to = min(blockEnd, stretch.start + count)
        guard from < to else { continue }
        for index in Int(from - position)..<Int(to - position) {
          let source = (Int64(index) + position - stretch.start) * Int64(channels)
          for channel in 0..<channels {
            sum[index * channels + channel] += Float(stretch.samples[Int(source) + channel]) * lane.gain
          }
        }
      }
      // Consumed: what lies before the next block.
      lane.drop(before: blockEnd)
    }
    let frame = try FrameBuffer.sound(sampleRate: format.sampleRate, channels: channels, count: blockSamples) {
      samples in
      for index in 0..<samples.count { samples[index] = limit(sum[index]) }
    }
    let time = try origin + (try MediaDuration(ticks: position, timeBase: timeBase))
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
      lane.stretches = []
      lane.end = 0
      lane.started = false
      lane.converter.reset()
    }
    origin = givenOrigin
    firstArrival = nil
    position = 0
    recheck = nil
    admission.update(lanes.keys.map { ($0, true) })
  }
}
