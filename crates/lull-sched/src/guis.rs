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

use std::collections::BTreeMap;

use lull_model::{AppId, ThreadCategory, WindowState};

use crate::seam::{Action, Fact, SeamPolicy, ThreadRef};

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

/// Whether table 1 gates threads of `category` by their app's window state alone: drawing and
/// foreground threads. These are the ones an enforcer stops and restarts on window-state changes;
/// the event thread is gated by the ESM's push, the background thread always runs.
#[must_use]
pub fn gated_by_window(category: ThreadCategory) -> bool {
    matches!(
        category,
        ThreadCategory::Drawing | ThreadCategory::Foreground
    )
}

/// Where an app stands for a scheduler that ranks rather than gates (lull-scx, which must keep
/// every runnable task served within sched_ext's watchdog, so it cannot hold a thread back as
/// table 1 does): in front with the screen lit, visible behind the front app, or behind.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum WindowClass {
    Front,
    Visible,
    Behind,
}

impl WindowClass {
    /// The class of an app in `window`.
    #[must_use]
    pub fn of(window: WindowState) -> WindowClass {
        use lull_model::{Screen, Visibility};
        if window.screen != Screen::On {
            WindowClass::Behind
        } else if window.in_foreground() {
            WindowClass::Front
        } else if window.visibility == Visibility::Visible {
            WindowClass::Visible
        } else {
            WindowClass::Behind
        }
    }

    /// The code lull-scx's BPF side reads (`enum lull_class` in its `intf.h`; 0 means a thread
    /// of no GUI app).
    #[must_use]
    pub fn code(self) -> u32 {
        match self {
            WindowClass::Front => 1,
            WindowClass::Visible => 2,
            WindowClass::Behind => 3,
        }
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

/// One GUI application as the live display server sees it when deciding whether the device is
/// idle: the ESM's view of its event thread and the window manager's view of its window, plus
/// which gated threads it has registered.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct GuiApp {
    /// The app's event thread is in `EV_WAIT`: no event pushed to it is unfinished.
    pub event_waiting: bool,
    pub window: WindowState,
    /// The app registered a drawing thread.
    pub has_drawing: bool,
    /// The app registered a foreground thread.
    pub has_foreground: bool,
}

/// The live idle-forcing rule: the device is idle when there is at least one GUI application,
/// every app's event thread is in `EV_WAIT`, and no app has a registered drawing or foreground
/// thread that [`may_run`] allows. Background threads always may run and do not keep the device
/// out of idle (the seed's music and downloads continue while the user is away). With no GUI
/// application at all there is nothing guiS governs, so it forces nothing.
#[must_use]
pub fn idle_now(apps: &[GuiApp]) -> bool {
    !apps.is_empty()
        && apps.iter().all(|a| {
            let gated_thread_may_run = may_run(ThreadCategory::Event, a.window, !a.event_waiting)
                || (a.has_drawing && may_run(ThreadCategory::Drawing, a.window, false))
                || (a.has_foreground && may_run(ThreadCategory::Foreground, a.window, false));
            !gated_thread_may_run
        })
}

/// Turns the level "idle now" into the event "idle just began", so the idle hook fires once per
/// entry into idle however often the rule is re-evaluated while idle lasts. Starts not idle.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct IdleEdge {
    idle: bool,
}

impl IdleEdge {
    #[must_use]
    pub fn new() -> IdleEdge {
        IdleEdge::default()
    }

    /// Records the latest evaluation; true exactly when it moves from not idle to idle.
    pub fn update(&mut self, idle: bool) -> bool {
        let rising = idle && !self.idle;
        self.idle = idle;
        rising
    }

    /// The level last recorded.
    #[must_use]
    pub fn is_idle(&self) -> bool {
        self.idle
    }
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

/// Table 1 on the policy seam: each declared drawing and foreground thread is frozen while its
/// app's window state forbids it and thawed while it allows it, asked again at every window
/// change of the app. The event thread (gated by the ESM's push) and background threads (always
/// allowed) are not the seam's; threads of apps that declared nothing are never touched. A
/// category declared again with another thread releases the old one; an app that leaves releases
/// all of its.
#[derive(Clone, Debug, Default)]
pub struct Table1 {
    apps: BTreeMap<AppId, GatedApp>,
}

#[derive(Clone, Debug, Default)]
struct GatedApp {
    /// Unknown until the substrate says.
    window: Option<WindowState>,
    threads: Vec<(ThreadCategory, ThreadRef)>,
}

impl Table1 {
    #[must_use]
    pub fn new() -> Table1 {
        Table1::default()
    }

    fn ask(category: ThreadCategory, thread: ThreadRef, window: WindowState) -> Action {
        if may_run(category, window, false) {
            Action::Thaw { thread }
        } else {
            Action::Freeze { thread }
        }
    }
}

impl SeamPolicy for Table1 {
    fn name(&self) -> &'static str {
        "guis"
    }

    fn on_fact(&mut self, _now_ns: u64, fact: &Fact, out: &mut Vec<Action>) {
        match *fact {
            Fact::ThreadDeclared {
                app,
                thread,
                category,
            } if gated_by_window(category) => {
                let a = self.apps.entry(app).or_default();
                match a.threads.iter_mut().find(|(c, _)| *c == category) {
                    Some((_, t)) if *t == thread => {}
                    Some((_, t)) => {
                        out.push(Action::Release { thread: *t });
                        *t = thread;
                    }
                    None => a.threads.push((category, thread)),
                }
                if let Some(w) = a.window {
                    out.push(Self::ask(category, thread, w));
                }
            }
            Fact::WindowChanged { app, window } => {
                let a = self.apps.entry(app).or_default();
                a.window = Some(window);
                out.extend(a.threads.iter().map(|&(c, t)| Self::ask(c, t, window)));
            }
            Fact::AppGone { app } => {
                if let Some(a) = self.apps.remove(&app) {
                    out.extend(
                        a.threads
                            .iter()
                            .map(|&(_, thread)| Action::Release { thread }),
                    );
                }
            }
            Fact::ThreadDeclared { .. }
            | Fact::InputPushed { .. }
            | Fact::HandlerFinished { .. }
            | Fact::Forked { .. }
            | Fact::Exited { .. }
            | Fact::Adopted { .. }
            | Fact::RunQueues { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_classes() {
        assert_eq!(WindowClass::of(WindowState::FRONT), WindowClass::Front);
        let behind = w(Stacking::Background, Visibility::Covered, Screen::On);
        assert_eq!(WindowClass::of(behind), WindowClass::Behind);
        let visible = w(Stacking::Background, Visibility::Visible, Screen::On);
        assert_eq!(WindowClass::of(visible), WindowClass::Visible);
        let dark = w(Stacking::Foreground, Visibility::Visible, Screen::Off);
        assert_eq!(WindowClass::of(dark), WindowClass::Behind);
        let codes: Vec<u32> = [
            WindowClass::Front,
            WindowClass::Visible,
            WindowClass::Behind,
        ]
        .iter()
        .map(|c| c.code())
        .collect();
        assert_eq!(codes, [1, 2, 3]);
    }
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

    fn every_window() -> Vec<WindowState> {
        let mut out = Vec::new();
        for stacking in [Stacking::Foreground, Stacking::Background] {
            for visibility in [Visibility::Visible, Visibility::Covered] {
                for screen in [Screen::On, Screen::Off] {
                    out.push(w(stacking, visibility, screen));
                }
            }
        }
        out
    }

    #[test]
    fn gated_by_window_is_where_table_1_depends_on_the_window_alone() {
        for c in ThreadCategory::ALL {
            let runs = |pending| {
                every_window()
                    .into_iter()
                    .map(|win| may_run(c, win, pending))
                    .collect::<Vec<_>>()
            };
            let varies = |v: &[bool]| v.iter().any(|&r| r != v[0]);
            let (idle, pending) = (runs(false), runs(true));
            assert_eq!(
                gated_by_window(c),
                varies(&idle) && idle == pending,
                "{c:?}"
            );
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
        let idle_by_default =
            |apps: &[AppActivity], now_ns| force_idle(apps, now_ns, DEFAULT_IDLE_FORCE_HOLDOFF_NS);
        let quiet = AppActivity {
            runnable_allowed: 0,
            event_pending: false,
            last_input_ns: Some(0),
            last_active_ns: None,
        };
        assert!(!idle_by_default(&[quiet], 499_999_999));
        assert!(idle_by_default(&[quiet], 500_000_000));
        let busy = AppActivity {
            runnable_allowed: 1,
            ..quiet
        };
        assert!(!idle_by_default(&[quiet, busy], 10_000_000_000));
        let pending = AppActivity {
            event_pending: true,
            ..quiet
        };
        assert!(!idle_by_default(&[pending], 10_000_000_000));
        let never_touched = AppActivity {
            last_input_ns: None,
            ..quiet
        };
        assert!(idle_by_default(&[never_touched], 0));
        let just_ran = AppActivity {
            last_input_ns: None,
            last_active_ns: Some(9_800_000_000),
            ..quiet
        };
        assert!(!idle_by_default(&[just_ran], 10_000_000_000));
        assert!(idle_by_default(&[just_ran], 10_300_000_000));
        assert!(idle_by_default(&[], 0));
    }

    fn app(event_waiting: bool, window: WindowState, drawing: bool, foreground: bool) -> GuiApp {
        GuiApp {
            event_waiting,
            window,
            has_drawing: drawing,
            has_foreground: foreground,
        }
    }

    #[test]
    fn idle_now_needs_an_app_and_every_event_thread_waiting() {
        assert!(!idle_now(&[]));
        let hidden = w(Stacking::Background, Visibility::Covered, Screen::Off);
        assert!(idle_now(&[app(true, hidden, true, true)]));
        assert!(!idle_now(&[app(false, hidden, true, true)]));
        assert!(!idle_now(&[
            app(true, hidden, false, false),
            app(false, hidden, false, false)
        ]));
    }

    #[test]
    fn idle_now_follows_table_1_for_drawing_and_foreground_threads() {
        for stacking in [Stacking::Foreground, Stacking::Background] {
            for visibility in [Visibility::Visible, Visibility::Covered] {
                for screen in [Screen::On, Screen::Off] {
                    let win = w(stacking, visibility, screen);
                    for drawing in [false, true] {
                        for foreground in [false, true] {
                            let blocked =
                                (drawing && win.can_see()) || (foreground && win.in_foreground());
                            assert_eq!(
                                idle_now(&[app(true, win, drawing, foreground)]),
                                !blocked,
                                "{win:?} drawing={drawing} foreground={foreground}"
                            );
                        }
                    }
                }
            }
        }
        // A foreground app with only an event thread (and background threads) can be idle.
        assert!(idle_now(&[app(true, WindowState::FRONT, false, false)]));
        // The screen going dark stops the drawing thread but not foreground work.
        let dark = w(Stacking::Foreground, Visibility::Visible, Screen::Off);
        assert!(idle_now(&[app(true, dark, true, false)]));
        assert!(!idle_now(&[app(true, dark, true, true)]));
    }

    #[test]
    fn idle_edge_fires_on_entry_only() {
        let mut e = IdleEdge::new();
        assert!(!e.is_idle());
        assert!(!e.update(false));
        assert!(e.update(true));
        assert!(!e.update(true));
        assert!(e.is_idle());
        assert!(!e.update(false));
        assert!(e.update(true));
    }

    #[test]
    fn routing_and_triage() {
        assert_eq!(irq_target(true), IrqTarget::Companion);
        assert_eq!(irq_target(false), IrqTarget::MainCluster);
        assert!(!triage_wakes_main(0));
        assert!(triage_wakes_main(2));
    }

    proptest::proptest! {
        /// The hook fires once per maximal run of idle evaluations, on the run's first one.
        #[test]
        fn idle_edge_fires_once_per_rising_edge(levels in proptest::collection::vec(proptest::bool::ANY, 0..200)) {
            let mut e = IdleEdge::new();
            let fired: Vec<bool> = levels.iter().map(|&l| e.update(l)).collect();
            let runs = levels
                .split(|&l| !l)
                .filter(|run| !run.is_empty())
                .count();
            proptest::prop_assert_eq!(fired.iter().filter(|&&f| f).count(), runs);
            for (i, &f) in fired.iter().enumerate() {
                if f {
                    proptest::prop_assert!(levels[i]);
                    proptest::prop_assert!(i == 0 || !levels[i - 1]);
                }
            }
            proptest::prop_assert_eq!(e.is_idle(), levels.last().copied().unwrap_or(false));
        }
    }

    #[test]
    fn table_1_on_the_seam_freezes_and_thaws_declared_threads_with_the_window() {
        use crate::seam::{Action, Fact, SeamPolicy, ThreadRef};
        use lull_model::AppId;
        let app = AppId {
            index: 0,
            generation: 1,
        };
        let thread = |tid| ThreadRef {
            pid: 10,
            tid,
            process_start_ticks: 4242,
        };
        let (draw, fg, ev) = (thread(11), thread(12), thread(13));
        let mut p = Table1::new();
        // The name the daemon reports the policy by (`SeamPolicy::name`).
        assert_eq!(p.name(), "guis");
        let mut out = Vec::new();
        let declare = |thread, category| Fact::ThreadDeclared {
            app,
            thread,
            category,
        };
        // Before the window is known nothing is asked; event threads are never the seam's.
        p.on_fact(0, &declare(draw, ThreadCategory::Drawing), &mut out);
        p.on_fact(0, &declare(ev, ThreadCategory::Event), &mut out);
        assert!(out.is_empty());
        p.on_fact(
            0,
            &Fact::WindowChanged {
                app,
                window: WindowState::FRONT,
            },
            &mut out,
        );
        assert_eq!(out, vec![Action::Thaw { thread: draw }]);
        out.clear();
        p.on_fact(0, &declare(fg, ThreadCategory::Foreground), &mut out);
        assert_eq!(out, vec![Action::Thaw { thread: fg }]);
        // Covered: the drawing thread stops, the foreground thread runs on.
        out.clear();
        let covered = w(Stacking::Foreground, Visibility::Covered, Screen::On);
        p.on_fact(
            1,
            &Fact::WindowChanged {
                app,
                window: covered,
            },
            &mut out,
        );
        assert_eq!(
            out,
            vec![Action::Freeze { thread: draw }, Action::Thaw { thread: fg }]
        );
        // Behind: both stop; asked again at every change (levels, not edges).
        out.clear();
        let back = w(Stacking::Background, Visibility::Covered, Screen::On);
        p.on_fact(2, &Fact::WindowChanged { app, window: back }, &mut out);
        p.on_fact(3, &Fact::WindowChanged { app, window: back }, &mut out);
        assert_eq!(
            out,
            vec![
                Action::Freeze { thread: draw },
                Action::Freeze { thread: fg },
                Action::Freeze { thread: draw },
                Action::Freeze { thread: fg },
            ]
        );
        // Declared again with another thread: the old one is released, the new one gated.
        out.clear();
        let draw2 = thread(14);
        p.on_fact(4, &declare(draw2, ThreadCategory::Drawing), &mut out);
        assert_eq!(
            out,
            vec![
                Action::Release { thread: draw },
                Action::Freeze { thread: draw2 }
            ]
        );
        // Input facts change nothing of table 1's window gating.
        out.clear();
        p.on_fact(5, &Fact::InputPushed { app }, &mut out);
        p.on_fact(5, &Fact::HandlerFinished { app }, &mut out);
        assert!(out.is_empty());
        p.on_fact(6, &Fact::AppGone { app }, &mut out);
        assert_eq!(
            out,
            vec![
                Action::Release { thread: draw2 },
                Action::Release { thread: fg }
            ]
        );
    }

    #[test]
    fn table_1_on_the_seam_tells_threads_apart_by_their_process_start_time() {
        use crate::seam::{Action, Fact, SeamPolicy, ThreadRef};
        use lull_model::AppId;
        let app = AppId {
            index: 2,
            generation: 0,
        };
        let back = w(Stacking::Background, Visibility::Covered, Screen::On);
        let old = ThreadRef {
            pid: 10,
            tid: 11,
            process_start_ticks: 100,
        };
        // The same ids in a process started later: another thread.
        let new = ThreadRef {
            process_start_ticks: 250,
            ..old
        };
        let mut p = Table1::new();
        let mut out = Vec::new();
        p.on_fact(0, &Fact::WindowChanged { app, window: back }, &mut out);
        for thread in [old, old, new] {
            p.on_fact(
                1,
                &Fact::ThreadDeclared {
                    app,
                    thread,
                    category: ThreadCategory::Drawing,
                },
                &mut out,
            );
        }
        assert_eq!(
            out,
            vec![
                Action::Freeze { thread: old },
                // Declared again as itself: only asked again.
                Action::Freeze { thread: old },
                Action::Release { thread: old },
                Action::Freeze { thread: new },
            ]
        );
    }

    #[test]
    fn table_1_on_the_seam_matches_may_run_for_every_window() {
        use crate::seam::{Action, Fact, SeamPolicy, ThreadRef};
        use lull_model::AppId;
        let app = AppId {
            index: 3,
            generation: 0,
        };
        for category in [ThreadCategory::Drawing, ThreadCategory::Foreground] {
            for win in every_window() {
                let mut p = Table1::new();
                let mut out = Vec::new();
                let thread = ThreadRef {
                    pid: 1,
                    tid: 2,
                    process_start_ticks: 7,
                };
                p.on_fact(0, &Fact::WindowChanged { app, window: win }, &mut out);
                p.on_fact(
                    0,
                    &Fact::ThreadDeclared {
                        app,
                        thread,
                        category,
                    },
                    &mut out,
                );
                let want = if may_run(category, win, false) {
                    Action::Thaw { thread }
                } else {
                    Action::Freeze { thread }
                };
                assert_eq!(out, vec![want], "{category:?} {win:?}");
            }
        }
    }
}
