import MediaTestSupport

/// Media time `ms` after the fixture recording's start, in µs.
func media(_ ms: Int64) -> Int64 { (recordingStart + ms) * 1000 }
