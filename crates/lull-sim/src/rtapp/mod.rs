//! rt-app workloads in the simulator: the threads of an [`RtApp`] run on a platform's cores
//! through the same kernel, policies and power manager as the framework experiments, and log
//! their periods as rt-app does, so that [`lull_workload::rtapp::ThreadSummary`] summarises a
//! simulated run and a live one with the same code.

mod user;

use lull_model::time::NS_PER_S;
use lull_workload::rtapp::{Calibration, PeriodRecord, RtApp};

use crate::drive::{drive_on, Machine};
use crate::platform::Platform;
use crate::policy::{PolicyError, PolicySpec};
use crate::spec::MAX_DURATION_MS;
use user::{RtAppUser, Work};

/// Linux's default timer slack of a normal thread: `init_task.timer_slack_ns` = 50 µs
/// (`init/init_task.c`), inherited by every `SCHED_OTHER` thread.
pub const DEFAULT_TIMER_SLACK_NS: u64 = 50_000;

/// How to run an rt-app workload.
#[derive(Clone, Debug)]
pub struct RtAppRun<'p> {
    pub platform: &'p Platform,
    /// The kernel's policies (scheduler, governor, …); unset slots take the platform's defaults.
    pub policy: PolicySpec,
    pub seed: u64,
    /// The real time one busy loop takes at the reference speed, measured on the machine the
    /// workload models; `None`: exactly the workload's calibration (the ideal rt-app).
    pub loop_ns: Option<f64>,
    /// Timer slack of the threads' sleeps.
    pub timer_slack_ns: u64,
    /// CPU time each pass over a phase costs its thread beyond the events rt-app times, ns at
    /// the reference speed: the return from the sleep, rt-app's clock reads and log entry, the
    /// next sleep's system call. 0 (the default): none. `lull validate kernel` measures it on
    /// the machine it models (tracefs: a lone timer thread's time on CPU per period less the
    /// run it logged).
    pub pass_overhead_ns: u64,
    /// The largest per-pass overhead, ns: above `pass_overhead_ns`, each pass draws its
    /// overhead uniformly from `pass_overhead_ns..=pass_overhead_max_ns` (from the seed, in a
    /// sequence of its own). A live thread's time per pass varies (its clock reads, cache and
    /// interrupt noise); `lull validate kernel` measures the range as the 10th–90th
    /// percentiles of a lone timer thread's extra time on CPU. The variation is what reorders
    /// identical threads woken together from one period to the next. 0 (the default): fixed.
    pub pass_overhead_max_ns: u64,
    /// Whether the threads' timer grid starts at a random point of a tick period (a uniform
    /// draw from the seed) instead of on a tick. A live rt-app starts whenever it is run, so
    /// its timers expire at an arbitrary phase of the kernel's tick; with the grid on a tick
    /// every expiry coincides with a tick, which runs the timer at once (its soft expiry) and
    /// preempts a hog there. false (the default): on the tick, at time 0.
    pub random_start_phase: bool,
    /// Record the run's scheduling events (`RtAppResult::audit`), for the timeline beside a
    /// live trace (`lull validate kernel --timeline`).
    pub audit: bool,
}

impl<'p> RtAppRun<'p> {
    /// A run on `platform` with its default policies, seed 1, ideal calibration and Linux's
    /// default timer slack.
    #[must_use]
    pub fn new(platform: &'p Platform) -> RtAppRun<'p> {
        RtAppRun {
            platform,
            policy: PolicySpec::default(),
            seed: 1,
            loop_ns: None,
            timer_slack_ns: DEFAULT_TIMER_SLACK_NS,
            pass_overhead_ns: 0,
            pass_overhead_max_ns: 0,
            random_start_phase: false,
            audit: false,
        }
    }
}

/// One simulated rt-app thread.
#[derive(Clone, PartialEq, Debug)]
pub struct RtAppThread {
    /// `<task>-<index>`, as rt-app names its log file.
    pub name: String,
    /// CPU time over the run.
    pub cpu_ns: u64,
    /// Its logged periods, in rt-app's columns (times from the start of the run).
    pub records: Vec<PeriodRecord>,
}

/// A simulated rt-app run (modelled figures).
#[derive(Clone, PartialEq, Debug)]
pub struct RtAppResult {
    pub duration_ns: u64,
    pub threads: Vec<RtAppThread>,
    /// The scheduling events when the run asked for them; thread `i` of `threads` has audit
    /// tid `RTAPP_AUDIT_TID_BASE + i`.
    pub audit: Option<lull_audit::AuditLog>,
}

/// The audit tid of the first rt-app thread: its threads are the kernel's first tasks, in
/// order, and audit records number kernel task `t` as this base + `t`.
pub const RTAPP_AUDIT_TID_BASE: u32 = crate::kernel::AUDIT_TID_BASE;

/// Why an rt-app workload cannot run in the simulator.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum RtAppSimError {
    #[error("policy: {0}")]
    Policy(String),
    #[error("task \"{task}\": cpus lists CPU {cpu}, but platform `{platform}` has {cores} cores")]
    NoSuchCpu {
        task: String,
        cpu: u32,
        platform: String,
        cores: usize,
    },
    #[error("calibration CPU{cpu}: platform `{platform}` has {cores} cores")]
    NoCalibrationCpu {
        cpu: u32,
        platform: String,
        cores: usize,
    },
    #[error("the threads still run after {limit_s} s: give the workload a duration")]
    RunsForever { limit_s: u64 },
    #[error("the workload creates no thread")]
    NoThreads,
    #[error("loop_ns must be a positive number of ns, not {0}")]
    BadLoopNs(String),
}

impl From<PolicyError> for RtAppSimError {
    fn from(e: PolicyError) -> RtAppSimError {
        RtAppSimError::Policy(match e {
            PolicyError::Unknown(u) => u.to_string(),
            PolicyError::Invalid { field, reason } => format!("{field}: {reason}"),
        })
    }
}

/// The ns per loop rt-app uses when it measures its own (`"CPUn"` calibration) and the
/// simulation has no measured figure: the loop of rt-app's busy function is of the order of
/// 20 ns on current cores. Only the ratio of loop time to calibration matters for a simulated
/// `run`, so with no machine measurement the two are equal and a `run` of `us` is `us` of work.
pub const DEFAULT_CALIBRATION_NS: f64 = 20.0;

/// Runs `w` in the simulator.
///
/// # Errors
/// A [`RtAppSimError`] when a policy or CPU list does not fit the platform, or a workload
/// without a duration never ends.
pub fn run_rtapp(w: &RtApp, run: &RtAppRun<'_>) -> Result<RtAppResult, RtAppSimError> {
    let plat = run.platform;
    let main = plat.main_cluster();
    let cores = plat.clusters[main].cores as usize;
    check_cpus(w, plat, cores)?;
    if w.threads().is_empty() {
        return Err(RtAppSimError::NoThreads);
    }
    // Threads run on the main cluster, so its top frequency is the reference speed either way.
    let calibration_ns = match w.calibration {
        Calibration::NsPerLoop(ns) => f64::from(ns),
        Calibration::Cpu(cpu) => {
            if cpu as usize >= cores {
                return Err(RtAppSimError::NoCalibrationCpu {
                    cpu,
                    platform: plat.name.clone(),
                    cores,
                });
            }
            DEFAULT_CALIBRATION_NS
        }
    };
    let loop_ns = run.loop_ns.unwrap_or(calibration_ns);
    if !(loop_ns.is_finite() && loop_ns > 0.0) {
        return Err(RtAppSimError::BadLoopNs(loop_ns.to_string()));
    }
    let work = Work {
        calibration_ns,
        loop_ns,
        ref_khz: plat.clusters[main].opps.last().map_or(1_000_000, |o| o.khz),
        slack_ns: run.timer_slack_ns,
        pass_overhead_ns: run.pass_overhead_ns,
        pass_overhead_max_ns: run.pass_overhead_max_ns,
        seed: run.seed,
        random_start_phase: run.random_start_phase,
    };
    let limit_ns = MAX_DURATION_MS * 1_000_000;
    let end_ns = w.duration_s.map_or(limit_ns, |s| u64::from(s) * NS_PER_S);
    // A workload without a duration ends when its threads do, or never (an error).
    let (mut user, mut run_end) = drive_on(
        plat,
        &run.policy,
        Machine {
            audit: run.audit,
            ..Machine::default()
        },
        run.seed,
        end_ns,
        w.duration_s.is_none(),
        |k, _| RtAppUser::new(w, work, k),
    )?;
    if w.duration_s.is_none() && !run_end.finished {
        return Err(RtAppSimError::RunsForever {
            limit_s: limit_ns / NS_PER_S,
        });
    }
    let threads = user
        .threads
        .iter_mut()
        .zip(w.threads())
        .map(|(th, name)| RtAppThread {
            name: name.name,
            cpu_ns: run_end.exec_ns[name.index as usize],
            records: std::mem::take(&mut th.records),
        })
        .collect();
    Ok(RtAppResult {
        duration_ns: run_end.ended_ns,
        threads,
        audit: run_end.audit.take(),
    })
}

fn check_cpus(w: &RtApp, plat: &Platform, cores: usize) -> Result<(), RtAppSimError> {
    for t in &w.tasks {
        let lists = std::iter::once(&t.cpus).chain(t.phases.iter().map(|p| &p.cpus));
        for cpu in lists.flatten().flatten() {
            if *cpu as usize >= cores {
                return Err(RtAppSimError::NoSuchCpu {
                    task: t.name.clone(),
                    cpu: *cpu,
                    platform: plat.name.clone(),
                    cores,
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
