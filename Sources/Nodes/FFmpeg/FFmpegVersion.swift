internal import CCurl
internal import CFFmpeg

/// The versions of the C libraries this build runs against, for diagnostics (`tipipe --version`).
public enum LibraryVersions {
  /// `libavcodec X.Y.Z, libavformat …, libcurl …, OpenSSL …`.
  public static var summary: String {
    func dotted(_ version: UInt32) -> String { "\(version >> 16).\((version >> 8) & 0xFF).\(version & 0xFF)" }
    let curl = curl_version().map { String(cString: $0) } ?? "libcurl ?"
    return "libavcodec \(dotted(avcodec_version())), libavformat \(dotted(avformat_version())), "
      + "libavutil \(dotted(avutil_version())), \(curl.split(separator: " ").first ?? "libcurl")"
  }
}
