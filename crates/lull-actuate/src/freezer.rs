//! guiS gating enforced by the kernel: freezing and thawing single threads of another process
//! with the cgroup freezer, while the process's other threads keep running.
//!
//! What the kernel allows (checked on Linux 6.18 with cgroup v2 and v1 mounted side by side):
//! - cgroup v2 moves whole processes between domain cgroups (`cgroup.procs`); `cgroup.threads`
//!   moves a thread only inside one threaded subtree. So the process first gets a domain of its
//!   own, `<namespace>/<pid>`, and each adopted thread a child made `threaded` (one-way). Making a
//!   child threaded needs the parent domain to have no domain controllers enabled and no populated
//!   domain children; the no-internal-process rule does not bind, so the other threads stay in the
//!   domain itself, which turns `domain threaded`. `cgroup.freeze` on one threaded child stops
//!   just its thread; `cgroup.events` says `frozen 1` once every task in it is trapped (an empty
//!   frozen cgroup reads frozen too). Writing the pid to its old `cgroup.procs` brings every
//!   thread back at once, thawed.
//! - cgroup v1 lets any thread id be written to any freezer cgroup's `tasks`, so only the thread
//!   moves; `freezer.state` reads `FREEZING` until every task is frozen. A v1-frozen thread cannot
//!   even die of `SIGKILL` until it is thawed.
//! - Either way a thread started by an adopted thread begins in its cgroup, frozen with it, and a
//!   thread that exits stays charged to its cgroup for a moment after it is joined (`rmdir` says
//!   `EBUSY`), so removal retries within a bound. A frozen thread that holds a lock its siblings
//!   need stalls them: freeze only threads that guiS would not run anyway.
//! - Pids are reused once their process has exited, so the process's start time
//!   (`/proc/PID/stat`) is recorded at its first adoption and compared before another of its
//!   threads is adopted and before it is released: a pid that names another process by then is
//!   never written to a cgroup file.
//!
//! [`Freezer::release_thread`] gives back one thread (for a re-declared thread),
//! [`Freezer::release`] the whole process. [`Freezer::open`] prefers cgroup v2 (the maintained
//! interface, and the only one on systems without v1 hierarchies) and falls back to the v1
//! freezer.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lull_os::sys::Errno;

pub use crate::cgroupfs::{cgroup2_controllers, Cgroup2Error};
use crate::cgroupfs::{cgroup_path_of, parse_events_frozen, parse_mountinfo};

/// The cgroup directory name [`Freezer::open`] callers use unless they need several freezers.
pub const DEFAULT_NAMESPACE: &str = "lull-guis";

/// How long [`Freezer::release`] waits for an exiting thread to leave a cgroup before it gives up
/// removing the directory. The kernel unlinks an exiting thread within microseconds of its last
/// context switch; a second covers a heavily loaded machine without hanging shutdown.
const RELEASE_SETTLE_TIMEOUT_MS: u64 = 1_000;

/// Pause between two reads of a kernel status file while waiting for it to change. A running
/// thread is frozen at its next return to user space, within microseconds, so 100 µs finds the
/// change on the first or second re-read without spinning a core.
const SETTLE_POLL_INTERVAL_US: u64 = 100;

/// Longest namespace or label accepted; cgroup names are file names, and these are joined with a
/// thread id, so 64 leaves ample room under `NAME_MAX` (255).
const NAME_MAX_LEN: usize = 64;

/// Which kernel mechanism a [`Freezer`] uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FreezerKind {
    /// cgroup v2: the process in a domain cgroup of its own, each adopted thread in a threaded
    /// child, `cgroup.freeze` / `cgroup.events`.
    V2Threaded,
    /// cgroup v1 freezer hierarchy: each adopted thread in a cgroup of its own, `freezer.state`.
    V1,
}

impl fmt::Display for FreezerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FreezerKind::V2Threaded => "cgroup v2 threaded subtree",
            FreezerKind::V1 => "cgroup v1 freezer",
        })
    }
}

/// Why a thread could not be adopted, frozen, thawed or released.
#[derive(Debug, thiserror::Error)]
pub enum FreezerError {
    #[error("bad {what} {name:?}: use 1-64 characters from A-Z a-z 0-9 _ -")]
    BadName { what: &'static str, name: String },
    #[error("no per-thread freezer here: {}", reasons(.tried))]
    Unavailable { tried: Vec<(FreezerKind, String)> },
    #[error("{} is held by a running freezer (another lulld uses namespace {namespace:?}); stop it or choose another --guis-namespace", .path.display())]
    NamespaceInUse { namespace: String, path: PathBuf },
    #[error("thread {tid} of process {pid} not found")]
    ThreadNotFound { pid: i32, tid: i32 },
    #[error("thread {tid} of process {pid} is already adopted")]
    AlreadyAdopted { pid: i32, tid: i32 },
    #[error("thread {tid} of process {pid} is not held by this freezer")]
    NotAdopted { pid: i32, tid: i32 },
    #[error("process {pid} exited and its pid now names another process: its cgroups were removed, nothing was moved by pid")]
    PidReused { pid: i32 },
    #[error("process {pid} is in {} of cgroup type {cgroup_type:?}: it already uses threaded cgroups (or another freezer holds it)", .path.display())]
    AlreadyThreaded {
        pid: i32,
        path: PathBuf,
        cgroup_type: String,
    },
    #[error("{} has no {what}", .path.display())]
    Parse { path: PathBuf, what: &'static str },
    #[error("{op} {}: {source}", .path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("{what} is a cgroup v2 file; this is the cgroup v1 freezer")]
    NotV2 { what: &'static str },
    #[error("thread {tid}: the kernel did not report it {want} within {timeout_ms} ms")]
    Timeout {
        tid: i32,
        want: &'static str,
        timeout_ms: u64,
    },
}

fn reasons(tried: &[(FreezerKind, String)]) -> String {
    tried
        .iter()
        .map(|(k, why)| format!("{k}: {why}"))
        .collect::<Vec<_>>()
        .join("; ")
}

fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> FreezerError + 'a {
    move |source| FreezerError::Io {
        op,
        path: path.to_owned(),
        source,
    }
}

/// One adopted thread: what [`Freezer::freeze`] and [`Freezer::thaw`] act on.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ThreadHandle {
    pub pid: i32,
    pub tid: i32,
    dir: PathBuf,
}

impl ThreadHandle {
    /// The thread's own cgroup directory.
    #[must_use]
    pub fn cgroup_dir(&self) -> &Path {
        &self.dir
    }
}

#[derive(Debug)]
struct AdoptedThread {
    handle: ThreadHandle,
    /// v1: the thread's freezer cgroup before adoption. v2: unused (the process's is kept).
    original: PathBuf,
}

#[derive(Debug)]
struct Adopted {
    /// `<namespace>/<pid>`.
    dir: PathBuf,
    /// v2: the process's cgroup before adoption.
    original: PathBuf,
    /// The process's start time (clock ticks since boot) when first adopted: a pid is reused
    /// once its process has exited, so the pid alone cannot say it is still the same process.
    start_ticks: u64,
    threads: Vec<AdoptedThread>,
}

/// Whether a pid still names the process that was adopted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Identity {
    Same,
    /// No such process any more: nothing to move.
    Gone,
    /// Another process has the pid now: it must not be moved.
    Reused,
}

fn identity(pid: i32, start_ticks: u64) -> Identity {
    match lull_os::procfs::process_start_ticks(pid) {
        Some(t) if t == start_ticks => Identity::Same,
        Some(_) => Identity::Reused,
        None => Identity::Gone,
    }
}

/// Freezes and thaws single threads of other processes (or of this one) through the cgroup
/// freezer. Dropping it thaws every thread, moves them back where they came from and removes
/// every cgroup it made.
#[derive(Debug)]
pub struct Freezer {
    kind: FreezerKind,
    /// Mount point of the hierarchy used.
    mount: PathBuf,
    /// Where the hierarchy's path `/` is in the mount (the mount's root, when not `/`).
    mount_root: String,
    /// `<mount>/<namespace>`.
    root: PathBuf,
    adopted: BTreeMap<i32, Adopted>,
    /// `cgroup.subtree_control` files outside the namespace where [`Freezer::set_cpu_weight`]
    /// enabled the cpu controller: disabled again when the freezer closes.
    cpu_enabled: Vec<PathBuf>,
    /// The namespace directory, opened and `flock`ed for as long as this freezer lives: the
    /// kernel drops the lock when the process dies, however it dies, so a later
    /// [`Freezer::open`] tells a namespace a dead freezer left from one a live freezer holds.
    _lock: fs::File,
    recovered: Option<Recovered>,
}

/// What [`Freezer::open`] found and undid in a namespace a dead freezer left behind (killed by
/// `SIGKILL`, or crashed): every cgroup in it thawed, every process in it moved back to the
/// cgroup it came from (recorded at adoption) or else to the namespace's parent, every
/// directory removed.
#[derive(Clone, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct Recovered {
    pub path: PathBuf,
    /// Cgroups that were frozen, thawed.
    pub thawed_cgroups: u32,
    /// Processes (v2) or threads (v1) moved out.
    pub moved: u32,
    /// Directories removed (the namespace's own among them).
    pub removed_dirs: u32,
}

impl fmt::Display for Recovered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "adopted {} left by a freezer that died: thawed {} frozen cgroup(s), moved {} \
             process(es) back, removed {} cgroup(s)",
            self.path.display(),
            self.thawed_cgroups,
            self.moved,
            self.removed_dirs
        )
    }
}

/// Extended attribute on `<namespace>/<pid>` holding the cgroup the process came from, so that
/// a freezer started after this one died can move it back there.
const ORIGINAL_XATTR: &str = "trusted.lull_original";

impl Freezer {
    /// Creates `<cgroup root>/<namespace>` in the cgroup v2 hierarchy if it can freeze threads
    /// here, else in the v1 freezer hierarchy.
    ///
    /// # Errors
    /// [`FreezerError::BadName`] for a namespace that is not a plain name,
    /// [`FreezerError::NamespaceInUse`] when the directory exists, and
    /// [`FreezerError::Unavailable`] (with each mechanism's reason) when neither works, e.g. not
    /// root or no cgroup file system.
    pub fn open(namespace: &str) -> Result<Freezer, FreezerError> {
        let mut tried = Vec::new();
        for kind in [FreezerKind::V2Threaded, FreezerKind::V1] {
            match Freezer::open_kind(namespace, kind) {
                Ok(f) => return Ok(f),
                Err(FreezerError::Unavailable { tried: mut t }) => tried.append(&mut t),
                Err(e) => return Err(e),
            }
        }
        Err(FreezerError::Unavailable { tried })
    }

    /// As [`Freezer::open`], with one mechanism only.
    ///
    /// # Errors
    /// As [`Freezer::open`].
    pub fn open_kind(namespace: &str, kind: FreezerKind) -> Result<Freezer, FreezerError> {
        check_name("namespace", namespace)?;
        let unavailable = |why: String| FreezerError::Unavailable {
            tried: vec![(kind, why)],
        };
        let mountinfo = fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| unavailable(format!("cannot read /proc/self/mountinfo: {e}")))?;
        let mounts = parse_mountinfo(&mountinfo);
        let (mount, probe_file) = match kind {
            FreezerKind::V2Threaded => (
                mounts.iter().find(|m| m.fstype == "cgroup2"),
                "cgroup.freeze",
            ),
            FreezerKind::V1 => (
                mounts
                    .iter()
                    .find(|m| m.fstype == "cgroup" && m.super_opts.iter().any(|o| o == "freezer")),
                "freezer.state",
            ),
        };
        let mount = mount.ok_or_else(|| unavailable("no such hierarchy is mounted".into()))?;
        let root = mount.point.join(namespace);
        let mut recovered = None;
        match fs::create_dir(&root) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // Held by a live freezer: its lock says so. Else a dead one left it.
                let stale =
                    lull_os::fs::lock_dir(&root).map_err(|_| FreezerError::NamespaceInUse {
                        namespace: namespace.to_owned(),
                        path: root.clone(),
                    })?;
                let r = recover_stale(kind, &mount.point, &root);
                drop(stale);
                let r = r?;
                fs::create_dir(&root).map_err(|e| match e.kind() {
                    io::ErrorKind::AlreadyExists => FreezerError::NamespaceInUse {
                        namespace: namespace.to_owned(),
                        path: root.clone(),
                    },
                    _ => unavailable(format!("mkdir {}: {e}", root.display())),
                })?;
                recovered = Some(r);
            }
            Err(e) => return Err(unavailable(format!("mkdir {}: {e}", root.display()))),
        }
        // cgroup v2 before 5.2 has no freezer; a v1 hierarchy without it has no freezer.state.
        let extra = match kind {
            FreezerKind::V2Threaded => "cgroup.type",
            FreezerKind::V1 => "tasks",
        };
        for f in [probe_file, extra] {
            if !root.join(f).exists() {
                let _ = fs::remove_dir(&root);
                return Err(unavailable(format!("{} has no {f}", root.display())));
            }
        }
        let lock = match lull_os::fs::lock_dir(&root) {
            Ok(l) => l,
            Err(e) => {
                let _ = fs::remove_dir(&root);
                return Err(io_err("lock", &root)(e));
            }
        };
        Ok(Freezer {
            kind,
            mount: mount.point.clone(),
            mount_root: mount.root.clone(),
            root,
            adopted: BTreeMap::new(),
            cpu_enabled: Vec::new(),
            _lock: lock,
            recovered,
        })
    }

    /// What this freezer found and undid at open in a namespace a dead freezer left, if any.
    #[must_use]
    pub fn recovered(&self) -> Option<&Recovered> {
        self.recovered.as_ref()
    }

    #[must_use]
    pub fn kind(&self) -> FreezerKind {
        self.kind
    }

    /// `<cgroup root>/<namespace>`.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether this freezer holds process `pid` (v2: the process is in `<namespace>/<pid>`),
    /// with or without threads: [`Freezer::release`] gives it back.
    #[must_use]
    pub fn holds(&self, pid: i32) -> bool {
        self.adopted.contains_key(&pid)
    }

    /// The threads of `pid` this freezer holds.
    #[must_use]
    pub fn handles(&self, pid: i32) -> Vec<ThreadHandle> {
        self.adopted
            .get(&pid)
            .map(|a| a.threads.iter().map(|t| t.handle.clone()).collect())
            .unwrap_or_default()
    }

    /// Moves thread `tid` of process `pid` into a freezable cgroup of its own,
    /// `<namespace>/<pid>/<label>-<tid>`, thawed. With cgroup v2 the first adoption of a process
    /// also moves the whole process into `<namespace>/<pid>` (its other threads stay there,
    /// running); [`Freezer::release`] moves it back. The process's start time is recorded then,
    /// and checked before each later adoption of one of its threads and before any release.
    ///
    /// # Errors
    /// [`FreezerError::BadName`], [`FreezerError::ThreadNotFound`],
    /// [`FreezerError::AlreadyAdopted`], [`FreezerError::AlreadyThreaded`] (v2: the process
    /// already lives in a threaded subtree), [`FreezerError::PidReused`] (the held process has
    /// exited and `pid` names another one: the held entry is dropped and its cgroups removed
    /// without moving `pid`), or the kernel's refusal as [`FreezerError::Io`].
    pub fn adopt(&mut self, pid: i32, tid: i32, label: &str) -> Result<ThreadHandle, FreezerError> {
        check_name("label", label)?;
        if let Some(a) = self.adopted.get(&pid) {
            match identity(pid, a.start_ticks) {
                Identity::Same => {}
                Identity::Gone => return Err(FreezerError::ThreadNotFound { pid, tid }),
                Identity::Reused => {
                    if let Some(a) = self.adopted.remove(&pid) {
                        let _ = self.release_adopted(pid, a);
                    }
                    return Err(FreezerError::PidReused { pid });
                }
            }
        }
        // Negative ids (`pid_t`) name no thread; `sys` takes the unsigned ids the wire carries.
        let exists = u32::try_from(pid)
            .ok()
            .zip(u32::try_from(tid).ok())
            .is_some_and(|(p, t)| lull_os::sys::thread_of_process(p, t));
        if !exists {
            return Err(FreezerError::ThreadNotFound { pid, tid });
        }
        if self
            .adopted
            .get(&pid)
            .is_some_and(|a| a.threads.iter().any(|t| t.handle.tid == tid))
        {
            return Err(FreezerError::AlreadyAdopted { pid, tid });
        }
        let fresh = !self.adopted.contains_key(&pid);
        if fresh {
            let entry = self.enter_process(pid)?;
            self.adopted.insert(pid, entry);
        }
        let result = self.enter_thread(pid, tid, label);
        match result {
            Ok(t) => {
                let handle = t.handle.clone();
                if let Some(a) = self.adopted.get_mut(&pid) {
                    a.threads.push(t);
                }
                Ok(handle)
            }
            Err(e) => {
                if fresh {
                    if let Some(a) = self.adopted.remove(&pid) {
                        let _ = self.release_adopted(pid, a);
                    }
                }
                Err(e)
            }
        }
    }

    /// Asks the kernel to freeze the thread. Idempotent. The thread stops at its next return to
    /// user space; [`Freezer::wait_settled`] waits for the kernel to confirm it.
    ///
    /// # Errors
    /// [`FreezerError::NotAdopted`], or the write's failure.
    pub fn freeze(&self, h: &ThreadHandle) -> Result<(), FreezerError> {
        self.set_frozen(h, true)
    }

    /// Lets the thread run again. Idempotent.
    ///
    /// # Errors
    /// As [`Freezer::freeze`].
    pub fn thaw(&self, h: &ThreadHandle) -> Result<(), FreezerError> {
        self.set_frozen(h, false)
    }

    /// Whether the kernel reports the thread's cgroup frozen now (v2: `frozen 1` in
    /// `cgroup.events`; v1: `freezer.state` is `FROZEN`, not `FREEZING`).
    ///
    /// # Errors
    /// [`FreezerError::NotAdopted`], or the file cannot be read or parsed.
    pub fn is_frozen(&self, h: &ThreadHandle) -> Result<bool, FreezerError> {
        self.check_held(h)?;
        match self.kind {
            FreezerKind::V2Threaded => {
                let path = h.dir.join("cgroup.events");
                let text = fs::read_to_string(&path).map_err(io_err("read", &path))?;
                parse_events_frozen(&text).ok_or(FreezerError::Parse {
                    path,
                    what: "frozen field",
                })
            }
            FreezerKind::V1 => {
                let path = h.dir.join("freezer.state");
                let text = fs::read_to_string(&path).map_err(io_err("read", &path))?;
                Ok(text.trim() == "FROZEN")
            }
        }
    }

    /// Re-reads the kernel's status until [`Freezer::is_frozen`] equals `frozen`, for at most
    /// `timeout`.
    ///
    /// # Errors
    /// [`FreezerError::Timeout`] when the kernel has not settled in time (a thread in
    /// uninterruptible sleep freezes only when it wakes), or as [`Freezer::is_frozen`].
    pub fn wait_settled(
        &self,
        h: &ThreadHandle,
        frozen: bool,
        timeout: Duration,
    ) -> Result<(), FreezerError> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.is_frozen(h)? == frozen {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(FreezerError::Timeout {
                    tid: h.tid,
                    want: if frozen { "frozen" } else { "thawed" },
                    timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                });
            }
            std::thread::sleep(Duration::from_micros(SETTLE_POLL_INTERVAL_US));
        }
    }

    /// Thaws every adopted thread of `pid`, moves the process (v2) or its threads (v1) back to
    /// the cgroups they came from, and removes its cgroups. Threads or a process that exited are
    /// not an error; a pid this freezer does not hold is nothing to do. The process is moved by
    /// its pid only while the pid has the start time recorded at adoption; otherwise only what
    /// the kernel lists inside this freezer's own cgroups is moved out.
    ///
    /// # Errors
    /// [`FreezerError::PidReused`] when `pid` names another process now (the clean-up is done
    /// all the same); else the first failure, the rest of the clean-up still attempted.
    pub fn release(&mut self, pid: i32) -> Result<(), FreezerError> {
        match self.adopted.remove(&pid) {
            Some(a) => self.release_adopted(pid, a),
            None => Ok(()),
        }
    }

    /// Gives back one adopted thread: thaws it, moves it (and any thread it started) back to the
    /// process's domain `<namespace>/<pid>` (v2) or to the freezer cgroup it came from (v1), and
    /// removes its cgroup. The process stays held, even with no thread left, until
    /// [`Freezer::release`]. A thread this freezer does not hold is nothing to do.
    ///
    /// # Errors
    /// [`FreezerError::PidReused`] when `pid` names another process now: the whole process is
    /// then released as [`Freezer::release`] does. Else the first failure, the rest still tried.
    pub fn release_thread(&mut self, pid: i32, tid: i32) -> Result<(), FreezerError> {
        let Some(a) = self.adopted.get_mut(&pid) else {
            return Ok(());
        };
        let Some(i) = a.threads.iter().position(|t| t.handle.tid == tid) else {
            return Ok(());
        };
        if identity(pid, a.start_ticks) == Identity::Reused {
            return self.release(pid);
        }
        let t = a.threads.remove(i);
        let domain = a.dir.clone();
        self.release_thread_of(&domain, &t)
    }

    /// Releases every process and removes the namespace directory, reporting the first failure
    /// (dropping does the same silently).
    ///
    /// # Errors
    /// As [`Freezer::release`], or the namespace directory cannot be removed.
    pub fn close(mut self) -> Result<(), FreezerError> {
        self.release_all()
    }

    fn release_all(&mut self) -> Result<(), FreezerError> {
        let mut first = Ok(());
        while let Some((pid, a)) = self.adopted.pop_first() {
            keep_first(&mut first, self.release_adopted(pid, a));
        }
        keep_first(&mut first, remove_dir_settled(&self.root));
        // As it was before: the kernel refuses (EBUSY) while another cgroup below uses the
        // controller, and then it stays on.
        while let Some(file) = self.cpu_enabled.pop() {
            let _ = write_file(&file, "-cpu");
        }
        first
    }

    /// Why `cpu.weight` cannot be set on adopted threads here, or `None` when it can: it is a
    /// cgroup v2 file, and the cpu controller must be available to the namespace (listed in its
    /// parent's `cgroup.controllers`; a controller bound to a v1 hierarchy is not).
    #[must_use]
    pub fn cpu_weight_unavailable(&self) -> Option<String> {
        if self.kind == FreezerKind::V1 {
            return Some(FreezerError::NotV2 { what: "cpu.weight" }.to_string());
        }
        let parent = self.root.parent().unwrap_or(&self.mount);
        let path = parent.join("cgroup.controllers");
        match fs::read_to_string(&path) {
            Ok(t) if t.split_whitespace().any(|c| c == "cpu") => None,
            Ok(t) => Some(format!(
                "the cpu controller is not in cgroup v2 here: {} lists {}; cpu is bound to a \
                 cgroup v1 hierarchy or disabled",
                path.display(),
                if t.trim().is_empty() {
                    "none"
                } else {
                    t.trim()
                }
            )),
            Err(e) => Some(format!("cannot read {}: {e}", path.display())),
        }
    }

    /// Sets the `cpu.weight` (1–10000, 100 the default) of an adopted thread's own cgroup
    /// (cgroup v2), first enabling the cpu controller where it is not yet on the way down:
    /// `+cpu` in `cgroup.subtree_control` of the namespace's parent, of the namespace and of
    /// the process's domain `<namespace>/<pid>` (cpu is a threaded controller, so it may be
    /// enabled in a threaded domain). What was enabled outside the namespace is disabled again
    /// when the freezer closes. The weight goes with the thread's cgroup when it is given back.
    ///
    /// # Errors
    /// [`FreezerError::NotAdopted`], [`FreezerError::NotV2`], or the kernel's refusal of a write
    /// as [`FreezerError::Io`] (`EINVAL` for a weight out of range).
    pub fn set_cpu_weight(&mut self, h: &ThreadHandle, weight: u16) -> Result<(), FreezerError> {
        self.check_held(h)?;
        if self.kind != FreezerKind::V2Threaded {
            return Err(FreezerError::NotV2 { what: "cpu.weight" });
        }
        let domain = h.dir.parent().unwrap_or(&self.root).to_owned();
        let parent = self.root.parent().unwrap_or(&self.mount).to_owned();
        for dir in [parent.clone(), self.root.clone(), domain] {
            let file = dir.join("cgroup.subtree_control");
            let text = fs::read_to_string(&file).map_err(io_err("read", &file))?;
            if text.split_whitespace().any(|c| c == "cpu") {
                continue;
            }
            write_file(&file, "+cpu").map_err(io_err("write", &file))?;
            if dir == parent {
                self.cpu_enabled.push(file);
            }
        }
        let path = h.dir.join("cpu.weight");
        write_file(&path, &weight.to_string()).map_err(io_err("write", &path))
    }

    fn check_held(&self, h: &ThreadHandle) -> Result<(), FreezerError> {
        let held = self
            .adopted
            .get(&h.pid)
            .is_some_and(|a| a.threads.iter().any(|t| t.handle == *h));
        if held {
            Ok(())
        } else {
            Err(FreezerError::NotAdopted {
                pid: h.pid,
                tid: h.tid,
            })
        }
    }

    fn set_frozen(&self, h: &ThreadHandle, frozen: bool) -> Result<(), FreezerError> {
        self.check_held(h)?;
        write_frozen(self.kind, &h.dir, frozen)
    }

    /// The directory of a cgroup path as `/proc/PID/cgroup` gives it.
    fn dir_of(&self, cgroup_path: &str) -> PathBuf {
        let rel = if self.mount_root == "/" {
            cgroup_path
        } else {
            cgroup_path
                .strip_prefix(self.mount_root.as_str())
                .unwrap_or(cgroup_path)
        };
        self.mount.join(rel.trim_start_matches('/'))
    }

    fn enter_process(&self, pid: i32) -> Result<Adopted, FreezerError> {
        let dir = self.root.join(pid.to_string());
        let start_ticks = lull_os::procfs::process_start_ticks(pid)
            .ok_or(FreezerError::ThreadNotFound { pid, tid: pid })?;
        let original = match self.kind {
            FreezerKind::V2Threaded => {
                let path = PathBuf::from(format!("/proc/{pid}/cgroup"));
                let text = fs::read_to_string(&path).map_err(io_err("read", &path))?;
                let cg = cgroup_path_of(&text, None).ok_or(FreezerError::Parse {
                    path,
                    what: "cgroup v2 line (0::)",
                })?;
                let original = self.dir_of(&cg);
                // The root cgroup has no cgroup.type; any other type than a plain domain means
                // the process's threads are already spread over a threaded subtree.
                let type_path = original.join("cgroup.type");
                if type_path.exists() {
                    let t = fs::read_to_string(&type_path).map_err(io_err("read", &type_path))?;
                    if t.trim() != "domain" {
                        return Err(FreezerError::AlreadyThreaded {
                            pid,
                            path: original,
                            cgroup_type: t.trim().to_owned(),
                        });
                    }
                }
                original
            }
            FreezerKind::V1 => PathBuf::new(),
        };
        fs::create_dir(&dir).map_err(io_err("mkdir", &dir))?;
        if self.kind == FreezerKind::V2Threaded {
            // Best effort: without it a successor gives the process to the namespace's parent.
            let _ = lull_os::fs::set_xattr(
                &dir,
                ORIGINAL_XATTR,
                original.as_os_str().as_encoded_bytes(),
            );
            let procs = dir.join("cgroup.procs");
            if let Err(e) = write_file(&procs, &pid.to_string()) {
                let _ = fs::remove_dir(&dir);
                return Err(enter_error(e, pid, pid, &procs));
            }
        }
        Ok(Adopted {
            dir,
            original,
            start_ticks,
            threads: Vec::new(),
        })
    }

    fn enter_thread(&self, pid: i32, tid: i32, label: &str) -> Result<AdoptedThread, FreezerError> {
        let Some(process) = self.adopted.get(&pid) else {
            return Err(FreezerError::NotAdopted { pid, tid });
        };
        let dir = process.dir.join(format!("{label}-{tid}"));
        let original = match self.kind {
            FreezerKind::V2Threaded => PathBuf::new(),
            FreezerKind::V1 => {
                let path = PathBuf::from(format!("/proc/{pid}/task/{tid}/cgroup"));
                let text = match fs::read_to_string(&path) {
                    Ok(t) => t,
                    Err(_) => return Err(FreezerError::ThreadNotFound { pid, tid }),
                };
                let cg = cgroup_path_of(&text, Some("freezer")).ok_or(FreezerError::Parse {
                    path,
                    what: "freezer line",
                })?;
                self.dir_of(&cg)
            }
        };
        fs::create_dir(&dir).map_err(io_err("mkdir", &dir))?;
        let steps: &[(&str, String)] = match self.kind {
            FreezerKind::V2Threaded => &[
                ("cgroup.type", "threaded".to_owned()),
                ("cgroup.threads", tid.to_string()),
            ],
            FreezerKind::V1 => &[("tasks", tid.to_string())],
        };
        for (file, value) in steps {
            let path = dir.join(file);
            if let Err(e) = write_file(&path, value) {
                let _ = fs::remove_dir(&dir);
                return Err(enter_error(e, pid, tid, &path));
            }
        }
        Ok(AdoptedThread {
            handle: ThreadHandle { pid, tid, dir },
            original,
        })
    }

    /// Thaws `t`, moves every thread in its cgroup out (to `domain`, v2; to where `t` came from,
    /// v1) and removes the cgroup. Only ids the kernel lists in `t`'s cgroup are written, so
    /// nothing outside it can be moved.
    fn release_thread_of(&self, domain: &Path, t: &AdoptedThread) -> Result<(), FreezerError> {
        let leaf = &t.handle.dir;
        let mut first = ignore_gone(write_frozen(self.kind, leaf, false));
        let (members, dest) = match self.kind {
            // Inside one threaded subtree a thread moves alone, by `cgroup.threads`.
            FreezerKind::V2Threaded => (leaf.join("cgroup.threads"), domain.join("cgroup.threads")),
            FreezerKind::V1 => (
                leaf.join("tasks"),
                existing_ancestor(&t.original, &self.mount).join("tasks"),
            ),
        };
        for id in read_ids(&members) {
            keep_first(&mut first, move_id(&dest, id));
        }
        keep_first(&mut first, remove_dir_settled(leaf));
        first
    }

    fn release_adopted(&self, pid: i32, a: Adopted) -> Result<(), FreezerError> {
        let who = identity(pid, a.start_ticks);
        let mut first = Ok(());
        for t in &a.threads {
            keep_first(
                &mut first,
                ignore_gone(write_frozen(self.kind, &t.handle.dir, false)),
            );
        }
        match self.kind {
            FreezerKind::V2Threaded => {
                let target = existing_ancestor(&a.original, &self.mount);
                let procs = target.join("cgroup.procs");
                // By pid only while it is still the adopted process: a reused pid names a process
                // that was never ours. (Without one, the sweep below moves whatever is left.)
                if who == Identity::Same {
                    keep_first(&mut first, move_id(&procs, pid));
                }
                // What the kernel lists in our cgroups is there because of us (the adopted
                // process, or processes forked by adopted threads): send it along.
                let dirs = a.threads.iter().map(|t| t.handle.dir.clone());
                for dir in dirs.chain([a.dir.clone()]) {
                    for other in read_ids(&dir.join("cgroup.procs")) {
                        keep_first(&mut first, move_id(&procs, other));
                    }
                }
            }
            FreezerKind::V1 => {
                for t in &a.threads {
                    let tasks = existing_ancestor(&t.original, &self.mount).join("tasks");
                    // Threads started by the adopted one are in its cgroup too.
                    for id in read_ids(&t.handle.dir.join("tasks")) {
                        keep_first(&mut first, move_id(&tasks, id));
                    }
                }
            }
        }
        for t in &a.threads {
            keep_first(&mut first, remove_dir_settled(&t.handle.dir));
        }
        keep_first(&mut first, remove_dir_settled(&a.dir));
        if who == Identity::Reused {
            return Err(FreezerError::PidReused { pid });
        }
        first
    }
}

impl Drop for Freezer {
    fn drop(&mut self) {
        let _ = self.release_all();
    }
}

fn keep_first(first: &mut Result<(), FreezerError>, next: Result<(), FreezerError>) {
    if first.is_ok() {
        *first = next;
    }
}

/// A cgroup that is gone (its last thread exited and something removed it) needs no thawing.
fn ignore_gone(r: Result<(), FreezerError>) -> Result<(), FreezerError> {
    match r {
        Err(FreezerError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn write_frozen(kind: FreezerKind, dir: &Path, frozen: bool) -> Result<(), FreezerError> {
    let (file, value) = match (kind, frozen) {
        (FreezerKind::V2Threaded, true) => ("cgroup.freeze", "1"),
        (FreezerKind::V2Threaded, false) => ("cgroup.freeze", "0"),
        (FreezerKind::V1, true) => ("freezer.state", "FROZEN"),
        (FreezerKind::V1, false) => ("freezer.state", "THAWED"),
    };
    let path = dir.join(file);
    write_file(&path, value).map_err(io_err("write", &path))
}

/// One `write(2)` of `value` to an existing kernel file (cgroup files take one value per write).
fn write_file(path: &Path, value: &str) -> io::Result<()> {
    let mut f = fs::OpenOptions::new().write(true).open(path)?;
    f.write_all(value.as_bytes())
}

/// The failure of writing thread `tid` of `pid` to `path` on adoption: `ESRCH` means it exited.
fn enter_error(e: io::Error, pid: i32, tid: i32, path: &Path) -> FreezerError {
    if e.raw_os_error() == Some(Errno::ESRCH.0) {
        FreezerError::ThreadNotFound { pid, tid }
    } else {
        io_err("write", path)(e)
    }
}

/// Moves process or thread `id` into the cgroup whose `cgroup.procs` or `tasks` is `file`; an id
/// that no longer exists has nothing to move.
fn move_id(file: &Path, id: i32) -> Result<(), FreezerError> {
    match write_file(file, &id.to_string()) {
        Err(e) if e.raw_os_error() != Some(Errno::ESRCH.0) => Err(io_err("write", file)(e)),
        _ => Ok(()),
    }
}

fn read_ids(file: &Path) -> Vec<i32> {
    fs::read_to_string(file)
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// `dir` if it still exists, else its nearest existing ancestor inside the hierarchy (the cgroup
/// a process came from may have been removed while we held it).
fn existing_ancestor(dir: &Path, mount: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.starts_with(mount) && d.is_dir())
        .map_or_else(|| mount.to_owned(), Path::to_owned)
}

/// Removes an empty cgroup directory, retrying while the kernel still counts an exiting thread in
/// it (`EBUSY`), up to [`RELEASE_SETTLE_TIMEOUT_MS`]. A directory already gone is fine.
fn remove_dir_settled(dir: &Path) -> Result<(), FreezerError> {
    let deadline = Instant::now() + Duration::from_millis(RELEASE_SETTLE_TIMEOUT_MS);
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(Errno::EBUSY.0) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_micros(SETTLE_POLL_INTERVAL_US));
            }
            Err(e) => return Err(io_err("rmdir", dir)(e)),
        }
    }
}

/// Longest recorded original cgroup path read back (a path under the cgroup mount).
const XATTR_MAX_BYTES: usize = 4096;

/// Every directory under `root` (itself included), children before their parents.
fn dirs_post_order(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = fs::read_dir(root) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(dirs_post_order(&e.path()));
            }
        }
    }
    out.push(root.to_owned());
    out
}

/// The process a thread id belongs to (`Tgid:` of `/proc/TID/status`).
fn tgid_of(tid: i32) -> Option<i32> {
    let text = fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Undoes what a dead freezer left in `root` (see [`Recovered`]): thaws every cgroup in it,
/// moves everything the kernel lists in it out, and removes every directory.
///
/// # Errors
/// The first cgroup that cannot be removed, as [`FreezerError::Io`]; everything else is tried.
fn recover_stale(kind: FreezerKind, mount: &Path, root: &Path) -> Result<Recovered, FreezerError> {
    let fallback = root.parent().unwrap_or(mount).to_owned();
    let dirs = dirs_post_order(root);
    let mut r = Recovered {
        path: root.to_owned(),
        ..Recovered::default()
    };
    for dir in &dirs {
        let frozen = match kind {
            FreezerKind::V2Threaded => {
                fs::read_to_string(dir.join("cgroup.freeze")).is_ok_and(|t| t.trim() == "1")
            }
            FreezerKind::V1 => {
                fs::read_to_string(dir.join("freezer.state")).is_ok_and(|t| t.trim() != "THAWED")
            }
        };
        if frozen && write_frozen(kind, dir, false).is_ok() {
            r.thawed_cgroups += 1;
        }
    }
    let mut first = Ok(());
    for dir in &dirs {
        match kind {
            FreezerKind::V2Threaded => {
                // `<namespace>/<pid>` carries where its process came from; its children are
                // the threaded leaves of the same process.
                let domain = dir
                    .ancestors()
                    .take_while(|d| *d != root)
                    .last()
                    .unwrap_or(dir);
                let target = lull_os::fs::get_xattr(domain, ORIGINAL_XATTR, XATTR_MAX_BYTES)
                    .map(|b| PathBuf::from(String::from_utf8_lossy(&b).into_owned()))
                    .filter(|p| p.starts_with(mount) && !p.starts_with(root) && p.is_dir())
                    .unwrap_or_else(|| fallback.clone());
                let procs = target.join("cgroup.procs");
                let mut pids: Vec<i32> = read_ids(&dir.join("cgroup.procs"));
                pids.extend(
                    read_ids(&dir.join("cgroup.threads"))
                        .into_iter()
                        .filter_map(tgid_of),
                );
                pids.sort_unstable();
                pids.dedup();
                for pid in pids {
                    let moved = move_id(&procs, pid);
                    if moved.is_ok() {
                        r.moved += 1;
                    }
                    keep_first(&mut first, moved);
                }
            }
            FreezerKind::V1 => {
                let tasks = fallback.join("tasks");
                for id in read_ids(&dir.join("tasks")) {
                    let moved = move_id(&tasks, id);
                    if moved.is_ok() {
                        r.moved += 1;
                    }
                    keep_first(&mut first, moved);
                }
            }
        }
    }
    for dir in &dirs {
        let removed = remove_dir_settled(dir);
        if removed.is_ok() {
            r.removed_dirs += 1;
        }
        keep_first(&mut first, removed);
    }
    first.map(|()| r)
}

fn check_name(what: &'static str, name: &str) -> Result<(), FreezerError> {
    let ok = !name.is_empty()
        && name.len() <= NAME_MAX_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(FreezerError::BadName {
            what,
            name: name.to_owned(),
        })
    }
}

/// For tests (here and, with feature `test-support`, of the crates that host the actuator).
#[cfg(any(test, feature = "test-support"))]
impl Freezer {
    /// Makes the recorded start time of `pid` wrong, as if the process had exited and its
    /// pid been reused: the only way to reach that path deterministically.
    pub fn forge_start_ticks(&mut self, pid: i32) {
        if let Some(a) = self.adopted.get_mut(&pid) {
            a.start_ticks = a.start_ticks.wrapping_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_file_names() {
        for good in ["lull-guis", "drawing", "a_1", &"x".repeat(NAME_MAX_LEN)] {
            assert!(check_name("label", good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "cgroup.procs",
            "sp ace",
            "é",
            &"x".repeat(NAME_MAX_LEN + 1),
        ] {
            assert!(
                matches!(check_name("label", bad), Err(FreezerError::BadName { .. })),
                "{bad}"
            );
        }
        assert!(matches!(
            Freezer::open("../escape"),
            Err(FreezerError::BadName {
                what: "namespace",
                ..
            })
        ));
    }
}
