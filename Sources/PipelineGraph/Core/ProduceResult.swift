/// What a source did when the engine asked it for data (GStreamer's flow return, for pull).
public enum ProduceResult: Sendable, Equatable {
  /// The source emitted something (items or events) and may be asked again.
  case produced
  /// The source has nothing now (e.g. a download is in flight); the engine asks again after one of the
  /// node's completions or timers has run, or after ``NodeContext/wake()``.
  case waiting
  /// The source is done: the engine calls ``Node/finish(context:)`` and sends `endOfStream`.
  case finished
}
