import Foundation
import MediaSynthesis
import MediaTestSupport
import Nodes
import PipelineGraph
import PipelineTestKit
import Testing

@Suite("Resampler")
struct ResamplerTests {
  @Test("16 kHz mono AAC becomes 48 kHz stereo s16 with three times the samples")
  func upsamples() throws {
    let directory = try TemporaryDirectory()
    let options = smallOptions(seconds: 3)
    try LibrarySynthesizer(options: options).write(to: directory.url)
    let start = options.startMilliseconds
    let decoded = try decode(
      library: directory.url, range: MediaRange(startMilliseconds: start, endMilliseconds: start + 3000))
    let inputSamples = decoded.audioFrames.reduce(0) { $0 + $1.frame.sampleCount }

    let harness = try NodeHarness(Resampler(to: AudioDeviceFormat(sampleRate: 48000, channels: 2)))
    harness.push(contentsOf: decoded.audioFrames)
    harness.runUntilIdle()
    let output = harness.outputItems
    let outputSamples = output.reduce(0) { $0 + $1.frame.sampleCount }
    #expect(abs(outputSamples - 3 * inputSamples) <= 64, "\(outputSamples) vs 3 × \(inputSamples)")
    #expect(output.allSatisfy { $0.frame.channelCount == 2 })
    #expect(output.map(\.time) == decoded.audioFrames.prefix(output.count).map(\.time))
    #expect(harness.reportedFailures.isEmpty)
  }
}
