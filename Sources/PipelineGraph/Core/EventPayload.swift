/// A payload carried by an in-band event.
///
/// The engine knows nothing about media: the node library defines the concrete payloads
/// (a recording gap, a track's format) and the engine only orders and routes them.
///
/// Conformers are immutable values (no states): the engine hands one payload to every branch, across
/// executors, as it is.
public protocol EventPayload: Sendable, CustomStringConvertible {}
