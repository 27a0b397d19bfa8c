//! The file manager (OI File Manager, seed 001 §4.1, Table II: the interactive foreground app):
//! ten times, a touch opens a directory and, a second later, a touch closes it again; the next
//! open comes half a second after the close ("open and close a directory (which took 1s and
//! 0.5s, respectively) 10 times"). Opening: the UI thread handles the click and starts the
//! directory scanner thread, which lists the directory; the UI thread then binds the list and
//! draws. Closing: the UI thread pops back to the parent listing and draws. The response time
//! is the time from the touch until the action's work is done (its last drawing finished).

use lull_model::time::NS_PER_MS;

use crate::kernel::Action;

/// Touch pairs: seed 001 §4.1 ("10 times").
pub const FM_REPETITIONS: u32 = 10;
/// From an open touch to the close touch, and from a close touch to the next open: seed 001 §4.1
/// (1 s and 0.5 s).
pub const FM_OPEN_TO_CLOSE_NS: u64 = 1000 * NS_PER_MS;
pub const FM_CLOSE_TO_OPEN_NS: u64 = 500 * NS_PER_MS;

/// Opening, UI thread before the scan (click handling, starting the scanner), Cortex-A15
/// cycles. ESTIMATE 20 M: about 12 ms at 1.6 GHz of Dalvik event handling and view updates.
pub const FM_OPEN_CLICK_CYCLES: u64 = 20_000_000;
/// Opening, the scanner thread listing a directory of about a hundred entries (`listFiles`, a
/// `stat` and a MIME lookup each, sorting). ESTIMATE 60 M cycles: about 0.6 M per entry.
pub const FM_SCAN_CYCLES: u64 = 60_000_000;
/// Opening, UI thread after the scan: binding the list adapter, inflating the visible rows,
/// layout and drawing a 1080p frame. ESTIMATE 40 M cycles.
pub const FM_OPEN_BIND_CYCLES: u64 = 40_000_000;
/// Closing: back to the parent listing from the app's cache, layout and drawing. ESTIMATE 40 M
/// cycles (the bind step of an open without the scan).
pub const FM_CLOSE_CYCLES: u64 = 40_000_000;

/// What a touch asks of the file manager.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum FmAction {
    Open,
    Close,
}

/// The touch script: (time from the start of the script, action), 20 touches.
pub(crate) fn script() -> Vec<(u64, FmAction)> {
    let mut t = 0;
    let mut out = Vec::new();
    for _ in 0..FM_REPETITIONS {
        out.push((t, FmAction::Open));
        t += FM_OPEN_TO_CLOSE_NS;
        out.push((t, FmAction::Close));
        t += FM_CLOSE_TO_OPEN_NS;
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum UiStep {
    Idle,
    Click,
    WaitScan,
    Bind,
    Close,
}

/// The file manager's UI and scanner threads.
#[derive(Clone, Debug)]
pub(crate) struct FileManager {
    pub ui: usize,
    pub scanner: usize,
    /// Touches handed over by the input dispatcher, in order: (touch time, action).
    queue: std::collections::VecDeque<(u64, FmAction)>,
    current: Option<u64>,
    ui_step: UiStep,
    /// The spec's `apps.file_manager_work_pct`.
    work_pct: u64,
    scan_pending: bool,
    scan_done: bool,
    /// Response time of every action, ns.
    pub responses_ns: Vec<u64>,
}

impl FileManager {
    /// The UI and scanner threads; `work_pct` scales the four cycle counts above (100: as they
    /// are).
    pub fn new(ui: usize, scanner: usize, work_pct: u32) -> FileManager {
        FileManager {
            work_pct: u64::from(work_pct),
            ui,
            scanner,
            queue: std::collections::VecDeque::new(),
            current: None,
            ui_step: UiStep::Idle,
            scan_pending: false,
            scan_done: false,
            responses_ns: Vec::new(),
        }
    }

    /// `cycles` scaled by the spec's work percentage.
    fn work(&self, cycles: u64) -> u64 {
        cycles * self.work_pct / 100
    }

    /// The input dispatcher delivers a touch made at `touch_ns`.
    pub fn deliver(&mut self, touch_ns: u64, action: FmAction) {
        self.queue.push_back((touch_ns, action));
    }

    /// The UI thread's next step; `wake` collects threads to wake.
    pub fn ui_step(&mut self, now: u64, wake: &mut Vec<usize>) -> Action {
        match self.ui_step {
            UiStep::Click => {
                self.scan_pending = true;
                self.scan_done = false;
                wake.push(self.scanner);
                self.ui_step = UiStep::WaitScan;
                return Action::Block;
            }
            UiStep::WaitScan if self.scan_done => {
                self.ui_step = UiStep::Bind;
                return Action::Compute(self.work(FM_OPEN_BIND_CYCLES));
            }
            UiStep::WaitScan => return Action::Block,
            UiStep::Bind | UiStep::Close => {
                if let Some(touch) = self.current.take() {
                    self.responses_ns.push(now - touch);
                }
                self.ui_step = UiStep::Idle;
            }
            UiStep::Idle => {}
        }
        let Some((touch, action)) = self.queue.pop_front() else {
            return Action::Block;
        };
        self.current = Some(touch);
        match action {
            FmAction::Open => {
                self.ui_step = UiStep::Click;
                Action::Compute(self.work(FM_OPEN_CLICK_CYCLES))
            }
            FmAction::Close => {
                self.ui_step = UiStep::Close;
                Action::Compute(self.work(FM_CLOSE_CYCLES))
            }
        }
    }

    /// The scanner thread's next step.
    pub fn scanner_step(&mut self, wake: &mut Vec<usize>) -> Action {
        if self.scan_pending {
            self.scan_pending = false;
            return Action::Compute(self.work(FM_SCAN_CYCLES));
        }
        if !self.scan_done && self.ui_step == UiStep::WaitScan {
            self.scan_done = true;
            wake.push(self.ui);
        }
        Action::Block
    }

    /// Every action of the script has been answered.
    pub fn done(&self) -> bool {
        self.responses_ns.len() == 2 * FM_REPETITIONS as usize
    }
}
