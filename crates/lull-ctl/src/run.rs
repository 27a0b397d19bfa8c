//! `run`: a command under one of seed 004's schemes (`lull_sched::controller`), live.
//!
//! The registry opens the proc connector *before* the command is spawned, so every thread and
//! process the command creates is announced, however early: the threads listed at registration
//! are told to the controller as `Adopted`, the ones announced after as `Forked` (duplicates
//! dropped by thread id), the ones ended as `Exited`. A timerfd wakes the loop at the
//! controller's deadlines (every sampling period); each deadline samples every thread first and
//! answers the controller's questions from that sample; its `Affinity` actions go through
//! `lull-actuate`'s actuator. The run ends when the command's process exits (its pidfd polls
//! readable); every mask is then put back. Without the connector (not root) new threads are
//! found by listing `/proc/PID/task` at each sample and the report says so.
//!
//! The command never outlives the run: it gets `SIGTERM` if the thread that started it dies
//! (`PR_SET_PDEATHSIG`), and a run that fails after the spawn kills and reaps it before it
//! returns the error.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};

use lull_actuate::Actuator;
use lull_os::sys;
use lull_sched::controller::{Controller, CoreSets, Scheme};
use lull_sched::ids::CpuId;
use lull_sched::seam::{Action, Fact, SeamPolicy, ThreadRef, ThreadSample};
use serde::Serialize;

use crate::error::CtlError;
use crate::registry::{Change, FollowMode, Registry, Sample};
use crate::wakeups::{wait_set, TOKEN_CONNECTOR, TOKEN_EXIT, TOKEN_TIMER};

/// What to run, and how.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The program and its arguments.
    pub command: Vec<OsString>,
    pub scheme: Scheme,
    pub sets: CoreSets,
    /// The controller's sampling period (0: `DEFAULT_SAMPLE_PERIOD_NS`).
    pub sample_period_ns: u64,
    /// Send the command's standard output and error to `/dev/null` instead of passing them
    /// through.
    pub discard_output: bool,
}

/// One thread of the run.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct ThreadTrace {
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    /// CPU time at its last sample.
    pub cpu_ns: u64,
    /// Scaled CPU time at its last sample.
    pub work_ns: u64,
    /// (ns since start, cpu) at every sample where the thread ran
    pub placements: Vec<(u64, u32)>,
}

/// What a run did.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct RunReport {
    /// The scheme's name (`toggle-0.25s`).
    pub scheme: String,
    /// From spawning the command to its process's exit.
    pub completion_ns: u64,
    pub exit_code: Option<i32>,
    /// The signal that ended the command, if one did.
    pub signal: Option<i32>,
    pub threads: Vec<ThreadTrace>,
    /// The controller's counters (`threads_seen`, `slots`, `samples`, `gone`, `decisions`,
    /// `masks`) and the actuator's (`masks_applied`, `masks_refused`).
    pub controller: Vec<(String, u64)>,
    /// Whether `work_ns` is scaled CPU time here (see `unscaled_reason`).
    pub scaled: bool,
    pub samples: u64,
    /// Mean cost of one sample of every thread (reading and scaling), in nanoseconds.
    pub sample_cost_ns_mean: u64,
    pub unscaled_reason: Option<String>,
    pub follow: FollowMode,
    /// Threads that vanished between being announced and being read (skipped).
    pub vanished: u64,
}

impl RunReport {
    /// The counter of [`RunReport::controller`] named `name`, if the run has one.
    #[must_use]
    pub fn counter(&self, name: &str) -> Option<u64> {
        self.controller
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
    }

    /// The command's status as a shell reports it: its exit code, or 128 + the signal that
    /// ended it, so `lull ctl run` can end as the command did.
    #[must_use]
    pub fn shell_status(&self) -> i32 {
        match (self.exit_code, self.signal) {
            (Some(code), _) => code,
            (None, Some(sig)) => 128 + sig,
            (None, None) => 1,
        }
    }
}

/// The spawned command until it has been waited for: dropped before that (an error in the
/// run's loop), it is killed and reaped, so no command is left running unmanaged.
struct Spawned(Option<Child>);

impl Spawned {
    fn id(&self) -> u32 {
        self.0.as_ref().map_or(0, Child::id)
    }

    fn wait(mut self) -> std::io::Result<ExitStatus> {
        let mut child = self.0.take().expect("waited for once");
        child.wait()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs `opts.command` under `opts.scheme`; see the module docs.
///
/// # Errors
/// [`CtlError::Spawn`] when the command cannot start (an empty command too), a failure of the
/// timer, of epoll or of waiting for the child.
pub fn run(opts: &RunOptions) -> Result<RunReport, CtlError> {
    let Some((program, args)) = opts.command.split_first() else {
        return Err(CtlError::Spawn {
            command: String::new(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no command given"),
        });
    };
    let io = |what: &'static str| move |e| CtlError::io(what, e);
    let mut reg = Registry::new(true);
    let mut controller = Controller::new(opts.scheme, opts.sets, opts.sample_period_ns);
    let mut actuator = Actuator::new(Err(crate::NO_FREEZER.to_owned()));
    let (epoll, timer) = wait_set(&reg)?;
    let mut cmd = Command::new(program);
    cmd.args(args);
    if opts.discard_output {
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
    }
    sys::end_with_parent(&mut cmd);
    let start = sys::monotonic_ns();
    let child = cmd.spawn().map_err(|source| CtlError::Spawn {
        command: opts
            .command
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" "),
        source,
    })?;
    let child = Spawned(Some(child));
    let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
    let pidfd =
        sys::pidfd_open(pid).map_err(|e| CtlError::io("open a pidfd for the command", e))?;
    epoll
        .add(pidfd.as_raw_fd(), TOKEN_EXIT)
        .map_err(io("watch the command's end"))?;

    let mut out: Vec<Action> = Vec::new();
    let mut traces: BTreeMap<i32, ThreadTrace> = BTreeMap::new();
    // A command that ends before it is registered has no threads to manage.
    if let Ok(adopted) = reg.register(pid) {
        let now = sys::monotonic_ns();
        for thread in adopted {
            controller.on_fact(now, &Fact::Adopted { thread }, &mut out);
        }
    }
    let (mut samples, mut changes, mut ready) = (Vec::<Sample>::new(), Vec::new(), Vec::new());
    let mut armed: Option<u64> = None;
    let (mut cost_ns, mut cost_n, mut applied, mut refused) = (0u64, 0u64, 0u64, 0u64);
    let mut apply = |actuator: &mut Actuator, out: &mut Vec<Action>| {
        for a in out.drain(..) {
            match actuator.apply(&a) {
                lull_actuate::Outcome::Applied => applied += 1,
                _ => refused += 1,
            }
        }
    };
    apply(&mut actuator, &mut out);
    loop {
        let want = controller.next_deadline_ns();
        if want != armed {
            match want {
                Some(at) => timer.set_abs(at, 0),
                None => timer.disarm(),
            }
            .map_err(io("arm the sampling timer"))?;
            armed = want;
        }
        epoll.wait_forever(&mut ready).map_err(io("wait"))?;
        if ready.contains(&TOKEN_CONNECTOR) {
            reg.process_events(&mut changes);
            tell(&mut controller, &changes, &mut out);
            changes.clear();
        }
        if ready.contains(&TOKEN_EXIT) {
            break;
        }
        if ready.contains(&TOKEN_TIMER) {
            let _ = timer.take_expirations();
            armed = None;
            let now = sys::monotonic_ns();
            if controller.next_deadline_ns().is_some_and(|at| at <= now) {
                samples.clear();
                reg.sample(&mut samples, &mut changes);
                cost_ns += sys::monotonic_ns() - now;
                cost_n += 1;
                tell(&mut controller, &changes, &mut out);
                changes.clear();
                record(&mut traces, &samples, now - start);
                let by_tid: BTreeMap<i32, &Sample> = samples.iter().map(|s| (s.tid, s)).collect();
                let mut usage = |t: ThreadRef| {
                    by_tid.get(&t.tid).map(|s| ThreadSample {
                        cpu_ns: s.cpu_ns,
                        work_ns: s.work_ns,
                        cpu: CpuId(s.cpu as usize),
                    })
                };
                controller.on_deadline(now, &mut usage, &mut out);
            }
        }
        apply(&mut actuator, &mut out);
    }
    let status = child.wait().map_err(io("wait for the command"))?;
    let completion_ns = sys::monotonic_ns() - start;
    // Give back every mask (threads of processes the command left behind included).
    actuator.close();
    let mut counters: Vec<(String, u64)> = controller
        .counters()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    counters.push(("masks_applied".into(), applied));
    counters.push(("masks_refused".into(), refused));
    Ok(RunReport {
        scheme: opts.scheme.name(),
        completion_ns,
        exit_code: status.code(),
        signal: status.signal(),
        threads: traces.into_values().collect(),
        controller: counters,
        scaled: reg.speeds().scaled(),
        samples: cost_n,
        sample_cost_ns_mean: cost_ns.checked_div(cost_n).unwrap_or(0),
        unscaled_reason: reg.speeds().unscaled_reason().map(str::to_owned),
        follow: reg.follow_mode().clone(),
        vanished: reg.counters().vanished,
    })
}

/// Tells the controller the threads born and ended.
fn tell(controller: &mut Controller, changes: &[Change], out: &mut Vec<Action>) {
    let now = sys::monotonic_ns();
    for c in changes {
        let fact = match *c {
            Change::Born { parent, child } => Fact::Forked { parent, child },
            Change::Died { thread } => Fact::Exited { thread },
        };
        controller.on_fact(now, &fact, out);
    }
}

/// Adds this sample to each thread's trace: its counters, and its CPU if it ran.
fn record(traces: &mut BTreeMap<i32, ThreadTrace>, samples: &[Sample], t_ns: u64) {
    for s in samples {
        let tr = traces.entry(s.tid).or_insert_with(|| ThreadTrace {
            pid: s.pid,
            tid: s.tid,
            comm: s.comm.clone(),
            cpu_ns: 0,
            work_ns: 0,
            placements: Vec::new(),
        });
        tr.comm.clone_from(&s.comm);
        tr.cpu_ns = s.cpu_ns;
        tr.work_ns = s.work_ns;
        if s.delta_cpu_ns > 0 {
            tr.placements.push((t_ns, s.cpu));
        }
    }
}
