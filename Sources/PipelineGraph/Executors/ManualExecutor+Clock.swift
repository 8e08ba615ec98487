extension ManualExecutor {
  /// Runs every job, firing `clock`'s timers one deadline at a time up to `target` (each followed by
  /// the jobs it queued), until nothing is due by then; the clock stays at the last timer fired. A test
  /// drives a whole graph through time with it.
  ///
  /// - Important: call it from one thread at a time (the test's), like ``runUntilIdle()``.
  public func runUntilIdle(firingTimersOf clock: VirtualClock, through target: ClockInstant) {
    while true {
      runUntilIdle()
      guard let next = clock.nextDeadline, next <= target else { return }
      clock.crank()
    }
  }
}
