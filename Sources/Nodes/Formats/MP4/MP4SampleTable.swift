import Foundation

/// The samples of one track of an MP4 and where they are: what an index (`stbl`) is made from.
///
/// ``MP4FragmentWriter`` keeps one per track as it writes, so that ``MP4Finalizer`` builds the final
/// index without reading back what was written.
struct MP4SampleTable {
  /// One sample.
  struct Sample {
    var size: UInt32
    var duration: UInt32
    var compositionOffset: Int32
    var isSync: Bool
  }

  /// A run of samples stored one after the other, from `offset` in the file.
  struct Chunk {
    var offset: UInt64
    var sampleCount: Int
  }

  var samples: [Sample] = []
  var chunks: [Chunk] = []
}
