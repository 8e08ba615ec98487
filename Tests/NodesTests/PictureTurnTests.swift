import Foundation
import Testing

@testable import Nodes

/// `PictureTurn(displayMatrix:)` against ffmpeg 5.1's fftools decision (theta = −round(the matrix's
/// counter-clockwise angle), within a degree of a quarter turn, the mirrors from the matrix's signs), and
/// the turns' pixel mappings as one-to-one maps of the stored picture.
@Suite struct PictureTurnTests {
  /// The 16.16 matrix of a clockwise turn by `degrees` (libavutil's av_display_rotation_set), scaled.
  static func turned(_ degrees: Double, scale: Double = 1) -> [Int32] {
    let radians = degrees * .pi / 180
    let value = { (x: Double) in Int32((x * scale * 65536).rounded()) }
    return [value(cos(radians)), value(sin(radians)), 0, value(-sin(radians)), value(cos(radians)), 0, 0, 0, 1 << 30]
  }

  /// The matrix a b / c d (units).
  static func matrix(_ a: Int32, _ b: Int32, _ c: Int32, _ d: Int32) -> [Int32] {
    [a << 16, b << 16, 0, c << 16, d << 16, 0, 0, 0, 1 << 30]
  }

  @Test("ffmpeg's decision: quarter turns within a degree after rounding, mirrors from the signs, nothing else")
  func decidedAsFFmpegDoes() {
    let cases: [([Int32], PictureTurn?)] = [
      (Self.turned(90), .clockwise), (Self.turned(180), .halfTurn), (Self.turned(-90), .counterclockwise),
      (Self.turned(270), .counterclockwise), (Self.turned(0), nil), (Self.turned(360), nil),
      // 89.6 rounds to 90; 89.4 rounds to 89, a degree off: ffmpeg turns that by 89° (not done here).
      (Self.turned(89.6), .clockwise), (Self.turned(89.4), nil), (Self.turned(-89.4), nil),
      (Self.turned(-89.6), .counterclockwise), (Self.turned(45), nil), (Self.turned(179.7), .halfTurn),
      // A scaled matrix turns the same; a column of zeros says nothing.
      (Self.turned(90, scale: 2), .clockwise), (Self.matrix(0, 0, 0, 0), nil), (Self.matrix(1, 0, 0, 0), nil),
      (Self.matrix(-1, 0, 0, 1), .mirrorLeftRight), (Self.matrix(1, 0, 0, -1), .mirrorTopBottom),
      (Self.matrix(-1, 0, 0, -1), .halfTurn), (Self.matrix(0, 1, 1, 0), .transpose),
      (Self.matrix(0, -1, -1, 0), .antitranspose), (Self.matrix(0, 1, -1, 0), .clockwise),
      (Self.matrix(0, -1, 1, 0), .counterclockwise), ([], nil), (Array(Self.turned(90).prefix(8)), nil),
    ]
    for (matrix, expected) in cases {
      #expect(PictureTurn(displayMatrix: matrix) == expected, "\(matrix)")
    }
  }

  @Test(
    "each turn maps the shown picture one to one onto the stored one, sides traded as it says",
    arguments: PictureTurn.allCases)
  func mappingIsOneToOne(turn: PictureTurn) {
    let (width, height) = (5, 3)
    let (shownWidth, shownHeight) = turn.swapsSides ? (height, width) : (width, height)
    var seen = Set<Int>()
    for y in 0..<shownHeight {
      for x in 0..<shownWidth {
        let source = turn.source(ofX: x, y: y, width: width, height: height)
        #expect((0..<width).contains(source.x) && (0..<height).contains(source.y), "\(turn) (\(x), \(y))")
        seen.insert(source.y * width + source.x)
      }
    }
    #expect(seen.count == width * height, "\(turn)")
    // The four that flip the picture over are mirrors; the three turns are not.
    #expect(turn.mirrors == [.mirrorLeftRight, .mirrorTopBottom, .transpose, .antitranspose].contains(turn))
  }
}
