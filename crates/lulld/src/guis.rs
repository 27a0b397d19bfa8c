//! guiS on stock Linux, inside `lulld` (seed 000, chapter 5): table 1 enforced by the kernel,
//! idle forcing, and per-category accounting.
//!
//! - **Cooperative half** (not here): the client runtime's gates (`lull::kds_runtime`, in
//!   `lull-client`) park the drawing thread while its app cannot be seen, the foreground thread
//!   while it is not in front; the event thread runs only when the ESM pushed it an event. They
//!   are per app (`AppOptions::guis`).
//! - **Kernel half** ([`crate::guis_policy::GuisPolicy`], a plug-in of the daemon, [`crate::policy`]): table 1 is a policy on the seam,
//!   `lull_sched::guis::Table1`, which the daemon tells what it knows ([`crate::seam`]) and whose
//!   actions the actuator (`lull_actuate`) applies with the cgroup freezer (`lull_actuate::freezer`). When
//!   an app declares its drawing or foreground thread (`THREAD`), the thread is taken into the
//!   freezer as `<namespace>/<pid>/<category>-<tid>`; on every window-state change of the app,
//!   before the state is pushed to it, each such thread that table 1 forbids is frozen and each it
//!   allows is thawed. Only declared drawing and foreground threads are ever touched: the event
//!   thread is gated by the ESM's push, the background thread always runs, and a process that
//!   declared nothing (not a GUI app) is never moved (the fair-scheduling compatibility mode). A
//!   category re-declared with another thread gives the old thread back; a process is given back
//!   once the freezer holds no thread of it. A thread whose process is no longer the one that
//!   attached (its start time changed: the pid was reused) is never acted on
//!   ([`GuisCounters::pid_reused`]). Everything happens in the daemon's loop as a consequence of a
//!   message; there is no timer and no polling.
//! - **Idle forcing** (here, `GuisHost`): after every ESM `Wait` of a GUI app, window-state
//!   change, thread declaration and detach, [`rules::idle_now`] is evaluated over the attached
//!   apps and fed to an [`IdleEdge`]; on the rising edge the [`IdleAction`] runs once.
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
//! table 1. So the actuator freezes a forbidden thread only when it is not parked: a thread the
//! kernel reports blocked in a futex wait with no timeout (`/proc/PID/task/TID/syscall`) — where
//! the runtime's gate, its wait for work and its wait for a reply all block — cannot run until
//! another thread of its app wakes it, and the runtime's own threads then re-check their gate and
//! park. Such a thread is left alone (counted in [`GuisCounters::left_parked`]) and, since table
//! 1's actions are levels, asked about again at the app's next window-state change. Threads that
//! ignore the gate are running, runnable or asleep in anything else (`nanosleep`, a futex with a
//! timeout, I/O) and are frozen. What remains: a thread running at the instant of the change may
//! be frozen inside one of the runtime's short state-mutex sections (a gate-ignoring loop that
//! polls `ThreadCtx::should_stop` is the likely case); its app's other threads then wait until it
//! may run again. And a thread that ignored its gate but was itself waiting on a futex at the
//! change runs unfrozen if woken before the next change.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;

use lull_kds::server::Kds;
use lull_model::{AppId, ThreadCategory, WindowState};
use lull_sched::guis::{self as rules, GuiApp, IdleEdge};
use serde::Serialize;

use lull_actuate::freezer::{self, FreezerError, FreezerKind};
use lull_actuate::FreezerCounters;

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

/// What [`crate::daemon::Daemon::enable_guis`] set up; `lulld` prints it and the daemon's report carries it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GuisStatus {
    pub kernel: KernelEnforcement,
    pub idle_action: IdleAction,
    /// What the freezer undid at start-up in a namespace a dead daemon left (`lulld` says so).
    pub recovered: Option<freezer::Recovered>,
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

/// What guiS did in the daemon: what the actuator did with the freezer on table 1's behalf
/// ([`FreezerCounters`], written out beside the rest in the report), and idle forcing's counts.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct GuisCounters {
    #[serde(flatten)]
    pub freezer: FreezerCounters,
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
    /// The freezer's namespace is bad, or a running daemon holds its cgroup directory.
    #[error(transparent)]
    Freezer(#[from] FreezerError),
}

/// guiS's part of the daemon's state: idle forcing. (Table 1 is the seam's, [`crate::seam`].)
#[derive(Debug)]
pub(crate) struct GuisHost {
    pub(crate) status: GuisStatus,
    pub(crate) edge: IdleEdge,
    /// The idle action is running (its window-manager request re-enters the evaluation).
    pub(crate) acting: bool,
    pub(crate) children: Vec<Child>,
    /// Idle forcing's counters; the freezer's come from the actuator.
    pub(crate) counters: GuisCounters,
}

impl GuisHost {
    pub(crate) fn new(status: GuisStatus) -> GuisHost {
        GuisHost {
            status,
            edge: IdleEdge::new(),
            acting: false,
            children: Vec::new(),
            counters: GuisCounters::default(),
        }
    }

    /// The report, with what the actuator did with the freezer on table 1's behalf.
    pub(crate) fn report(&self, freezer: FreezerCounters) -> GuisReport {
        GuisReport {
            status: self.status.clone(),
            counters: GuisCounters {
                freezer,
                ..self.counters
            },
        }
    }

    /// Reaps the idle commands that have finished (the others are left to run).
    pub(crate) fn close(mut self) {
        self.reap_children();
    }

    pub(crate) fn reap_children(&mut self) {
        let before = self.children.len();
        self.children
            .retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        self.counters.idle_exec_reaped += (before - self.children.len()) as u64;
    }

    pub(crate) fn spawn_idle_command(&mut self, cmd: &str, apps: usize) {
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
pub(crate) fn idle_level(waiting: impl Fn(AppId) -> bool, kds: &Kds) -> bool {
    let wm = kds.wm();
    let windows = wm.windows();
    !windows.is_empty()
        && windows.iter().rev().all(|w| {
            let declared = |c| kds.thread(w.app, c).is_some();
            let unknown = !declared(ThreadCategory::Drawing)
                && !declared(ThreadCategory::Foreground)
                && !declared(ThreadCategory::Background);
            rules::idle_now(&[GuiApp {
                event_waiting: waiting(w.app),
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
            recovered: None,
        };
        let off = GuisStatus {
            kernel: KernelEnforcement::Off,
            idle_action: IdleAction::None,
            recovered: None,
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
}

#[cfg(test)]
mod cost {
    use super::*;
    use lull_esm::{AppState, Esm, EsmConfig};
    use lull_kds::server::Channel;
    use lull_kds::wire::Request;

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
                let esm = std::hint::black_box(esm);
                let idle = idle_level(|a| esm.state(a) == Ok(AppState::EvWait), kds);
                std::hint::black_box(edge.update(idle));
            }
        }
        start.elapsed().as_nanos() as f64 / f64::from(rounds)
    }
}
