//! The registry: the processes registered with the controller, every thread of theirs, and
//! (when asked) the processes they start, followed as the kernel creates and ends them.
//!
//! [`Registry::register`] takes every thread `/proc/PID/task` lists now. Threads born later come
//! from the proc connector ([`lull_os::proc_connector`]; root, or any user where the kernel
//! lets them listen): its fork events name the new task and its process, its exit events the
//! task that ended. Without the connector, each sample lists `/proc/PID/task` again instead; a
//! thread that lives and dies between two samples is then never seen, which
//! [`Registry::follow_mode`] says.
//!
//! [`Registry::sample`] reads every tracked thread and gives one [`Sample`] per thread; a thread
//! whose files say it has gone is dropped and reported as a [`Change::Died`].

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::RawFd;
use std::path::Path;

use lull_os::proc_connector::{ProcConnector, ProcEvent};
use lull_os::procfs;
use lull_sched::seam::ThreadRef;
use serde::Serialize;

use crate::error::CtlError;
use crate::sense::{Speeds, ThreadFiles};

/// One thread at one sample: what `lull ctl watch --json` prints per line.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct Sample {
    /// Nanoseconds since the registry was made.
    pub t_ns: u64,
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    /// Scheduler state letter (`R`, `S`, `D`, …).
    pub state: char,
    /// The CPU it last ran on.
    pub cpu: u32,
    /// CPU time since the thread started.
    pub cpu_ns: u64,
    /// Scaled CPU time ([`crate::sense`]): since registration, plus the CPU time before it
    /// scaled at the speed of the CPU it was on then.
    pub work_ns: u64,
    /// CPU time since the previous sample (since registration for the first).
    pub delta_cpu_ns: u64,
}

/// A thread that came or went.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Change {
    /// A task the registry follows was created. `parent` is the creating process's main thread
    /// for a new process, the process's own main thread for a new thread (the kernel names no
    /// creating thread).
    Born {
        parent: ThreadRef,
        child: ThreadRef,
    },
    Died {
        thread: ThreadRef,
    },
}

/// How threads born after registration are found.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum FollowMode {
    /// The proc connector: every fork and exit.
    Connector,
    /// `/proc/PID/task` listed again at each sample: a thread shorter than a sampling period
    /// may be missed. `reason` says why the connector is not used.
    Rescan { reason: String },
}

/// For people: how new threads are found, and why the connector is not used when it is not.
impl std::fmt::Display for FollowMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FollowMode::Connector => f.write_str("the proc connector"),
            FollowMode::Rescan { reason } => {
                write!(f, "a rescan of /proc at each sample ({reason})")
            }
        }
    }
}

/// What the registry saw.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct RegistryCounters {
    /// Processes registered or followed.
    pub processes: u64,
    /// Threads tracked at some point.
    pub threads_seen: u64,
    /// Threads that vanished between being listed (or announced) and being read: skipped.
    pub vanished: u64,
    /// Threads that ended while tracked.
    pub exited: u64,
    /// Listings of `/proc/PID/task` after registration (rescan mode).
    pub rescans: u64,
    /// Samples taken.
    pub samples: u64,
    /// Times the connector said events were lost; each is followed by a rescan.
    pub connector_overruns: u64,
}

#[derive(Debug)]
struct Tracked {
    thread: ThreadRef,
    comm: String,
    files: ThreadFiles,
    cpu_ns: u64,
    work_ns: u64,
}

/// See the module docs.
#[derive(Debug)]
pub struct Registry {
    start_ns: u64,
    /// Followed processes: pid → start time.
    procs: BTreeMap<i32, u64>,
    /// Processes registered by the caller (a subset of `procs`).
    registered: BTreeSet<i32>,
    threads: BTreeMap<i32, Tracked>,
    connector: Option<ProcConnector>,
    mode: FollowMode,
    follow_children: bool,
    speeds: Speeds,
    counters: RegistryCounters,
}

impl Registry {
    /// A registry sensing CPU speeds from `/sys/devices/system/cpu`, following threads through
    /// the proc connector when it opens; `follow_children` follows the processes registered
    /// ones start too.
    #[must_use]
    pub fn new(follow_children: bool) -> Registry {
        let (connector, mode) = match ProcConnector::open() {
            Ok(c) => (Some(c), FollowMode::Connector),
            Err(e) => (
                None,
                FollowMode::Rescan {
                    reason: e.to_string(),
                },
            ),
        };
        Registry::with(
            connector,
            mode,
            follow_children,
            Speeds::probe(Path::new(lull_os::topology::SYSFS_CPUS)),
        )
    }

    /// A registry that lists `/proc/PID/task` at every sample instead of opening the connector.
    #[must_use]
    pub fn rescanning(follow_children: bool, reason: &str) -> Registry {
        Registry::with(
            None,
            FollowMode::Rescan {
                reason: reason.to_owned(),
            },
            follow_children,
            Speeds::probe(Path::new(lull_os::topology::SYSFS_CPUS)),
        )
    }

    fn with(
        connector: Option<ProcConnector>,
        mode: FollowMode,
        follow_children: bool,
        speeds: Speeds,
    ) -> Registry {
        Registry {
            start_ns: lull_os::sys::monotonic_ns(),
            procs: BTreeMap::new(),
            registered: BTreeSet::new(),
            threads: BTreeMap::new(),
            connector,
            mode,
            follow_children,
            speeds,
            counters: RegistryCounters::default(),
        }
    }

    /// The connector's socket, to wait on with the sampling timer (`None` in rescan mode).
    #[must_use]
    pub fn connector_fd(&self) -> Option<RawFd> {
        self.connector.as_ref().map(ProcConnector::raw)
    }

    #[must_use]
    pub fn follow_mode(&self) -> &FollowMode {
        &self.mode
    }

    #[must_use]
    pub fn speeds(&self) -> &Speeds {
        &self.speeds
    }

    #[must_use]
    pub fn counters(&self) -> RegistryCounters {
        self.counters
    }

    /// The threads tracked now.
    #[must_use]
    pub fn threads(&self) -> Vec<ThreadRef> {
        self.threads.values().map(|t| t.thread).collect()
    }

    /// The tracked thread `tid`.
    #[must_use]
    pub fn thread(&self, tid: i32) -> Option<ThreadRef> {
        self.threads.get(&tid).map(|t| t.thread)
    }

    /// Whether any followed process still has a tracked thread.
    #[must_use]
    pub fn any_alive(&self) -> bool {
        !self.threads.is_empty()
    }

    /// Registers process `pid`: every thread it has now, returned in ascending id.
    ///
    /// # Errors
    /// [`CtlError::NoSuchProcess`], [`CtlError::NotAProcess`] for a thread id,
    /// [`CtlError::KernelThread`], [`CtlError::PermissionDenied`] when `/proc` refuses.
    pub fn register(&mut self, pid: i32) -> Result<Vec<ThreadRef>, CtlError> {
        if pid <= 0 {
            return Err(CtlError::NoSuchProcess { pid });
        }
        let text = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CtlError::NoSuchProcess { pid })
            }
            Err(e) => return Err(CtlError::io(format!("read /proc/{pid}/stat"), e)),
        };
        let stat = procfs::parse_task_stat(&text).ok_or_else(|| CtlError::Io {
            what: format!("parse /proc/{pid}/stat"),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, text.clone()),
        })?;
        if stat.is_kernel_thread() {
            return Err(CtlError::KernelThread {
                pid,
                comm: stat.comm,
            });
        }
        match procfs::thread_group_of(pid) {
            Some(tgid) if tgid != pid => {
                return Err(CtlError::NotAProcess {
                    tid: pid,
                    pid: tgid,
                })
            }
            None => return Err(CtlError::NoSuchProcess { pid }),
            Some(_) => {}
        }
        if !self.procs.contains_key(&pid) {
            self.counters.processes += 1;
        }
        self.procs.insert(pid, stat.start_ticks);
        self.registered.insert(pid);
        let mut born = Vec::new();
        self.scan(pid, &mut born)
            .map_err(|e| CtlError::io(format!("list /proc/{pid}/task"), e))?;
        Ok(born.into_iter().map(|(_, t)| t).collect())
    }

    /// Lists `/proc/PID/task` and tracks the threads not tracked yet, giving each with its
    /// process's main thread.
    fn scan(&mut self, pid: i32, born: &mut Vec<(ThreadRef, ThreadRef)>) -> std::io::Result<()> {
        let Some(&start) = self.procs.get(&pid) else {
            return Ok(());
        };
        let mut tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))?
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        tids.sort_unstable();
        let main = ThreadRef {
            pid,
            tid: pid,
            process_start_ticks: start,
        };
        for tid in tids {
            if self.threads.contains_key(&tid) {
                continue;
            }
            let t = ThreadRef {
                pid,
                tid,
                process_start_ticks: start,
            };
            if self.track(t) {
                born.push((main, t));
            }
        }
        Ok(())
    }

    /// Starts tracking `t`; false (counted as vanished) when it is already gone.
    fn track(&mut self, t: ThreadRef) -> bool {
        let Some((files, reading)) = ThreadFiles::open(t.pid, t.tid)
            .ok()
            .and_then(|f| f.read().map(|r| (f, r)))
        else {
            self.counters.vanished += 1;
            return false;
        };
        self.counters.threads_seen += 1;
        let work_ns = self.speeds.work_ns(reading.stat.processor, reading.cpu_ns);
        self.threads.insert(
            t.tid,
            Tracked {
                thread: t,
                comm: reading.stat.comm,
                files,
                cpu_ns: reading.cpu_ns,
                work_ns,
            },
        );
        true
    }

    fn untrack(&mut self, tid: i32, changes: &mut Vec<Change>) {
        if let Some(t) = self.threads.remove(&tid) {
            self.counters.exited += 1;
            changes.push(Change::Died { thread: t.thread });
            let pid = t.thread.pid;
            if !self.threads.values().any(|x| x.thread.pid == pid) {
                self.procs.remove(&pid);
            }
        }
    }

    /// Reads what the connector has: new threads of followed processes (and new processes they
    /// start, when following children), and threads that ended. In rescan mode, nothing.
    pub fn process_events(&mut self, changes: &mut Vec<Change>) {
        let Some(mut c) = self.connector.take() else {
            return;
        };
        let before = c.counters().overruns;
        let mut events = Vec::new();
        let drained = c.drain(|ev| events.push(ev));
        let lost = c.counters().overruns - before + u64::from(drained.is_err());
        self.connector = Some(c);
        for ev in events {
            self.event(ev, changes);
        }
        if lost > 0 {
            // Events were lost: list the followed processes again so no thread stays unknown.
            self.counters.connector_overruns += lost;
            self.rescan_all(changes);
        }
    }

    fn event(&mut self, ev: ProcEvent, changes: &mut Vec<Change>) {
        match ev {
            ProcEvent::Fork {
                parent_tgid,
                child_pid,
                child_tgid,
                ..
            } => {
                let is_thread = child_pid != child_tgid;
                let parent_pid = if is_thread { child_tgid } else { parent_tgid };
                let Some(&parent_start) = self.procs.get(&parent_pid) else {
                    return;
                };
                if self.threads.contains_key(&child_pid) {
                    return;
                }
                let parent = ThreadRef {
                    pid: parent_pid,
                    tid: parent_pid,
                    process_start_ticks: parent_start,
                };
                let child_start = if is_thread {
                    parent_start
                } else {
                    if !self.follow_children {
                        return;
                    }
                    let Some(s) = procfs::process_start_ticks(child_tgid) else {
                        self.counters.vanished += 1;
                        return;
                    };
                    self.counters.processes += 1;
                    self.procs.insert(child_tgid, s);
                    s
                };
                let child = ThreadRef {
                    pid: child_tgid,
                    tid: child_pid,
                    process_start_ticks: child_start,
                };
                if self.track(child) {
                    changes.push(Change::Born { parent, child });
                } else if !is_thread {
                    self.procs.remove(&child_tgid);
                }
            }
            ProcEvent::Exit { pid, .. } => self.untrack(pid, changes),
            ProcEvent::Exec { .. } | ProcEvent::Ack { .. } | ProcEvent::Other { .. } => {}
        }
    }

    fn rescan_all(&mut self, changes: &mut Vec<Change>) {
        let pids: Vec<i32> = self.procs.keys().copied().collect();
        let mut born = Vec::new();
        for pid in pids {
            self.counters.rescans += 1;
            // A process gone is found so by its threads' reads at the sample.
            let _ = self.scan(pid, &mut born);
        }
        changes.extend(
            born.into_iter()
                .map(|(parent, child)| Change::Born { parent, child }),
        );
    }

    /// Reads every tracked thread (and, in rescan mode, lists the followed processes first):
    /// one [`Sample`] per live thread into `out`, the threads found gone and born into
    /// `changes`.
    pub fn sample(&mut self, out: &mut Vec<Sample>, changes: &mut Vec<Change>) {
        self.process_events(changes);
        if self.connector.is_none() {
            self.rescan_all(changes);
        }
        self.speeds.refresh();
        self.counters.samples += 1;
        let t_ns = lull_os::sys::monotonic_ns().saturating_sub(self.start_ns);
        let mut gone = Vec::new();
        for (&tid, t) in &mut self.threads {
            let Some(r) = t.files.read() else {
                gone.push(tid);
                continue;
            };
            let delta = r.cpu_ns.saturating_sub(t.cpu_ns);
            t.cpu_ns = r.cpu_ns;
            t.work_ns += self.speeds.work_ns(r.stat.processor, delta);
            if t.comm != r.stat.comm {
                t.comm.clone_from(&r.stat.comm);
            }
            out.push(Sample {
                t_ns,
                pid: t.thread.pid,
                tid,
                comm: t.comm.clone(),
                state: r.stat.state,
                cpu: r.stat.processor,
                cpu_ns: r.cpu_ns,
                work_ns: t.work_ns,
                delta_cpu_ns: delta,
            });
        }
        for tid in gone {
            self.untrack(tid, changes);
        }
    }
}
