import Foundation
import Nodes
import PipelineGraph

/// Writes a synthetic recording library (`tipipe synth`): real encoded media of a moving picture and a
/// tone, cut into TSEG objects, with `index.json` — the test-harness injector.
public struct LibrarySynthesizer {
  /// A change of the video's parameters at a point of the recording (a fault builder for format
  /// changes). A keyframe starts there, and a new object unless ``startsObject`` is false (the spec allows
  /// a change inside an object, at a keyframe).
  public struct VideoChange: Sendable {
    /// Seconds after the recording's start.
    public var offsetSeconds: Int
    /// The codec from that point.
    public var codec: Codec
    /// The size from that point.
    public var width: Int
    /// The size from that point.
    public var height: Int
    /// Whether a new object starts at the change.
    public var startsObject: Bool

    /// Creates a change.
    public init(offsetSeconds: Int, codec: Codec, width: Int, height: Int, startsObject: Bool = true) {
      self.offsetSeconds = offsetSeconds
      self.codec = codec
      self.width = width
      self.height = height
      self.startsObject = startsObject
    }
  }

  /// The options of `tipipe synth` (`spec/cli.md`).
  public struct Options: Sendable {
    /// UTC ms of the first instant.
    public var startMilliseconds: Int64 = 1_795_996_800_000
    /// Length of the recording, gaps included.
    public var durationSeconds = 60
    /// Length of one object.
    public var segmentSeconds = 60
    /// Picture width.
    public var width = 1280
    /// Picture height.
    public var height = 720
    /// Frames per second.
    public var fps = 25
    /// Frames from one keyframe to the next.
    public var gop = 50
    /// The video codec (`h264` or `h265`).
    public var videoCodec = Codec.h264
    /// The audio codec, or nil for none.
    public var audioCodec: Codec? = .aac
    /// Audio sample rate.
    public var audioSampleRate = 16000
    /// Audio channels.
    public var audioChannels = 1
    /// The video track's channel id.
    public var videoChannel: UInt8 = 0
    /// The audio track's channel id.
    public var audioChannel: UInt8 = 1
    /// Encrypt every object with its own random key.
    public var encrypt = false
    /// Where keys and IVs come from: with a seed, a ``SeededGenerator`` (the same library every run,
    /// so a test's failure reproduces); nil, the system's generator (what real keys need).
    public var seed: UInt64? = nil
    /// Holes in the recording: (offset seconds, length seconds).
    public var gaps: [(offset: Int, length: Int)] = []
    /// Stretches without picture (the sound goes on), each in objects of its own that hold audio only:
    /// (offset seconds, length seconds).
    public var videoGaps: [(offset: Int, length: Int)] = []
    /// More audio channels carrying the same sound as ``audioChannel`` (a second microphone), but for
    /// ``otherAudioGaps``.
    public var otherAudioChannels: [UInt8] = []
    /// Stretches where the ``otherAudioChannels`` carry nothing, inside the objects (they cut none):
    /// (offset seconds, length seconds).
    public var otherAudioGaps: [(offset: Int, length: Int)] = []
    /// More video channels carrying the same picture as ``videoChannel`` (a camera's other lens), but
    /// for ``otherVideoGaps``.
    public var otherVideoChannels: [UInt8] = []
    /// Stretches where the ``otherVideoChannels`` carry nothing, each in objects of its own (a stretch
    /// that does not end at a keyframe leaves the frames after it undecodable until the next): (offset
    /// seconds, length seconds).
    public var otherVideoGaps: [(offset: Int, length: Int)] = []
    /// Changes of the video's parameters.
    public var videoChanges: [VideoChange] = []
    /// The device id written to the index.
    public var deviceId = "cam-0001"
    /// A sync beacon instead of the moving picture and the tone: every second of the recording opens
    /// with 100 ms of white picture and of a 1 kHz beep, at the same media time (as broadcasters'
    /// flash-and-beep clips), so that lip sync can be seen, heard and measured.
    public var beacon = false

    /// Default options.
    public init() {}
  }

  /// What was written, for tests.
  public struct Summary: Sendable {
    /// The index written to `index.json`.
    public var index: RecordingIndex
    /// Video frames written, with their times (UTC ms) and keyframe flags.
    public var videoFrames: [(time: Int64, isKeyframe: Bool)]
    /// Audio records written.
    public var audioRecords: Int
  }

  /// The options.
  public var options: Options

  /// Creates a synthesizer.
  public init(options: Options) { self.options = options }

  /// Writes `directory/index.json` and `directory/objects/*.tseg`, one object at a time (memory stays
  /// bounded by one object, whatever the duration).
  @discardableResult
  public func write(to directory: URL) throws -> Summary {
    // Options are checked (and the encoders opened) before anything is created on disk.
    let recording = try SyntheticRecording(options: options)
    let objects = directory.appendingPathComponent("objects")
    do {
      try FileManager.default.createDirectory(at: objects, withIntermediateDirectories: true)
    } catch {
      throw MediaError(.writeFailed, "cannot create \(objects.path): \(error.localizedDescription)")
    }
    var segments: [RecordingIndex.Segment] = []
    while let (segment, object) = try recording.nextObject() {
      let file = directory.appendingPathComponent(segment.url)
      do {
        try object.write(to: file)
      } catch {
        throw MediaError(.writeFailed, "cannot write \(file.path): \(error.localizedDescription)")
      }
      segments.append(segment)
    }
    let index = RecordingIndex(deviceId: options.deviceId, segments: segments)
    do {
      try index.encoded().write(to: directory.appendingPathComponent("index.json"))
    } catch {
      throw MediaError(.writeFailed, "cannot write the index: \(error.localizedDescription)")
    }
    return Summary(index: index, videoFrames: recording.videoFrames, audioRecords: recording.audioRecords)
  }
}
