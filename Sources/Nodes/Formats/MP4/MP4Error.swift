import Foundation

/// Why an MP4 could not be finalized in place (the caller then falls back to a remux).
enum MP4Error: Error {
  case malformed(String)
  case indexDoesNotFit(needed: Int, available: Int)
}
