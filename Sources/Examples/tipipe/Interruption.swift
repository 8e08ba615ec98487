import Foundation
import TiCloudStorage

/// SIGINT, SIGTERM and SIGHUP, all three handled alike from the first statement of `main`
/// (`spec/cli.md`: they cancel).
///
/// The signals are blocked in the main thread before any other thread exists, so every thread inherits
/// the mask and none of them can be killed by the default action; one thread takes them with `sigwait`
/// and runs the handler the running command installed. A signal that arrives before a command installs
/// its handler is remembered and handled when it does.
final class Interruption: @unchecked Sendable {
  static let shared = Interruption()

  static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP]
  /// The main thread's signal stack (64 KB; kept for the process's life).
  static let signalStackSize = 64 << 10
  private let lock = NSLock()
  // Guarded by `lock`.
  private var handler: (@Sendable (Int32) -> Void)?
  private var pending: Int32?

  /// Blocks the signals and starts the thread that takes them; call first thing in `main`.
  ///
  /// One thread may unblock them anyway: on Linux `dispatchMain()` parks the main thread in
  /// `sigsuspend` with an empty mask. A handler is installed for that case: it passes the signal on to
  /// the waiting thread (`pthread_kill` is async-signal-safe), so no signal takes its default action.
  func install() {
    // A closed pipe on standard output is a failed write (EPIPE) the command reports, not a death.
    signal(SIGPIPE, SIG_IGN)
    var set = sigset_t()
    sigemptyset(&set)
    for signal in Self.signals { sigaddset(&set, signal) }
    pthread_sigmask(SIG_BLOCK, &set, nil)
    let blocked = set
    let started = DispatchSemaphore(value: 0)
    let waiter = Thread { [self] in
      signalWaiter = pthread_self()
      started.signal()
      var received: Int32 = 0
      while true {
        var waited = blocked
        guard sigwait(&waited, &received) == 0 else { continue }
        deliver(received)
      }
    }
    waiter.name = "tipipe.signals"
    waiter.start()
    started.wait()
    // The handler runs on a stack of its own: the main thread parks in `sigsuspend` only after `main`'s
    // frames are gone without returning (`dispatchMain`), and a handler on that stack would write where
    // the address sanitizer still marks `main`'s locals (a report that depends on `main`'s frame size).
    var alternate = stack_t()
    alternate.ss_sp = signalStack
    alternate.ss_size = Self.signalStackSize
    alternate.ss_flags = 0
    sigaltstack(&alternate, nil)
    for signal in Self.signals {
      var action = sigaction()
      action.__sigaction_handler.sa_handler = { signal in pthread_kill(signalWaiter, signal) }
      sigemptyset(&action.sa_mask)
      action.sa_flags = SA_RESTART | SA_ONSTACK
      sigaction(signal, &action, nil)
    }
  }

  /// Runs `action` for every later signal, and at once for one that came before.
  func onSignal(_ action: @escaping @Sendable (Int32) -> Void) {
    lock.lock()
    handler = action
    let early = pending
    pending = nil
    lock.unlock()
    if let early { action(early) }
  }

  /// Forgets the handler (and what it captured); later signals wait for the next one.
  func removeHandler() {
    lock.lock()
    handler = nil
    lock.unlock()
  }

  /// The error a command ends with when `signal` stops it: `cancelled (6115): interrupted by SIGTERM`.
  static func cancellation(by signal: Int32) -> TiError {
    let names = [SIGINT: "SIGINT", SIGTERM: "SIGTERM", SIGHUP: "SIGHUP"]
    return TiError(.cancelled, "interrupted by \(names[signal] ?? "signal \(signal)")")
  }

  /// Handles `signal` as if it had arrived (SIGPIPE: standard output is gone).
  func deliver(_ signal: Int32) {
    lock.lock()
    let action = handler
    if action == nil { pending = signal }
    lock.unlock()
    action?(signal)
  }
}

/// The thread that takes the signals (set once, before any handler can run).
nonisolated(unsafe) private var signalWaiter = pthread_t()

/// The memory of the main thread's signal stack (allocated once, never freed: the process's life).
nonisolated(unsafe) private let signalStack = UnsafeMutableRawPointer.allocate(
  byteCount: Interruption.signalStackSize, alignment: 16)
