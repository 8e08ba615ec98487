import Foundation
import Nodes
import PipelineGraph

/// A bad command line: reported as one line on stderr with exit status 2.
struct UsageError: Error {
  var message: String
}
