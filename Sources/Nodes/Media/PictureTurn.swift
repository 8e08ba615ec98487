import Foundation

/// How a picture is laid down to be shown upright: one of the seven ways other than as stored (four
/// turns, two mirrors, two diagonal flips, less the identity), as ffmpeg 5's autorotation reads a
/// container's display matrix (`fftools`: `transpose=clock`, `hflip,vflip`, `transpose=cclock`, their
/// mirrored forms `cclock_flip` and `clock_flip`, `hflip`, `vflip`).
public enum PictureTurn: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
  /// A quarter turn clockwise (`transpose=clock`).
  case clockwise
  /// A half turn (`hflip,vflip`).
  case halfTurn
  /// A quarter turn counter-clockwise (`transpose=cclock`).
  case counterclockwise
  /// Mirrored left to right (`hflip`).
  case mirrorLeftRight
  /// Mirrored top to bottom (`vflip`).
  case mirrorTopBottom
  /// Mirrored across the top-left to bottom-right diagonal (`transpose=cclock_flip`).
  case transpose
  /// Mirrored across the other diagonal (`transpose=clock_flip`).
  case antitranspose

  /// The turn a display matrix (an MP4 track header's nine 16.16 values, libavformat's
  /// `AV_PKT_DATA_DISPLAYMATRIX`) asks for, decided as ffmpeg 5.1 decides it: the angle of its first two
  /// columns rounded to whole degrees; within a degree of a quarter turn, that turn (mirrored where the
  /// matrix's signs say so); nil for the identity, for no matrix, and for angles that are not near a
  /// quarter turn (ffmpeg turns those by any angle, which tipipe does not do).
  public init?(displayMatrix matrix: [Int32]) {
    guard matrix.count == 9 else { return nil }
    // av_display_rotation_get: the angle of the columns once each is scaled to length 1.
    let value = { (index: Int) in Double(matrix[index]) / 65536 }
    let (scaleX, scaleY) = (hypot(value(0), value(3)), hypot(value(1), value(4)))
    guard scaleX > 0, scaleY > 0 else { return nil }
    // ffmpeg's get_rotation: theta = -round(rotation_get), where rotation_get = -angle; brought into [0, 360).
    var theta = (atan2(value(1) / scaleY, value(0) / scaleX) * 180 / .pi).rounded()
    theta -= 360 * (theta / 360 + 0.9 / 360).rounded(.down)
    let near = { (angle: Double) in abs(theta - angle) < 1 }
    switch () {
    case _ where near(90): self = matrix[3] > 0 ? .transpose : .clockwise
    case _ where near(180):
      switch (matrix[0] < 0, matrix[4] < 0) {
      case (true, true): self = .halfTurn
      case (true, false): self = .mirrorLeftRight
      case (false, true): self = .mirrorTopBottom
      case (false, false): return nil
      }
    case _ where near(270): self = matrix[3] < 0 ? .antitranspose : .counterclockwise
    case _ where near(0) || near(360):
      guard matrix[4] < 0 else { return nil }
      self = .mirrorTopBottom
    default: return nil
    }
  }

  /// The clockwise angle ffmpeg reads from the matrix (`get_rotation`'s theta): 90, 180 or 270, or 0
  /// for a mirror top to bottom of a picture that is not turned.
  public var degrees: Int {
    switch self {
    case .clockwise, .transpose: 90
    case .halfTurn, .mirrorLeftRight: 180
    case .counterclockwise, .antitranspose: 270
    case .mirrorTopBottom: 0
    }
  }

  /// True when the picture is shown mirrored (not only turned).
  public var mirrors: Bool { ![.clockwise, .halfTurn, .counterclockwise].contains(self) }

  /// True when width and height trade places.
  public var swapsSides: Bool { [.clockwise, .counterclockwise, .transpose, .antitranspose].contains(self) }

  /// `turned 90° clockwise`, `mirrored left to right`…
  public var description: String {
    switch self {
    case .clockwise: "turned 90° clockwise"
    case .halfTurn: "turned 180°"
    case .counterclockwise: "turned 90° counter-clockwise"
    case .mirrorLeftRight: "mirrored left to right"
    case .mirrorTopBottom: "mirrored top to bottom"
    case .transpose: "mirrored across its diagonal (turned 90° counter-clockwise, then top to bottom)"
    case .antitranspose: "mirrored across its other diagonal (turned 90° clockwise, then top to bottom)"
    }
  }

  /// Where the pixel at (`x`, `y`) of the shown picture comes from in the stored one of `width`×`height`.
  func source(ofX x: Int, y: Int, width: Int, height: Int) -> (x: Int, y: Int) {
    switch self {
    case .clockwise: (y, height - 1 - x)
    case .halfTurn: (width - 1 - x, height - 1 - y)
    case .counterclockwise: (width - 1 - y, x)
    case .mirrorLeftRight: (width - 1 - x, y)
    case .mirrorTopBottom: (x, height - 1 - y)
    case .transpose: (y, x)
    case .antitranspose: (width - 1 - y, height - 1 - x)
    }
  }
}
