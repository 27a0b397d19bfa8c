//! The replay source: a `lull-trace 1` recording injected at its times.
//!
//! Trace time 0 is mapped to an absolute `CLOCK_MONOTONIC` instant; the source arms a timerfd
//! with `TFD_TIMER_ABSTIME` for the next event's instant, so it sleeps in the kernel between
//! events and timing errors do not accumulate. When the timer fires, every event whose instant
//! has come is handed to the sink stamped with the clock read at that moment (its injection
//! time). After the last event the timer stays disarmed and the source leaves the loop.

use std::io;
use std::os::fd::RawFd;

use lull_model::RawEvent;
use lull_os::event_loop::{LoopCtl, PostAction, Source};
use lull_os::sys::{monotonic_ns, TimerFd};
use lull_workload::{TimedEvent, Trace};

/// What a replay did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct ReplayCounters {
    pub injected: u64,
    /// Timer expirations (wake-ups of the replay).
    pub timer_wakeups: u64,
    /// Largest injection stamp minus the event's scheduled instant.
    pub max_late_ns: u64,
    /// Turns that stopped after [`MAX_EVENTS_PER_TURN`] due events, leaving the rest of the
    /// burst for the next turn.
    pub turns_deferred: u64,
}

/// Due events injected per turn of the loop, as many as the daemon reads from one connection
/// per turn (`turn::MAX_MESSAGES_PER_TURN`): a trace whose events all fall due at once (a
/// replay started late, or written so) cannot hold back the apps' connections.
pub const MAX_EVENTS_PER_TURN: usize = crate::turn::MAX_MESSAGES_PER_TURN;

/// Called with each event and its injection stamp.
pub type ReplaySink<S> = Box<dyn FnMut(&mut S, &mut LoopCtl<S>, RawEvent, u64)>;
/// Called once after the last event, with the counters.
pub type ReplayDone<S> = Box<dyn FnMut(&mut S, ReplayCounters)>;

/// The replay as an event-loop source.
pub struct ReplaySource<S> {
    timer: TimerFd,
    events: Vec<TimedEvent>,
    next: usize,
    start_ns: u64,
    counters: ReplayCounters,
    /// The timer was set to fire at once to finish a burst (see [`MAX_EVENTS_PER_TURN`]).
    deferred: bool,
    sink: ReplaySink<S>,
    done: ReplayDone<S>,
}

impl<S> std::fmt::Debug for ReplaySource<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ReplaySource({}/{} events)",
            self.next,
            self.events.len()
        )
    }
}

impl<S> ReplaySource<S> {
    /// A replay of `trace` whose time 0 is the monotonic instant `start_ns`, armed at once.
    ///
    /// # Errors
    /// The kernel's error from the timerfd calls.
    pub fn new(
        trace: &Trace,
        start_ns: u64,
        sink: ReplaySink<S>,
        done: ReplayDone<S>,
    ) -> io::Result<Self> {
        let src = ReplaySource {
            timer: TimerFd::new()?,
            events: trace.events.clone(),
            next: 0,
            start_ns,
            counters: ReplayCounters::default(),
            deferred: false,
            sink,
            done,
        };
        // An empty trace fires once at start and finishes.
        let first = src.events.first().map_or(start_ns, |e| start_ns + e.at_ns);
        src.timer.set_abs(first, 0)?;
        Ok(src)
    }
}

impl<S> Source<S> for ReplaySource<S> {
    fn fd(&self) -> RawFd {
        self.timer.raw()
    }

    fn ready(&mut self, state: &mut S, ctl: &mut LoopCtl<S>) -> PostAction {
        if self.timer.take_expirations().unwrap_or(0) == 0 {
            return PostAction::Continue;
        }
        if self.deferred {
            // The timer was set to fire at once by the turn that stopped early: not a wake-up.
            self.deferred = false;
        } else {
            self.counters.timer_wakeups += 1;
        }
        let mut this_turn = 0;
        while let Some(ev) = self.events.get(self.next) {
            let due_ns = self.start_ns + ev.at_ns;
            let now_ns = monotonic_ns();
            // A burst of due events is injected over several turns, so the apps' connections
            // and the other sources are served between its parts: the timer is set to fire at
            // once and the loop comes back after the others.
            let at_ns = if this_turn >= MAX_EVENTS_PER_TURN && due_ns <= now_ns {
                self.deferred = true;
                self.counters.turns_deferred += 1;
                now_ns
            } else if due_ns > now_ns {
                due_ns
            } else {
                self.counters.max_late_ns = self.counters.max_late_ns.max(now_ns - due_ns);
                self.counters.injected += 1;
                self.next += 1;
                this_turn += 1;
                (self.sink)(state, ctl, ev.raw, now_ns);
                continue;
            };
            if self.timer.set_abs(at_ns, 0).is_err() {
                break;
            }
            return PostAction::Continue;
        }
        (self.done)(state, self.counters);
        PostAction::Remove
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_model::{RawEvent, TouchPhase};
    use lull_os::event_loop::EventLoop;
    use lull_workload::TimedEvent;

    /// What the test's loop state records: the events injected in each turn, and the end.
    #[derive(Default)]
    struct Seen {
        per_turn: Vec<usize>,
        done: Option<ReplayCounters>,
    }

    #[test]
    fn a_burst_of_due_events_is_injected_over_several_turns() {
        const EVENTS: usize = 200;
        let trace = Trace {
            events: (0..EVENTS)
                .map(|i| TimedEvent {
                    at_ns: i as u64,
                    raw: RawEvent::Touch {
                        phase: TouchPhase::Move,
                        x: 1,
                        y: 1,
                    },
                })
                .collect(),
        };
        // Started a second ago: every event is due at the first turn.
        let start_ns = monotonic_ns().saturating_sub(1_000_000_000);
        let src = ReplaySource::new(
            &trace,
            start_ns,
            Box::new(|s: &mut Seen, _: &mut LoopCtl<Seen>, _, _| {
                if let Some(n) = s.per_turn.last_mut() {
                    *n += 1;
                }
            }),
            Box::new(|s: &mut Seen, c| s.done = Some(c)),
        )
        .unwrap();
        let mut lp: EventLoop<Seen> = EventLoop::new().unwrap();
        lp.insert(Box::new(src)).unwrap();
        let mut seen = Seen::default();
        while seen.done.is_none() {
            seen.per_turn.push(0);
            lp.dispatch(&mut seen).unwrap();
            assert!(seen.per_turn.len() <= EVENTS, "the replay never ended");
        }
        assert_eq!(seen.per_turn, vec![64, 64, 64, 8]);
        let c = seen.done.unwrap();
        assert_eq!(c.injected, EVENTS as u64);
        assert_eq!(c.turns_deferred, 3);
        assert_eq!(
            c.timer_wakeups, 1,
            "the turns that finish a burst are not wake-ups"
        );
    }
}
