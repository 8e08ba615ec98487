import Testing

/// Every SDK test touches the process-wide runtime: they run one at a time, under this suite.
@Suite(.serialized) @MainActor enum SDKRules {}
