//! guiS (seed 000, chapter 5): which thread of a GUI application may run.
//!
//! Table 1 of the seed, with the pseudo-code of figures 22–25:
//!
//! | category   | the scheduler runs this thread            |
//! |------------|-------------------------------------------|
//! | event      | when an event is received from the ESM    |
//! | drawing    | when the app is visible to the user       |
//! | foreground | when the app is in the foreground         |
//! | background | always                                    |
//!
//! Threads that belong to no GUI application are not gated at all (plain CFS); callers simply do
//! not ask. A gated thread still obeys the ordinary rules: a sleeping thread runs only once its
//! sleep condition is resolved (the seed's "all four threads abide by the same scheduling rules").

use lull_model::{ThreadCategory, WindowState};

/// Whether guiS lets a thread of `category` run, given its app's window state and whether the ESM
/// has pushed an event to the app that its event thread has not finished (figure 22: the ESM sets
/// the thread RUNNING when it pushes; `EV_WAIT` means nothing to do).
#[must_use]
pub fn may_run(category: ThreadCategory, window: WindowState, event_pending: bool) -> bool {
    match category {
        ThreadCategory::Event => event_pending,
        // Figure 23: foreground and CAN_SEE(); `can_see` already requires the foreground.
        ThreadCategory::Drawing => window.can_see(),
        ThreadCategory::Foreground => window.in_foreground(),
        ThreadCategory::Background => true,
    }
}

/// What guiS knows about one GUI application when it decides whether the device may rest.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct AppActivity {
    /// Threads of the app that are runnable or running and that [`may_run`] allows.
    pub runnable_allowed: u32,
    /// Whether the app's event thread is busy with (or has queued) an ESM event.
    pub event_pending: bool,
    /// Time of the app's latest input event, if any.
    pub last_input_ns: Option<u64>,
    /// Last time one of the app's threads ran, if ever. An app that woke moments ago (a video
    /// player between two frames) is active even while all its threads sleep.
    pub last_active_ns: Option<u64>,
}

/// Default hold-off between the last user input and forced idle.
///
/// Source: seed 001 (UCSG) keeps an app at high sensitivity for 500 ms after a touch, the window
/// in which the user is taken to be interacting. Forcing idle sooner would power the cores down
/// between the strokes of one gesture and pay the cluster switch on every event.
pub const DEFAULT_IDLE_FORCE_HOLDOFF_NS: u64 = 500_000_000;

/// guiS idle forcing (seed 000, chapter 5): when every ESM application sleeps — no GUI thread that
/// guiS would let run is runnable, no event is pending, none of its threads ran and the user has
/// been still for `holdoff_ns` — guiS tells the power subsystem that the user-input timeout has passed, so the
/// main cores may be powered down and event triage moves to the companion core.
#[must_use]
pub fn force_idle(apps: &[AppActivity], now_ns: u64, holdoff_ns: u64) -> bool {
    apps.iter().all(|a| {
        a.runnable_allowed == 0
            && !a.event_pending
            && a.last_input_ns
                .is_none_or(|t| now_ns.saturating_sub(t) >= holdoff_ns)
            && a.last_active_ns
                .is_none_or(|t| now_ns.saturating_sub(t) >= holdoff_ns)
    })
}

/// Where the interrupt controller should send device interrupts: to the companion core while
/// guiS has forced idle (it triages events and wakes the main cores only for an event some app
/// listens to), to the main cluster otherwise.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IrqTarget {
    MainCluster,
    Companion,
}

/// The interrupt routing that goes with the idle-forcing decision.
#[must_use]
pub fn irq_target(idle_forced: bool) -> IrqTarget {
    if idle_forced {
        IrqTarget::Companion
    } else {
        IrqTarget::MainCluster
    }
}

/// The companion core's triage of one event while idle is forced: wake the main cluster only if
/// some application listens for it; otherwise the event is discarded and the device rests.
#[must_use]
pub fn triage_wakes_main(listeners: usize) -> bool {
    listeners > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_model::{Screen, Stacking, Visibility};

    fn w(stacking: Stacking, visibility: Visibility, screen: Screen) -> WindowState {
        WindowState {
            stacking,
            visibility,
            screen,
        }
    }

    #[test]
    fn table_1_over_every_window_state() {
        for stacking in [Stacking::Foreground, Stacking::Background] {
            for visibility in [Visibility::Visible, Visibility::Covered] {
                for screen in [Screen::On, Screen::Off] {
                    let win = w(stacking, visibility, screen);
                    let fg = stacking == Stacking::Foreground;
                    let seen = fg && visibility == Visibility::Visible && screen == Screen::On;
                    for pending in [false, true] {
                        assert_eq!(may_run(ThreadCategory::Event, win, pending), pending);
                        assert_eq!(may_run(ThreadCategory::Drawing, win, pending), seen);
                        assert_eq!(may_run(ThreadCategory::Foreground, win, pending), fg);
                        assert!(may_run(ThreadCategory::Background, win, pending));
                    }
                }
            }
        }
    }

    #[test]
    fn screen_off_stops_drawing_but_not_foreground_work() {
        let dark = w(Stacking::Foreground, Visibility::Visible, Screen::Off);
        assert!(!may_run(ThreadCategory::Drawing, dark, false));
        assert!(may_run(ThreadCategory::Foreground, dark, false));
    }

    #[test]
    fn idle_is_forced_only_when_everything_sleeps_after_the_holdoff() {
        let quiet = AppActivity {
            runnable_allowed: 0,
            event_pending: false,
            last_input_ns: Some(0),
            last_active_ns: None,
        };
        assert!(!force_idle(
            &[quiet],
            499_999_999,
            DEFAULT_IDLE_FORCE_HOLDOFF_NS
        ));
        assert!(force_idle(
            &[quiet],
            500_000_000,
            DEFAULT_IDLE_FORCE_HOLDOFF_NS
        ));
        let busy = AppActivity {
            runnable_allowed: 1,
            ..quiet
        };
        assert!(!force_idle(
            &[quiet, busy],
            10_000_000_000,
            DEFAULT_IDLE_FORCE_HOLDOFF_NS
        ));
        let pending = AppActivity {
            event_pending: true,
            ..quiet
        };
        assert!(!force_idle(
            &[pending],
            10_000_000_000,
            DEFAULT_IDLE_FORCE_HOLDOFF_NS
        ));
        let never_touched = AppActivity {
            last_input_ns: None,
            ..quiet
        };
        assert!(force_idle(
            &[never_touched],
            0,
            DEFAULT_IDLE_FORCE_HOLDOFF_NS
        ));
        let just_ran = AppActivity {
            last_input_ns: None,
            last_active_ns: Some(9_800_000_000),
            ..quiet
        };
        assert!(!force_idle(
            &[just_ran],
            10_000_000_000,
            DEFAULT_IDLE_FORCE_HOLDOFF_NS
        ));
        assert!(force_idle(
            &[just_ran],
            10_300_000_000,
            DEFAULT_IDLE_FORCE_HOLDOFF_NS
        ));
        assert!(force_idle(&[], 0, DEFAULT_IDLE_FORCE_HOLDOFF_NS));
    }

    #[test]
    fn routing_and_triage() {
        assert_eq!(irq_target(true), IrqTarget::Companion);
        assert_eq!(irq_target(false), IrqTarget::MainCluster);
        assert!(!triage_wakes_main(0));
        assert!(triage_wakes_main(2));
    }
}
