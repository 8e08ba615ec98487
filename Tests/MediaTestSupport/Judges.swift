import Foundation

/// The presentation times (s) of the video buffers GStreamer's qtdemux reads from `file`.
public func qtdemuxVideoBuffers(_ file: URL) throws -> [Double] {
  let output = try run(
    "/usr/bin/gst-launch-1.0",
    ["-v", "filesrc", "location=\(file.path)", "!", "qtdemux", "name=d", "d.video_0", "!", "fakesink", "silent=false"])
  return output.split(separator: "\n").compactMap { line -> Double? in
    guard line.contains("last-message = chain"), let range = line.range(of: "pts: ") else { return nil }
    let fields = line[range.upperBound...].prefix { $0 != "," }.split(separator: ":")
    guard fields.count == 3, let h = Double(fields[0]), let m = Double(fields[1]), let s = Double(fields[2]) else {
      return nil
    }
    return h * 3600 + m * 60 + s
  }
}
