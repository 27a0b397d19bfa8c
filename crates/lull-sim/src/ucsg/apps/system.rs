//! The system side of the phone every scenario has: the input dispatcher (system_server's
//! `InputDispatcher`), the compositor (SurfaceFlinger), system_server's periodic housekeeping,
//! and the home screen (the launcher), which is idle unless touched. Their threads belong to no
//! app (UCSG: system, medium sensitivity) except the launcher's.

use lull_model::time::NS_PER_S;

use crate::kernel::Action;

/// Reading a touch and dispatching it to the focused window. ESTIMATE 0.3 M Cortex-A15 cycles
/// (InputReader + InputDispatcher, a few hundred µs on a phone core).
pub const INPUT_DISPATCH_CYCLES: u64 = 300_000;
/// Composing one posted frame (SurfaceFlinger with hardware composer: mostly setup work on the
/// CPU). ESTIMATE 1 M cycles.
pub const COMPOSE_CYCLES: u64 = 1_000_000;
/// system_server's housekeeping wakes once a second (alarms, battery and connectivity polling).
/// ESTIMATE period and 1 M cycles of work.
pub const HOUSEKEEPING_PERIOD_NS: u64 = NS_PER_S;
pub const HOUSEKEEPING_CYCLES: u64 = 1_000_000;
/// With the screen off, Android batches housekeeping: ESTIMATE once every 10 s.
pub const HOUSEKEEPING_PERIOD_SCREEN_OFF_NS: u64 = 10 * NS_PER_S;

/// The system threads' state.
#[derive(Clone, Debug)]
pub(crate) struct System {
    pub input: usize,
    pub compositor: usize,
    pub housekeeping: usize,
    /// Touches read by the driver, not yet dispatched: their indices.
    pub touches: std::collections::VecDeque<u32>,
    dispatching: Option<u32>,
    /// Frames posted and not yet composed.
    frames: u64,
    composing: bool,
    housekeeping_busy: bool,
    next_housekeeping_ns: u64,
    pub screen_on: bool,
}

impl System {
    pub fn new(input: usize, compositor: usize, housekeeping: usize) -> System {
        System {
            input,
            compositor,
            housekeeping,
            touches: std::collections::VecDeque::new(),
            dispatching: None,
            frames: 0,
            composing: false,
            housekeeping_busy: false,
            next_housekeeping_ns: 0,
            screen_on: true,
        }
    }

    /// The input thread's next step; returns the action and a touch dispatched just now.
    pub fn input_step(&mut self) -> (Action, Option<u32>) {
        let done = self.dispatching.take();
        if let Some(i) = self.touches.pop_front() {
            self.dispatching = Some(i);
            return (Action::Compute(INPUT_DISPATCH_CYCLES), done);
        }
        (Action::Block, done)
    }

    /// A frame was posted; returns whether the compositor must be woken.
    pub fn post_frame(&mut self) -> bool {
        self.frames += 1;
        !self.composing
    }

    pub fn compositor_step(&mut self) -> Action {
        if self.composing {
            self.composing = false;
            self.frames = self.frames.saturating_sub(1);
        }
        if self.frames > 0 {
            self.composing = true;
            return Action::Compute(COMPOSE_CYCLES);
        }
        Action::Block
    }

    pub fn housekeeping_step(&mut self, now: u64) -> Action {
        if self.housekeeping_busy {
            self.housekeeping_busy = false;
        } else if now >= self.next_housekeeping_ns {
            self.housekeeping_busy = true;
            let period = if self.screen_on {
                HOUSEKEEPING_PERIOD_NS
            } else {
                HOUSEKEEPING_PERIOD_SCREEN_OFF_NS
            };
            self.next_housekeeping_ns = now + period;
            return Action::Compute(HOUSEKEEPING_CYCLES);
        }
        Action::Sleep(self.next_housekeeping_ns)
    }
}
