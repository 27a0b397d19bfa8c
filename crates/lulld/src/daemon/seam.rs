//! The daemon's side of the policy seam ([`crate::seam`]): the facts only the daemon knows —
//! an app connected, an input pushed, a wait, a window state about to be pushed, a thread
//! declared, an app gone — told to the seam where they happen.

use lull_esm::{Delivery, Push};
use lull_model::{AppId, ThreadCategory, WindowState};
use lull_os::sys;
use lull_sched::seam::{Fact, ThreadRef};

use super::DaemonState;
use crate::seam::{SeamHost, SeamReport};

impl DaemonState {
    /// An app connected to the ESM.
    pub(crate) fn seam_app_connected(&mut self, app: AppId) {
        if let Some(s) = self.seam.as_mut() {
            s.connected(app);
        }
    }

    /// The event hot path: `push` is about to be written. The fact's time is the event's
    /// injection stamp (no clock is read); an overflow marker, which has none, reads the clock.
    pub(crate) fn seam_input_pushed(&mut self, push: &Push) {
        if let Some(s) = self.seam.as_mut() {
            let now_ns = match push.delivery {
                Delivery::Event { event, .. } => event.injected_ns,
                Delivery::Overflow { .. } => sys::monotonic_ns(),
            };
            s.input_pushed(now_ns, push.app);
        }
    }

    /// `app` sent `Wait` (before the ESM hands it the next queued event, if any).
    pub(crate) fn seam_wait(&mut self, app: AppId) {
        if let Some(s) = self.seam.as_mut() {
            s.waited(sys::monotonic_ns(), app);
        }
    }

    /// Window states about to be pushed, of apps still attached to the display server.
    pub(crate) fn seam_window_states(&mut self, pushes: &[(AppId, WindowState)]) {
        let (Some(s), Some(k)) = (self.seam.as_mut(), self.kds.as_ref()) else {
            return;
        };
        let now = sys::monotonic_ns();
        for &(app, window) in pushes {
            if k.server().pid(app).is_some() {
                s.tell(now, &Fact::WindowChanged { app, window });
            }
        }
    }

    /// `app` declared `tid` as its `category` thread (the server accepted it).
    pub(crate) fn seam_thread_declared(&mut self, app: AppId, category: ThreadCategory, tid: u32) {
        let (Some(s), Some(k)) = (self.seam.as_mut(), self.kds.as_ref()) else {
            return;
        };
        let pid = k.server().pid(app).and_then(|p| i32::try_from(p).ok());
        let ids = (pid, i32::try_from(tid).ok(), k.pid_start_ticks(app));
        if let (Some(pid), Some(tid), Some(process_start_ticks)) = ids {
            let thread = ThreadRef {
                pid,
                tid,
                process_start_ticks,
            };
            s.declare(sys::monotonic_ns(), app, category, thread);
        }
    }

    /// `app` left the daemon.
    pub(crate) fn seam_app_gone(&mut self, app: AppId) {
        if let Some(s) = self.seam.as_mut() {
            s.app_gone(sys::monotonic_ns(), app);
        }
    }

    /// What the seam did so far, when it runs (guiS on).
    #[must_use]
    pub fn seam_report(&self) -> Option<SeamReport> {
        self.seam.as_ref().map(SeamHost::report)
    }
}
