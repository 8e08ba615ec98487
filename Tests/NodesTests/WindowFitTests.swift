import DesktopOutputs
import Testing

/// Where `tipipe play --window` draws a picture: the largest rectangle of the picture's shape — its
/// pixels' shape counted — inside the drawing area, centred.
@Suite struct WindowFitTests {
  static func rect(_ placement: SDLWindow.Placement) -> [Int] {
    [placement.x, placement.y, placement.width, placement.height]
  }

  @Test("square pixels: letterboxed or pillarboxed to the picture's own shape")
  func squarePixels() {
    let wide = Self.rect(SDLWindow.fit(width: 1280, height: 720, pixelAspect: 1, into: (960, 540)))
    #expect(wide == [0, 0, 960, 540])
    let tall = Self.rect(SDLWindow.fit(width: 1080, height: 1920, pixelAspect: 1, into: (960, 540)))
    #expect(tall == [328, 0, 303, 540])
  }

  @Test("an anamorphic picture (16:9 in 4:3 pixels, 1440x1080 with pixels 4:3) is shown 16:9, not 4:3")
  func anamorphicPicture() {
    let shown = Self.rect(SDLWindow.fit(width: 1440, height: 1080, pixelAspect: 4.0 / 3.0, into: (960, 540)))
    #expect(shown == [0, 0, 960, 540])
    let narrow = SDLWindow.fit(width: 320, height: 240, pixelAspect: 4.0 / 3.0, into: (960, 540))
    #expect(abs(Double(narrow.width) / Double(narrow.height) - 16.0 / 9.0) < 0.01, "\(narrow)")
  }

  @Test("a shape that is not one (0, infinite, NaN) counts as square; an empty picture draws nothing")
  func nonsenseShapes() {
    for aspect in [0, -1, .infinity, .nan] {
      #expect(
        Self.rect(SDLWindow.fit(width: 320, height: 240, pixelAspect: aspect, into: (960, 540)))
          == [120, 0, 720, 540])
    }
    #expect(SDLWindow.fit(width: 0, height: 240, pixelAspect: 1, into: (960, 540)).width == 0)
  }
}
