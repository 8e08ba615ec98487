import PipelineGraph

/// How an export ended (`TiCloudStorageExportTermination`, raw values as the seed's).
public enum ExportTermination: Int, Sendable, Codable, CustomStringConvertible {
  /// The whole requested range was scanned.
  case exhausted = 0
  /// An error stopped the scan after media had been written; the file holds what came before.
  case interrupted = 1
  /// `cancel()` or `stop()` won; no file.
  case cancelled = 2
  /// An error ended the task without a usable file.
  case failed = 3

  /// The JSON name: `exhausted`, `interrupted`, `cancelled`, `failed`.
  public var description: String {
    switch self {
    case .exhausted: "exhausted"
    case .interrupted: "interrupted"
    case .cancelled: "cancelled"
    case .failed: "failed"
    }
  }

  /// Encodes the name.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(description)
  }

  /// Decodes the name.
  public init(from decoder: any Swift.Decoder) throws {
    let name = try decoder.singleValueContainer().decode(String.self)
    guard let value = [Self.exhausted, .interrupted, .cancelled, .failed].first(where: { $0.description == name })
    else {
      throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "termination \(name)"))
    }
    self = value
  }
}
