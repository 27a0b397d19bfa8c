//! Seed 003's response-time decomposition (eq. 5): RT = C + L_I + L_S + L_P.
//!
//! - C, compute: the time the interactive task runs to handle the input;
//! - L_I, interrupt: from the input's interrupt to the end of its handler;
//! - L_S, scheduling: from the end of the handler to the task's first instruction (the seed's
//!   t3 − t1: the event's way through the framework's own tasks is part of it);
//! - L_P, preemption: the time the task, runnable, waits while others run, until it is done.
//!
//! A task that sleeps in the middle of its response (waits for I/O or another task) is neither
//! runnable nor running; that time is kept apart as `blocked_ns` so the parts always sum to RT.
//!
//! [`Decomposer`] is fed the moments a substrate sees (the simulator's kernel, a live trace) and
//! gives the [`ResponseParts`] of one response.

/// One response, split as eq. 5 splits it. All parts sum to [`ResponseParts::total_ns`].
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct ResponseParts {
    pub compute_ns: u64,
    pub interrupt_ns: u64,
    pub scheduling_ns: u64,
    pub preemption_ns: u64,
    pub blocked_ns: u64,
}

impl ResponseParts {
    /// RT.
    #[must_use]
    pub fn total_ns(&self) -> u64 {
        self.compute_ns
            + self.interrupt_ns
            + self.scheduling_ns
            + self.preemption_ns
            + self.blocked_ns
    }
}

/// Where a response stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// The interrupt is being handled.
    Interrupt,
    /// Handled; the task has not run yet.
    BeforeFirstRun,
    Running,
    /// Runnable, not running (preempted, or woken again after a sleep).
    Waiting,
    Blocked,
}

/// A decomposition in progress, fed in time order. Out-of-order or missing calls are tolerated:
/// a moment before the last one counts as the last one (nothing goes negative), and a call that
/// does not fit the phase (a stop while not running) is ignored.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Decomposer {
    parts: ResponseParts,
    phase: Phase,
    since_ns: u64,
}

impl Decomposer {
    /// The input's interrupt was raised at `at_ns`.
    #[must_use]
    pub fn input(at_ns: u64) -> Decomposer {
        Decomposer {
            parts: ResponseParts::default(),
            phase: Phase::Interrupt,
            since_ns: at_ns,
        }
    }

    fn close(&mut self, at_ns: u64) -> u64 {
        let d = at_ns.saturating_sub(self.since_ns);
        self.since_ns = self.since_ns.max(at_ns);
        d
    }

    /// The interrupt handler finished.
    pub fn interrupt_done(&mut self, at_ns: u64) {
        if self.phase == Phase::Interrupt {
            self.parts.interrupt_ns += self.close(at_ns);
            self.phase = Phase::BeforeFirstRun;
        }
    }

    /// The interactive task starts running.
    pub fn run(&mut self, at_ns: u64) {
        let d = self.close(at_ns);
        match self.phase {
            Phase::Interrupt => self.parts.interrupt_ns += d,
            Phase::BeforeFirstRun => self.parts.scheduling_ns += d,
            Phase::Waiting => self.parts.preemption_ns += d,
            Phase::Blocked => self.parts.blocked_ns += d,
            Phase::Running => {
                self.parts.compute_ns += d;
                return;
            }
        }
        self.phase = Phase::Running;
    }

    /// The interactive task stops running: still runnable (`preempted`) or asleep.
    pub fn stop(&mut self, at_ns: u64, preempted: bool) {
        if self.phase == Phase::Running {
            self.parts.compute_ns += self.close(at_ns);
            self.phase = if preempted {
                Phase::Waiting
            } else {
                Phase::Blocked
            };
        }
    }

    /// The task, asleep in the middle of its response, is runnable again.
    pub fn woken(&mut self, at_ns: u64) {
        if self.phase == Phase::Blocked {
            self.parts.blocked_ns += self.close(at_ns);
            self.phase = Phase::Waiting;
        }
    }

    /// The response is complete at `at_ns` (the frame is drawn).
    #[must_use]
    pub fn done(mut self, at_ns: u64) -> ResponseParts {
        let d = self.close(at_ns);
        match self.phase {
            Phase::Interrupt => self.parts.interrupt_ns += d,
            Phase::BeforeFirstRun => self.parts.scheduling_ns += d,
            Phase::Running => self.parts.compute_ns += d,
            Phase::Waiting => self.parts.preemption_ns += d,
            Phase::Blocked => self.parts.blocked_ns += d,
        }
        self.parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_done_in_any_phase_charges_the_last_stretch_to_that_phase() {
        let d = Decomposer::input(0);
        assert_eq!(d.done(4).interrupt_ns, 4);
        let mut d = Decomposer::input(0);
        d.interrupt_done(1);
        assert_eq!(d.done(5).scheduling_ns, 4);
        for (preempted, waited) in [(true, 4), (false, 0)] {
            let mut d = Decomposer::input(0);
            d.interrupt_done(1);
            d.run(2);
            d.stop(3, preempted);
            let p = d.done(7);
            assert_eq!((p.preemption_ns, p.blocked_ns), (waited, 4 - waited));
            assert_eq!((p.compute_ns, p.total_ns()), (1, 7));
        }
    }

    #[test]
    fn a_run_that_skips_a_step_charges_the_time_to_the_phase_it_was_in() {
        // The task runs before the handler is reported done: the time is the interrupt's.
        let mut d = Decomposer::input(0);
        d.run(5);
        let p = d.done(8);
        assert_eq!((p.interrupt_ns, p.compute_ns), (5, 3));
        // Woken without a `woken` call: the sleep is blocked time, not preemption.
        let mut d = Decomposer::input(0);
        d.interrupt_done(1);
        d.run(3);
        d.stop(5, false);
        d.run(9);
        let p = d.done(10);
        assert_eq!(
            p,
            ResponseParts {
                interrupt_ns: 1,
                scheduling_ns: 2,
                compute_ns: 3,
                blocked_ns: 4,
                preemption_ns: 0,
            }
        );
        // A second `run` while running: compute goes on.
        let mut d = Decomposer::input(0);
        d.interrupt_done(1);
        d.run(2);
        d.run(4);
        let p = d.done(7);
        assert_eq!((p.compute_ns, p.total_ns()), (5, 7));
    }

    /// The seed's figure 3: touch at t0, handler done at t1, the task first runs at t3, is
    /// preempted from t4 to t5 and from t6 to t7, and completes at t8.
    #[test]
    fn figure_3_splits_into_its_four_parts() {
        let mut d = Decomposer::input(0);
        d.interrupt_done(50);
        d.run(1_000);
        d.stop(3_000, true);
        d.run(5_000);
        d.stop(6_000, true);
        d.run(9_000);
        let p = d.done(10_000);
        assert_eq!(
            p,
            ResponseParts {
                compute_ns: 2_000 + 1_000 + 1_000,
                interrupt_ns: 50,
                scheduling_ns: 950,
                preemption_ns: 2_000 + 3_000,
                blocked_ns: 0,
            }
        );
        assert_eq!(p.total_ns(), 10_000);
    }

    #[test]
    fn a_sleep_mid_response_is_kept_apart_and_bad_orders_do_not_go_negative() {
        let mut d = Decomposer::input(100);
        d.interrupt_done(90); // earlier than the input: counts as nothing
        d.run(200);
        d.stop(300, false);
        d.stop(310, true); // not running: ignored
        d.woken(400);
        d.run(450);
        let p = d.done(500);
        assert_eq!(p.interrupt_ns, 0);
        assert_eq!(p.scheduling_ns, 100);
        assert_eq!(p.compute_ns, 150);
        assert_eq!(p.blocked_ns, 100);
        assert_eq!(p.preemption_ns, 50);
        assert_eq!(p.total_ns(), 400);
    }
}
