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
}

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
        self.counters.timer_wakeups += 1;
        while let Some(ev) = self.events.get(self.next) {
            let due_ns = self.start_ns + ev.at_ns;
            let now_ns = monotonic_ns();
            if due_ns > now_ns {
                if self.timer.set_abs(due_ns, 0).is_err() {
                    break;
                }
                return PostAction::Continue;
            }
            self.counters.max_late_ns = self.counters.max_late_ns.max(now_ns - due_ns);
            self.counters.injected += 1;
            self.next += 1;
            (self.sink)(state, ctl, ev.raw, now_ns);
        }
        (self.done)(state, self.counters);
        PostAction::Remove
    }
}
