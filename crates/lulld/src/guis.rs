//! guiS on stock Linux, inside `lulld` (seed 000, chapter 5): table 1 enforced by the kernel,
//! idle forcing, and per-category accounting.
//!
//! - **Cooperative half** (not here): the client runtime's gates (`lull::kds_runtime`, in
//!   `lull-client`) park the drawing thread while its app cannot be seen, the foreground thread
//!   while it is not in front; the event thread runs only when the ESM pushed it an event. They
//!   are per app (`AppOptions::guis`).
//! - **Kernel half** ([`Daemon::enable_guis`]): when an app declares its drawing or foreground
//!   thread (`THREAD`), the daemon adopts that thread into the cgroup freezer
//!   ([`crate::freezer`]). On every window-state change of the app, before the state is pushed
//!   to it, each adopted thread that table 1 forbids is frozen and each it allows is thawed. Only
//!   declared drawing and foreground threads are ever touched: the event thread is gated by the
//!   ESM's push, the background thread always runs, and a process that declared nothing (not a
//!   GUI app) is never moved (the fair-scheduling compatibility mode). A category re-declared
//!   with another thread gives the old thread back ([`Freezer::release_thread`]); a process is
//!   given back once the freezer holds no thread of it for another app. A pid whose process
//!   exited and was reused is never moved ([`GuisCounters::pid_reused`]). Everything happens in
//!   the daemon's loop as a consequence of a message; there is no timer and no polling.
//! - **Idle forcing**: after every ESM `Wait` of a GUI app, window-state change, thread
//!   declaration and detach, [`rules::idle_now`] is evaluated over the attached apps and fed to an
//!   [`IdleEdge`]; on the rising edge the [`IdleAction`] runs once.
//! - **Accounting** is outside the daemon: `lull_lab::guis_stats` reads CPU time and wake-ups of
//!   every declared thread, per app and category, from `/proc`.
//!
//! **A thread frozen while it holds a lock stalls the siblings that need the lock.** The
//! runtime has two: its state mutex (never held across a blocking call; held for sub-microsecond
//! sections by every runtime thread) and its channel writer (held by a thread for one whole
//! request, including the wait for the reply). A thread frozen in that wait would hold the writer
//! until its app may draw again, so every other thread of the app — the background thread, which
//! table 1 always runs, and `detach` — would wait that long. The daemon never waits for an app
//! and a thaw depends only on the window manager, so nothing deadlocks, but the stall breaks
//! table 1. So guiS freezes a forbidden thread only when it is not parked: a thread the kernel
//! reports blocked in a futex wait with no timeout (`/proc/PID/task/TID/syscall`) — where the
//! runtime's gate, its wait for work and its wait for a reply all block — cannot run until
//! another thread of its app wakes it, and the runtime's own threads then re-check their gate and
//! park. Such a thread is left alone (counted in [`GuisCounters::left_parked`]) and re-examined
//! at the app's next window-state change. Threads that ignore the gate are running, runnable or
//! asleep in anything else (`nanosleep`, a futex with a timeout, I/O) and are frozen.
//! What remains: a thread running at the instant of the change may be frozen inside one of the
//! runtime's short state-mutex sections (a gate-ignoring loop that polls
//! `ThreadCtx::should_stop` is the likely case); its app's other threads then wait until it may
//! run again. And a thread that ignored its gate but was itself waiting on a futex at the change
//! runs unfrozen if woken before the next change.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;

use lull_esm::{AppState, Esm};
use lull_kds::server::Kds;
use lull_kds::wire::Request;
use lull_model::{AppId, Screen, ThreadCategory, WindowState};
use lull_os::event_loop::LoopCtl;
use lull_os::procfs;
use lull_sched::guis::{self as rules, GuiApp, IdleEdge};
use serde::Serialize;

use crate::daemon::{Daemon, DaemonError, DaemonState};
use crate::freezer::{self, Freezer, FreezerError, FreezerKind, ThreadHandle};

/// Environment variable an [`IdleAction::Exec`] command gets: how many GUI apps were idle.
pub const IDLE_APPS_ENV: &str = "LULL_IDLE_APPS";

/// What guiS does when every GUI app has become idle.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleAction {
    /// Count it only.
    #[default]
    None,
    /// Darken the screen through the window manager, as a `WM_SCREEN off` request would: every
    /// app is told, and the drawing threads stop.
    ScreenOff,
    /// Run `sh -c CMD` (a suspend request, say) without waiting for it; it gets
    /// [`IDLE_APPS_ENV`].
    Exec(String),
}

impl fmt::Display for IdleAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdleAction::None => f.write_str("none"),
            IdleAction::ScreenOff => f.write_str("screen-off"),
            IdleAction::Exec(cmd) => write!(f, "exec:{cmd}"),
        }
    }
}

impl FromStr for IdleAction {
    type Err = GuisError;

    /// `none`, `screen-off`, or `exec:CMD` with a non-empty command.
    fn from_str(s: &str) -> Result<IdleAction, GuisError> {
        match s {
            "none" => Ok(IdleAction::None),
            "screen-off" => Ok(IdleAction::ScreenOff),
            _ => match s.strip_prefix("exec:") {
                Some(cmd) if !cmd.trim().is_empty() => Ok(IdleAction::Exec(cmd.to_owned())),
                Some(_) => Err(GuisError::BadIdleAction(format!(
                    "{s:?}: exec: needs a command, e.g. exec:systemctl suspend"
                ))),
                None => Err(GuisError::BadIdleAction(format!(
                    "{s:?}: expected none, screen-off or exec:CMD"
                ))),
            },
        }
    }
}

/// How to run guiS in the daemon.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GuisConfig {
    /// Off: the daemon gates nothing and forces no idle (apps' own gates are per app).
    pub enabled: bool,
    /// The cgroup directory the freezer creates (see [`freezer::DEFAULT_NAMESPACE`]).
    pub freezer_namespace: String,
    pub idle_action: IdleAction,
}

impl Default for GuisConfig {
    fn default() -> Self {
        GuisConfig {
            enabled: true,
            freezer_namespace: freezer::DEFAULT_NAMESPACE.to_owned(),
            idle_action: IdleAction::None,
        }
    }
}

/// Whether the kernel enforces table 1, and with what.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum KernelEnforcement {
    /// Adopted threads are frozen and thawed in `cgroup_root`.
    Active {
        kind: FreezerKind,
        cgroup_root: PathBuf,
    },
    /// No freezer here (not root, no cgroup file system, ...): only the runtime's gates and
    /// idle forcing apply.
    Unavailable { reason: String },
    /// guiS is off.
    Off,
}

/// What [`Daemon::enable_guis`] set up; `lulld` prints it and the daemon's report carries it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GuisStatus {
    pub kernel: KernelEnforcement,
    pub idle_action: IdleAction,
}

impl GuisStatus {
    /// Whether guiS runs in the daemon at all.
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.kernel != KernelEnforcement::Off
    }

    /// Whether the kernel freezes threads that ignore their gate.
    #[must_use]
    pub fn kernel_enforced(&self) -> bool {
        matches!(self.kernel, KernelEnforcement::Active { .. })
    }

    /// The freezer in use and its root, when the kernel enforces.
    #[must_use]
    pub fn freezer(&self) -> Option<(FreezerKind, &Path)> {
        match &self.kernel {
            KernelEnforcement::Active { kind, cgroup_root } => Some((*kind, cgroup_root)),
            _ => None,
        }
    }
}

impl Serialize for GuisStatus {
    /// With `enabled` written out, the shape reports have always had.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("GuisStatus", 3)?;
        st.serialize_field("enabled", &self.enabled())?;
        st.serialize_field("kernel", &self.kernel)?;
        st.serialize_field("idle_action", &self.idle_action)?;
        st.end()
    }
}

impl fmt::Display for GuisStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kernel {
            KernelEnforcement::Off => f.write_str(
                "guiS off: the daemon freezes nothing and forces no idle \
                 (apps' runtime gates are per app: AppOptions::guis)",
            ),
            KernelEnforcement::Active { kind, cgroup_root } => write!(
                f,
                "guiS on: table 1 enforced by the kernel ({kind}, {}); idle action {}",
                cgroup_root.display(),
                self.idle_action
            ),
            KernelEnforcement::Unavailable { reason } => write!(
                f,
                "guiS on WITHOUT kernel enforcement ({reason}): only the apps' runtime gates \
                 and idle forcing apply, threads that ignore their gate are not frozen; \
                 idle action {}",
                self.idle_action
            ),
        }
    }
}

/// What guiS did in the daemon.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct GuisCounters {
    /// Drawing and foreground threads moved into the freezer.
    pub adopted: u64,
    /// Declared threads the freezer could not take (exited already, process already in a
    /// threaded cgroup, ...); they run ungated by the kernel.
    pub adopt_failed: u64,
    pub freezes: u64,
    pub thaws: u64,
    /// Forbidden threads found parked in a futex wait and left to their gate, not frozen.
    pub left_parked: u64,
    /// Writes to the freezer that failed (freeze or thaw).
    pub freeze_errors: u64,
    /// Processes given back (moved to their original cgroups): when their last app with
    /// adopted threads left, or when a re-declaration left none of their threads adopted.
    pub released: u64,
    /// Failed releases of a process or of a single re-declared thread.
    pub release_errors: u64,
    /// Times an adopted process was found to have exited and its pid to name another process
    /// (start time in `/proc/PID/stat` changed): guiS removed its cgroups without moving that
    /// pid, and adopts nothing more for the apps that had threads of it.
    pub pid_reused: u64,
    pub idle_evaluations: u64,
    /// Entries into idle: the idle action ran this many times.
    pub idle_forced: u64,
    pub idle_screen_off: u64,
    pub idle_exec_spawned: u64,
    pub idle_exec_failed: u64,
    /// Idle commands that finished and were reaped.
    pub idle_exec_reaped: u64,
}

/// guiS's part of the daemon's report.
#[derive(Clone, Debug, Serialize)]
pub struct GuisReport {
    pub status: GuisStatus,
    pub counters: GuisCounters,
}

/// Errors of guiS outside the daemon (configuration).
#[derive(Debug, thiserror::Error)]
pub enum GuisError {
    #[error("bad idle action {0}")]
    BadIdleAction(String),
}

/// One adopted thread.
#[derive(Debug)]
struct Held {
    category: ThreadCategory,
    handle: ThreadHandle,
    /// What guiS last asked the kernel.
    frozen: bool,
}

#[derive(Debug)]
struct HeldApp {
    pid: i32,
    /// `pid` turned out to name another process: nothing more is adopted for this app.
    pid_reused: bool,
    threads: Vec<Held>,
}

/// guiS's part of the daemon's state.
#[derive(Debug)]
pub(crate) struct GuisHost {
    status: GuisStatus,
    freezer: Option<Freezer>,
    held: BTreeMap<AppId, HeldApp>,
    edge: IdleEdge,
    /// The idle action is running (its window-manager request re-enters the evaluation).
    acting: bool,
    children: Vec<Child>,
    counters: GuisCounters,
}

impl GuisHost {
    fn new(status: GuisStatus, freezer: Option<Freezer>) -> GuisHost {
        GuisHost {
            status,
            freezer,
            held: BTreeMap::new(),
            edge: IdleEdge::new(),
            acting: false,
            children: Vec::new(),
            counters: GuisCounters::default(),
        }
    }

    pub(crate) fn report(&self) -> GuisReport {
        GuisReport {
            status: self.status.clone(),
            counters: self.counters,
        }
    }

    /// Thaws and gives back every process, removes the freezer's cgroups and reaps the idle
    /// commands that have finished (the others are left to run).
    pub(crate) fn close(mut self) {
        self.reap_children();
        if let Some(f) = self.freezer.take() {
            let _ = f.close();
        }
    }

    /// Table 1 for the adopted threads of `app` in window state `window`.
    fn enforce(&mut self, app: AppId, window: WindowState) {
        let (Some(freezer), Some(held)) = (self.freezer.as_ref(), self.held.get_mut(&app)) else {
            return;
        };
        let c = &mut self.counters;
        for t in &mut held.threads {
            // Only window-gated threads are adopted; whether an event is pending does not
            // change what table 1 says of them.
            let allowed =
                !rules::gated_by_window(t.category) || rules::may_run(t.category, window, false);
            let done = match (allowed, t.frozen) {
                (true, true) => freezer.thaw(&t.handle).map(|()| c.thaws += 1),
                (false, false) if procfs::parked_in_futex(t.handle.pid, t.handle.tid) => {
                    c.left_parked += 1;
                    continue;
                }
                (false, false) => freezer.freeze(&t.handle).map(|()| c.freezes += 1),
                // Already as table 1 says.
                (true, false) | (false, true) => continue,
            };
            match done {
                Ok(()) => t.frozen = !allowed,
                Err(_) => c.freeze_errors += 1,
            }
        }
    }

    /// Adopts thread `tid` of `pid` as `app`'s `category` thread and applies table 1 to it.
    fn adopt(
        &mut self,
        app: AppId,
        pid: i32,
        category: ThreadCategory,
        tid: i32,
        window: WindowState,
    ) {
        if self.freezer.is_none() {
            return;
        }
        let entry = self.held.entry(app).or_insert_with(|| HeldApp {
            pid,
            pid_reused: false,
            threads: Vec::new(),
        });
        if entry.pid_reused {
            self.counters.adopt_failed += 1;
            return;
        }
        let replaced = match entry.threads.iter().position(|t| t.category == category) {
            Some(i) if entry.threads[i].handle.tid == tid => return,
            Some(i) => Some(entry.threads.remove(i)),
            None => None,
        };
        let Some(freezer) = self.freezer.as_mut() else {
            return;
        };
        if let Some(old) = replaced {
            // Declared again with another thread: the old one is no longer gated. Give it back
            // (thawed, out of its cgroup, which goes) so the freezer no longer counts it and a
            // client that keeps re-declaring cannot pile up cgroups.
            match freezer.release_thread(old.handle.pid, old.handle.tid) {
                Ok(()) => {}
                Err(FreezerError::PidReused { .. }) => {
                    self.counters.adopt_failed += 1;
                    self.note_pid_reused(pid);
                    // Its thread of the exited process was taken out of the list above.
                    if let Some(h) = self.held.get_mut(&app) {
                        h.pid_reused = true;
                        h.threads.clear();
                    }
                    return;
                }
                Err(_) => self.counters.release_errors += 1,
            }
        }
        let mut adopted = freezer.adopt(pid, tid, category.name());
        if let Err(FreezerError::PidReused { .. }) = adopted {
            self.note_pid_reused(pid);
            // The freezer dropped the exited process. This app had no thread of it (else it is
            // marked now), and the server accepted `tid` only from the process that attached
            // the app, still alive (its start time is checked): the pid's new process.
            if self.held.get(&app).is_some_and(|h| !h.pid_reused) {
                if let Some(f) = self.freezer.as_mut() {
                    adopted = f.adopt(pid, tid, category.name());
                }
            }
        }
        match adopted {
            Ok(handle) => {
                self.counters.adopted += 1;
                if let Some(entry) = self.held.get_mut(&app) {
                    entry.threads.push(Held {
                        category,
                        handle,
                        frozen: false,
                    });
                }
                self.enforce(app, window);
            }
            Err(_) => {
                self.counters.adopt_failed += 1;
                // The thread replaced above may have been the process's last one here: give the
                // process back now rather than when its app leaves.
                if self
                    .freezer
                    .as_ref()
                    .is_some_and(|f| f.handles(pid).is_empty())
                {
                    self.release_process(pid);
                }
            }
        }
    }

    /// `app` left: its threads are given back, and its process too once the freezer holds no
    /// thread of it (no other app of the same process has threads adopted).
    fn forget(&mut self, app: AppId) {
        let (Some(freezer), Some(gone)) = (self.freezer.as_mut(), self.held.remove(&app)) else {
            return;
        };
        if gone.pid_reused {
            return;
        }
        let others = freezer
            .handles(gone.pid)
            .iter()
            .any(|h| !gone.threads.iter().any(|t| t.handle == *h));
        if !others {
            self.release_process(gone.pid);
            return;
        }
        for t in &gone.threads {
            match freezer.release_thread(t.handle.pid, t.handle.tid) {
                Ok(()) => {}
                Err(FreezerError::PidReused { .. }) => {
                    self.note_pid_reused(gone.pid);
                    return;
                }
                Err(_) => self.counters.release_errors += 1,
            }
        }
    }

    /// Gives process `pid` back (thawed, in its original cgroups), if the freezer holds it.
    fn release_process(&mut self, pid: i32) {
        let Some(freezer) = self.freezer.as_mut().filter(|f| f.holds(pid)) else {
            return;
        };
        match freezer.release(pid) {
            Ok(()) => self.counters.released += 1,
            Err(FreezerError::PidReused { .. }) => self.note_pid_reused(pid),
            Err(_) => self.counters.release_errors += 1,
        }
    }

    /// The freezer found that `pid` names another process now and dropped the exited one
    /// without moving that pid. The apps that had threads of it attached from the exited
    /// process: they keep no thread here and adopt nothing more. An app with no thread here
    /// stays trusted: the server records the attaching process's start time and refuses a
    /// `THREAD` once the pid names another process, so what it declares is the new process's.
    fn note_pid_reused(&mut self, pid: i32) {
        self.counters.pid_reused += 1;
        for h in self
            .held
            .values_mut()
            .filter(|h| h.pid == pid && !h.threads.is_empty())
        {
            h.pid_reused = true;
            h.threads.clear();
        }
    }

    fn reap_children(&mut self) {
        let before = self.children.len();
        self.children
            .retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        self.counters.idle_exec_reaped += (before - self.children.len()) as u64;
    }

    fn spawn_idle_command(&mut self, cmd: &str, apps: usize) {
        let spawned = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .env(IDLE_APPS_ENV, apps.to_string())
            .stdin(Stdio::null())
            .spawn();
        match spawned {
            Ok(child) => {
                self.counters.idle_exec_spawned += 1;
                self.children.push(child);
            }
            Err(_) => self.counters.idle_exec_failed += 1,
        }
    }
}

/// [`rules::idle_now`] over the apps with a window in `kds`.
///
/// `idle_now` of a list holds exactly when the list is not empty and holds of each app alone,
/// so the windows are taken one at a time, top (most likely busy) first, stopping at the first
/// busy one: the cost is linear in the windows at most, and usually one app's.
///
/// An app that has declared none of its drawing, foreground and background threads yet (the
/// runtime declares them right after attaching, after its event thread's first `Wait`) is taken
/// to have drawing and foreground threads, so a window that just opened does not count as idle.
fn idle_level(esm: &Esm, kds: &Kds) -> bool {
    let wm = kds.wm();
    let windows = wm.windows();
    !windows.is_empty()
        && windows.iter().rev().all(|w| {
            let declared = |c| kds.thread(w.app, c).is_some();
            let unknown = !declared(ThreadCategory::Drawing)
                && !declared(ThreadCategory::Foreground)
                && !declared(ThreadCategory::Background);
            rules::idle_now(&[GuiApp {
                event_waiting: esm.state(w.app) == Ok(AppState::EvWait),
                window: WindowState {
                    stacking: w.stacking,
                    visibility: w.visibility,
                    screen: wm.screen(),
                },
                has_drawing: unknown || declared(ThreadCategory::Drawing),
                has_foreground: unknown || declared(ThreadCategory::Foreground),
            }])
        })
}

impl DaemonState {
    /// Window states about to be pushed: table 1 for each app's adopted threads.
    pub(crate) fn guis_window_states(&mut self, pushes: &[(AppId, WindowState)]) {
        if let Some(g) = self.guis.as_mut() {
            for &(app, window) in pushes {
                g.enforce(app, window);
            }
        }
    }

    /// `app` declared `tid` as its `category` thread (the server accepted it).
    pub(crate) fn guis_thread_declared(
        &mut self,
        app: AppId,
        category: ThreadCategory,
        tid: u32,
        ctl: &mut LoopCtl<DaemonState>,
    ) {
        let (Some(g), Some(k)) = (self.guis.as_mut(), self.kds.as_ref()) else {
            return;
        };
        if rules::gated_by_window(category) {
            let server = k.server();
            let pid = server.pid(app).and_then(|p| i32::try_from(p).ok());
            let tid = i32::try_from(tid).ok();
            if let (Some(pid), Some(tid), Ok(window)) = (pid, tid, server.wm().state(app)) {
                g.adopt(app, pid, category, tid, window);
            }
        }
        self.guis_evaluate_idle(ctl);
    }

    /// `app` left the daemon; `ctl` is `None` at shutdown (no idle action then).
    pub(crate) fn guis_app_gone(&mut self, app: AppId, ctl: Option<&mut LoopCtl<DaemonState>>) {
        let Some(g) = self.guis.as_mut() else {
            return;
        };
        g.forget(app);
        if let Some(ctl) = ctl {
            self.guis_evaluate_idle(ctl);
        }
    }

    /// `app` sent `Wait`: it was running until now, and may be waiting now.
    pub(crate) fn guis_after_wait(&mut self, app: AppId, ctl: &mut LoopCtl<DaemonState>) {
        let Some(g) = self.guis.as_mut() else {
            return;
        };
        if self
            .kds
            .as_ref()
            .and_then(|k| k.server().pid(app))
            .is_none()
        {
            return;
        }
        g.edge.update(false);
        self.guis_evaluate_idle(ctl);
    }

    /// Idle forcing: evaluates the rule and runs the idle action on its rising edge.
    pub(crate) fn guis_evaluate_idle(&mut self, ctl: &mut LoopCtl<DaemonState>) {
        let (Some(g), Some(k)) = (self.guis.as_mut(), self.kds.as_ref()) else {
            return;
        };
        if g.acting {
            return;
        }
        if !g.children.is_empty() {
            g.reap_children();
        }
        g.counters.idle_evaluations += 1;
        let idle = idle_level(&self.esm, k.server());
        if !g.edge.update(idle) {
            return;
        }
        g.counters.idle_forced += 1;
        let apps = k.server().wm().windows().len();
        match g.status.idle_action.clone() {
            IdleAction::None => {}
            IdleAction::ScreenOff => {
                g.counters.idle_screen_off += 1;
                g.acting = true;
                self.kds_wm_request(
                    &Request::WmScreen {
                        screen: Screen::Off,
                    },
                    ctl,
                );
                if let Some(g) = self.guis.as_mut() {
                    g.acting = false;
                }
            }
            IdleAction::Exec(cmd) => g.spawn_idle_command(&cmd, apps),
        }
    }
}

impl Daemon {
    /// Runs guiS in this daemon: kernel enforcement of table 1 when a cgroup freezer is
    /// available here, idle forcing always (see the module docs). Call after
    /// [`Daemon::enable_kds`]. With `config.enabled` off it sets up nothing and says so.
    ///
    /// # Errors
    /// [`DaemonError::Guis`] without the display server, when called twice, for a bad namespace,
    /// or when the namespace's cgroup directory already exists (another daemon uses it, or one
    /// did not clean up). A machine without a freezer is not an error: the status says why.
    pub fn enable_guis(&mut self, config: &GuisConfig) -> Result<GuisStatus, DaemonError> {
        let st = self.state_mut();
        if st.kds.is_none() {
            return Err(DaemonError::Guis(
                "guiS needs the display server: enable it first".into(),
            ));
        }
        if st.guis.is_some() {
            return Err(DaemonError::Guis("guiS is already enabled".into()));
        }
        if !config.enabled {
            return Ok(GuisStatus {
                kernel: KernelEnforcement::Off,
                idle_action: IdleAction::None,
            });
        }
        let (freezer, kernel) = match Freezer::open(&config.freezer_namespace) {
            Ok(f) => {
                let kernel = KernelEnforcement::Active {
                    kind: f.kind(),
                    cgroup_root: f.root().to_owned(),
                };
                (Some(f), kernel)
            }
            Err(e @ FreezerError::Unavailable { .. }) => {
                let reason = if lull_os::sys::geteuid() == 0 {
                    e.to_string()
                } else {
                    format!("not root, and the cgroup freezer needs root: {e}")
                };
                (None, KernelEnforcement::Unavailable { reason })
            }
            Err(e) => return Err(DaemonError::Guis(e.to_string())),
        };
        let status = GuisStatus {
            kernel,
            idle_action: config.idle_action.clone(),
        };
        st.guis = Some(GuisHost::new(status.clone(), freezer));
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_actions_parse_and_print() {
        for (text, action) in [
            ("none", IdleAction::None),
            ("screen-off", IdleAction::ScreenOff),
            (
                "exec:systemctl suspend",
                IdleAction::Exec("systemctl suspend".into()),
            ),
        ] {
            assert_eq!(text.parse::<IdleAction>().unwrap(), action);
            assert_eq!(action.to_string(), text);
        }
        for bad in ["", "off", "screen_off", "exec:", "exec:  ", "EXEC:ls"] {
            assert!(
                matches!(bad.parse::<IdleAction>(), Err(GuisError::BadIdleAction(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn status_json_keeps_enabled() {
        let on = GuisStatus {
            kernel: KernelEnforcement::Unavailable {
                reason: "not root".into(),
            },
            idle_action: IdleAction::ScreenOff,
        };
        let off = GuisStatus {
            kernel: KernelEnforcement::Off,
            idle_action: IdleAction::None,
        };
        assert_eq!(
            serde_json::to_string(&on).unwrap(),
            r#"{"enabled":true,"kernel":{"mode":"unavailable","reason":"not root"},"idle_action":"screen_off"}"#
        );
        assert_eq!(
            serde_json::to_string(&off).unwrap(),
            r#"{"enabled":false,"kernel":{"mode":"off"},"idle_action":"none"}"#
        );
    }

    /// guiS with a freezer of `kind`, outside a daemon; `None` (printed `SKIPPED`) without one.
    fn host(test: &str, kind: FreezerKind) -> Option<GuisHost> {
        let freezer = freezer::test_support::open(test, kind)?;
        let status = GuisStatus {
            kernel: KernelEnforcement::Active {
                kind,
                cgroup_root: freezer.root().to_owned(),
            },
            idle_action: IdleAction::None,
        };
        Some(GuisHost::new(status, Some(freezer)))
    }

    const APP: AppId = AppId {
        index: 1,
        generation: 0,
    };

    const BACKGROUND: WindowState = WindowState {
        stacking: lull_model::Stacking::Background,
        ..WindowState::FRONT
    };

    /// Waits until the kernel reports adopted thread `tid` of `pid` frozen.
    fn settled_frozen(g: &GuisHost, pid: i32, tid: i32) {
        let f = g.freezer.as_ref().unwrap();
        let h = f.handles(pid).into_iter().find(|h| h.tid == tid).unwrap();
        f.wait_settled(&h, true, freezer::test_support::GIVE_UP)
            .unwrap();
    }

    /// Drawing declared T1, T2, T1 while table 1 forbids drawing: each adopted spinner is
    /// frozen, each replaced one thawed and given back, so the third declaration adopts T1
    /// again; when the app leaves the process is released and back where it was, no cgroup
    /// left.
    fn redeclaring_gives_threads_back(kind: FreezerKind) {
        use freezer::test_support::{serial, subdirs, thread_cgroups, Sleeper};
        let _serial = serial();
        let Some(mut g) = host("guis-redeclare", kind) else {
            return;
        };
        let pid = std::process::id() as i32;
        let (t1, t2) = (Sleeper::start(), Sleeper::start());
        let before = [t1.tid, t2.tid, lull_os::sys::gettid()].map(thread_cgroups);
        let root = g.status.freezer().unwrap().1.to_owned();
        let leaf = |tid: i32| root.join(pid.to_string()).join(format!("drawing-{tid}"));
        for (tid, old) in [(t1.tid, None), (t2.tid, Some(&t1)), (t1.tid, Some(&t2))] {
            g.adopt(APP, pid, ThreadCategory::Drawing, tid, BACKGROUND);
            assert!(leaf(tid).is_dir());
            settled_frozen(&g, pid, tid);
            if let Some(old) = old {
                old.answers();
                assert!(!leaf(old.tid).exists());
            }
            // Re-declaring the same thread changes nothing.
            g.adopt(APP, pid, ThreadCategory::Drawing, tid, BACKGROUND);
        }
        let f = g.freezer.as_ref().unwrap();
        assert_eq!(f.handles(pid).len(), 1);
        g.forget(APP);
        t1.answers();
        assert!(!g.freezer.as_ref().unwrap().holds(pid));
        assert_eq!(
            [t1.tid, t2.tid, lull_os::sys::gettid()].map(thread_cgroups),
            before
        );
        assert!(subdirs(&root).is_empty(), "{:?}", subdirs(&root));
        let c = g.counters;
        assert_eq!(
            (c.adopted, c.adopt_failed, c.freezes, c.thaws),
            (3, 0, 3, 0)
        );
        assert_eq!((c.released, c.release_errors, c.pid_reused), (1, 0, 0));
        g.close();
        assert!(!root.exists());
    }

    #[test]
    fn v2_threaded_redeclaring_gives_threads_back() {
        redeclaring_gives_threads_back(FreezerKind::V2Threaded);
    }

    #[test]
    fn v1_redeclaring_gives_threads_back() {
        redeclaring_gives_threads_back(FreezerKind::V1);
    }

    /// When the freezer finds a pid naming another process (simulated by altering the recorded
    /// start time), guiS counts it, stops trusting the apps that had threads of the exited
    /// process, and lets an app without any (one attached from the new process) adopt afresh.
    fn reused_pid_is_counted_and_not_trusted(kind: FreezerKind) {
        use freezer::test_support::{serial, subdirs, thread_cgroups, Sleeper};
        let _serial = serial();
        let Some(mut g) = host("guis-reuse", kind) else {
            return;
        };
        let (app2, app3) = (AppId { index: 2, ..APP }, AppId { index: 3, ..APP });
        let pid = std::process::id() as i32;
        let (t1, t2) = (Sleeper::start(), Sleeper::start());
        let before = [t1.tid, t2.tid, lull_os::sys::gettid()].map(thread_cgroups);
        let root = g.status.freezer().unwrap().1.to_owned();
        let holds = |g: &GuisHost| g.freezer.as_ref().unwrap().holds(pid);

        // Found on re-declaration (giving back the replaced thread).
        g.adopt(APP, pid, ThreadCategory::Drawing, t1.tid, BACKGROUND);
        settled_frozen(&g, pid, t1.tid);
        g.freezer.as_mut().unwrap().forge_start_ticks(pid);
        g.adopt(APP, pid, ThreadCategory::Drawing, t2.tid, BACKGROUND);
        t1.answers();
        assert!(!holds(&g));
        assert!(subdirs(&root).is_empty());
        assert_eq!((g.counters.pid_reused, g.counters.adopt_failed), (1, 1));

        // A new app of the pid adopts afresh; then found on another app's adoption.
        g.adopt(app2, pid, ThreadCategory::Foreground, t2.tid, BACKGROUND);
        settled_frozen(&g, pid, t2.tid);
        g.freezer.as_mut().unwrap().forge_start_ticks(pid);
        g.adopt(app3, pid, ThreadCategory::Drawing, t1.tid, BACKGROUND);
        t2.answers();
        let handles = g.freezer.as_ref().unwrap().handles(pid);
        assert_eq!(handles.iter().map(|h| h.tid).collect::<Vec<_>>(), [t1.tid]);
        assert_eq!(g.counters.pid_reused, 2);

        // Untrusted apps adopt and release nothing; the trusted one releases its process.
        g.adopt(APP, pid, ThreadCategory::Foreground, t2.tid, BACKGROUND);
        g.adopt(app2, pid, ThreadCategory::Drawing, t2.tid, BACKGROUND);
        g.forget(APP);
        g.forget(app2);
        assert!(holds(&g));
        g.forget(app3);
        t1.answers();
        assert!(!holds(&g));
        assert!(subdirs(&root).is_empty(), "{:?}", subdirs(&root));
        assert_eq!(
            [t1.tid, t2.tid, lull_os::sys::gettid()].map(thread_cgroups),
            before
        );
        let c = g.counters;
        assert_eq!((c.adopted, c.adopt_failed, c.pid_reused), (3, 3, 2));
        assert_eq!((c.released, c.release_errors), (1, 0));
        g.close();
    }

    #[test]
    fn v2_threaded_reused_pid_is_counted_and_not_trusted() {
        reused_pid_is_counted_and_not_trusted(FreezerKind::V2Threaded);
    }

    #[test]
    fn v1_reused_pid_is_counted_and_not_trusted() {
        reused_pid_is_counted_and_not_trusted(FreezerKind::V1);
    }
}

#[cfg(test)]
mod cost {
    use super::*;
    use lull_esm::EsmConfig;
    use lull_kds::server::Channel;

    /// What guiS adds to the daemon's `Wait` path — the app lookup, the idle rule over every
    /// attached app and the edge — measured on this machine with `n` apps. Prints ns per `Wait`;
    /// asserts nothing about time. Run with `--release --ignored --nocapture`.
    #[test]
    #[ignore = "measurement; run by hand"]
    fn wait_path_cost() {
        const ROUNDS: u32 = 1_000_000;
        for n in [1usize, 8, 64] {
            let mut esm = Esm::new(EsmConfig::default()).unwrap();
            let mut kds = Kds::new(1920, 1080).unwrap();
            let mut apps = Vec::new();
            for i in 0..n {
                let app = esm.add_app();
                kds.attach(&mut esm, app, 1, 64, 48, "bench").unwrap();
                for (k, c) in ThreadCategory::ALL.into_iter().enumerate() {
                    let tid = u32::try_from(10 * i + k + 1).unwrap();
                    let req = Request::Thread { category: c, tid };
                    kds.handle(&mut esm, Channel::Private(app), &req, &|_, _| true);
                }
                let _ = esm.wait(app);
                apps.push(app);
            }
            let front = measure_waits(&esm, &kds, &apps, ROUNDS);
            // Every app in the background: all idle, so every app is examined.
            for &app in &apps {
                let req = Request::WmBackground { app };
                let wm = Channel::Control { privileged: true };
                kds.handle(&mut esm, wm, &req, &|_, _| true);
            }
            let all_idle = measure_waits(&esm, &kds, &apps, ROUNDS);
            println!(
                "{n} apps: {:.1} ns per Wait with a visible front app, {:.1} ns with all idle",
                front, all_idle
            );
        }
    }

    fn measure_waits(esm: &Esm, kds: &Kds, apps: &[AppId], rounds: u32) -> f64 {
        let mut edge = IdleEdge::new();
        let start = std::time::Instant::now();
        for r in 0..rounds {
            let app = apps[r as usize % apps.len()];
            if std::hint::black_box(kds).pid(app).is_some() {
                edge.update(false);
                let idle = idle_level(std::hint::black_box(esm), kds);
                std::hint::black_box(edge.update(idle));
            }
        }
        start.elapsed().as_nanos() as f64 / f64::from(rounds)
    }
}
