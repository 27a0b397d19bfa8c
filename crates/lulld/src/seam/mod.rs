//! The policy seam in the daemon: what `lulld` knows, told as facts to the seam's policies
//! (`lull_sched::seam::SeamPolicy`: `lull_sched::guis::Table1` while guiS is on), and their
//! actions applied by the [`Actuator`].
//!
//! | fact | told when |
//! | --- | --- |
//! | `WindowChanged` | every window-state push (`push_states`), before the app hears of it — while its cooperative threads are still where the old state put them; an app's first state comes with its `ATTACH` |
//! | `ThreadDeclared` | the display server accepted an app's `THREAD` (a thread of the attaching process, that process still the one that attached); the thread is named with the process's start time pinned at `ATTACH`, and its category noted as its cgroup label |
//! | `InputPushed` | every ESM push to an app's event thread (an event or an overflow marker), right before the packet is written, so an action on the event thread is in place when it wakes; its time is the event's injection stamp. This is the event hot path: nothing is allocated, no clock is read, and the actuator runs only if a policy asks something |
//! | `HandlerFinished` | an app's `Wait` that follows a push |
//! | `AppGone` | the app left (detach, closed connection, dropped) |
//!
//! Every fact is told in the daemon's loop as a consequence of a message; there is no timer and
//! no polling.

use std::collections::HashMap;

use lull_esm::{Delivery, Push};
use lull_model::{AppId, ThreadCategory, WindowState};
use lull_os::sys;
use lull_sched::seam::{Action, Fact, SeamPolicy, ThreadRef};
use serde::Serialize;

use crate::actuator::{Actuator, ActuatorReport};
use crate::daemon::DaemonState;

/// What the seam did: the policies that ran and the actuator's counts per action kind.
#[derive(Clone, Debug, Serialize)]
pub struct SeamReport {
    pub policies: Vec<&'static str>,
    pub actuator: ActuatorReport,
}

/// The seam's part of the daemon's state.
#[derive(Debug)]
pub(crate) struct SeamHost {
    policies: Vec<Box<dyn SeamPolicy>>,
    pub(crate) actuator: Actuator,
    /// The actions of the fact being told (kept to reuse its allocation).
    out: Vec<Action>,
    /// Per ESM slot (`AppId::index`): the generation of the app whose latest push has not been
    /// followed by a `Wait` yet. Sized when an app connects, so a push allocates nothing.
    pushed: Vec<Option<u32>>,
    /// The thread each app declared per category (`ThreadCategory::ALL`'s order).
    declared: HashMap<AppId, [Option<ThreadRef>; 4]>,
}

fn slot(category: ThreadCategory) -> usize {
    ThreadCategory::ALL
        .iter()
        .position(|&c| c == category)
        .unwrap_or(0)
}

impl SeamHost {
    pub(crate) fn new(policies: Vec<Box<dyn SeamPolicy>>, actuator: Actuator) -> SeamHost {
        SeamHost {
            policies,
            actuator,
            out: Vec::new(),
            pushed: Vec::new(),
            declared: HashMap::new(),
        }
    }

    pub(crate) fn report(&self) -> SeamReport {
        SeamReport {
            policies: self.policies.iter().map(|p| p.name()).collect(),
            actuator: self.actuator.report().clone(),
        }
    }

    /// Undoes everything the actuator still holds.
    pub(crate) fn close(self) {
        self.actuator.close();
    }

    /// Tells every policy `fact` and applies what they ask, in order.
    pub(crate) fn tell(&mut self, now_ns: u64, fact: &Fact) {
        self.out.clear();
        for p in &mut self.policies {
            p.on_fact(now_ns, fact, &mut self.out);
        }
        if !self.out.is_empty() {
            self.actuator.apply_all(&self.out);
        }
    }

    /// `app` declared `thread` as its `category` thread.
    pub(crate) fn declare(
        &mut self,
        now_ns: u64,
        app: AppId,
        category: ThreadCategory,
        thread: ThreadRef,
    ) {
        let slots = self.declared.entry(app).or_default();
        let old = slots[slot(category)].replace(thread);
        self.actuator.note_label(thread, category.name());
        self.tell(
            now_ns,
            &Fact::ThreadDeclared {
                app,
                thread,
                category,
            },
        );
        if let Some(old) = old.filter(|&o| o != thread) {
            let still = self
                .declared
                .get(&app)
                .is_some_and(|s| s.contains(&Some(old)));
            if !still {
                self.actuator.forget_label(old);
            }
        }
    }

    /// `app` left.
    pub(crate) fn app_gone(&mut self, now_ns: u64, app: AppId) {
        self.tell(now_ns, &Fact::AppGone { app });
        for thread in self.declared.remove(&app).into_iter().flatten().flatten() {
            self.actuator.forget_label(thread);
        }
        if let Some(s) = self.pushed.get_mut(app.index as usize) {
            *s = None;
        }
    }

    /// Room for `app`'s slot, so its pushes allocate nothing.
    fn connected(&mut self, app: AppId) {
        let i = app.index as usize;
        if self.pushed.len() <= i {
            self.pushed.resize(i + 1, None);
        }
        self.pushed[i] = None;
    }

    /// An ESM push to `app` is about to be written.
    fn input_pushed(&mut self, now_ns: u64, app: AppId) {
        if let Some(s) = self.pushed.get_mut(app.index as usize) {
            *s = Some(app.generation);
        }
        self.tell(now_ns, &Fact::InputPushed { app });
    }

    /// `app` sent `Wait`: if a push to it was unfinished, its handler has finished.
    fn waited(&mut self, now_ns: u64, app: AppId) {
        let Some(s) = self.pushed.get_mut(app.index as usize) else {
            return;
        };
        if *s == Some(app.generation) {
            *s = None;
            self.tell(now_ns, &Fact::HandlerFinished { app });
        }
    }
}

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

#[cfg(test)]
mod tests;
