/// What a Video Output draws into: the Linux stand-in for the seed's host view (`TiRtcPlatformView`).
///
/// `render` is called on the replay's executor, once per presented frame, in presentation order; it
/// must return quickly (copy what it needs, or keep the frame object, which owns its pixels). No
/// lifecycle: frames come whenever the output is bound and a play presents.
public protocol VideoRenderer: AnyObject, Sendable {
  /// Draws `frame`.
  func render(_ frame: DecodedFrame)
}

/// A renderer that draws nothing (a headless replay, `tipipe play`). Stateless: any thread.
public final class NullRenderer: VideoRenderer {
  /// Creates a null renderer.
  public init() {}
  /// Does nothing.
  public func render(_ frame: DecodedFrame) {}
}
