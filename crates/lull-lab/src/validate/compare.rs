//! `lull validate kernel`: each rt-app workload run live under the real kernel and in the
//! simulator on a profile of this machine, side by side, with the bounds of docs/validation.md checked.
//!
//! The profile ([`SimProfile::of`]) is the shipped `x86-64` platform with what this machine
//! exposes put in: its online CPUs, `CONFIG_HZ`, nominal frequency, idle states, EEVDF base
//! slice, timer slack and the measured time of rt-app's busy loop. Nothing in it depends on the
//! workload.

use std::path::{Path, PathBuf};

use lull_sim::platform::{IdleState as SimIdleState, Platform};
use lull_sim::rtapp::{run_rtapp, RtAppRun};
use lull_sim::spec::PolicySpec;
use lull_workload::rtapp::{RtApp, ThreadSummary};

use super::figures::Figures;
use super::live::{run_live, LiveError, LiveOptions, LiveRun};
use super::machine::{Machine, MachineFacts};

/// CPU share bound: the simulated share within 2 percentage points of the kernel's.
pub const CPU_SHARE_BOUND_PP: f64 = 2.0;
/// Wake-up latency bound, relative part: within 25 % of the kernel's figure …
pub const LATENCY_BOUND_FRACTION: f64 = 0.25;
/// … or within 200 µs, whichever is larger.
pub const LATENCY_BOUND_US: f64 = 200.0;

/// The simulator's model of this machine.
#[derive(Clone, Debug)]
pub struct SimProfile {
    pub platform: Platform,
    pub policy: PolicySpec,
    pub loop_ns: Option<f64>,
    pub timer_slack_ns: u64,
    /// rt-app's CPU time per pass beyond its timed events, ns (measured timer path; 0 without).
    pub pass_overhead_ns: u64,
    /// With a measured spread of that time: each pass draws from `pass_overhead_ns..=` this
    /// (the 10th–90th percentiles measured; 0: fixed).
    pub pass_overhead_max_ns: u64,
    /// What each setting came from, for the report.
    pub notes: Vec<String>,
}

/// Why the comparison could not run.
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    #[error("{path}: {reason}")]
    Workload { path: String, reason: String },
    #[error("this machine: {0}")]
    Machine(String),
    #[error("{workload}: live: {source}")]
    Live {
        workload: String,
        #[source]
        source: LiveError,
    },
    #[error("{workload}: simulator: {reason}")]
    Sim { workload: String, reason: String },
    #[error("{workload}: thread {thread} is missing from the {side} run")]
    ThreadMissing {
        workload: String,
        thread: String,
        side: &'static str,
    },
}

impl SimProfile {
    /// The `x86-64` profile with `m`'s facts.
    ///
    /// # Errors
    /// [`ValidateError::Machine`] when the machine lacks a fact the profile needs (its
    /// frequency) or the facts do not make a valid profile.
    pub fn of(m: &Machine) -> Result<SimProfile, ValidateError> {
        SimProfile::of_facts(&m.facts())
    }

    /// The `x86-64` profile with the facts `m` (of this machine, or saved with live runs).
    ///
    /// # Errors
    /// As [`SimProfile::of`].
    pub fn of_facts(m: &MachineFacts) -> Result<SimProfile, ValidateError> {
        let bad = |e: String| ValidateError::Machine(e);
        let base = Platform::by_name("x86-64").expect("x86-64 is shipped");
        let cores = m.cpus.value.len() as u32;
        let default_hz = base.timer.hz;
        let hz = m.hz.value.unwrap_or(default_hz);
        let mhz = m
            .nominal_mhz
            .value
            .ok_or_else(|| bad("no `cpu MHz` in /proc/cpuinfo".into()))?
            .round() as u64;
        let idle: Vec<SimIdleState> = m
            .idle
            .value
            .states
            .iter()
            .filter(|s| !s.disabled)
            .map(|s| SimIdleState {
                name: s.name.clone(),
                exit_us: s.latency_us,
                residency_us: s.residency_us.max(s.latency_us),
                core_gated: false,
            })
            .collect();
        let idle = if idle.is_empty() {
            base.clusters[0].idle_states.clone()
        } else {
            idle
        };
        let path = m.timer_path.as_ref().ok().map(|p| &p.value);
        let idle = match path.and_then(|p| p.idle_wake_ns.value) {
            Some(wake_ns) => with_idle_wake(idle, wake_ns),
            None => idle,
        };
        let mut platform = base
            .with_machine(cores, hz, mhz, idle)
            .map_err(|e| bad(e.to_string()))?;
        if let Some(p) = path {
            platform.timer.irq_late_min_ns = p.late_busy_ns[0];
            platform.timer.irq_late_max_ns = p.late_busy_ns[2].max(p.late_busy_ns[0]);
        }
        let policy = PolicySpec {
            scheduler: Some("eevdf".into()),
            base_slice_us: Some(m.base_slice_ns.value.div_ceil(1000)),
            ..PolicySpec::default()
        };
        let loop_ns = m.loop_ns.as_ref().ok().map(|s| s.value);
        let notes = vec![
            format!("cores {cores} ({})", m.cpus.source),
            format!(
                "HZ {hz} ({})",
                if m.hz.value.is_some() {
                    m.hz.source.to_string()
                } else {
                    format!("not readable: the profile's {default_hz}")
                }
            ),
            format!("{mhz} MHz fixed ({})", m.nominal_mhz.source),
            format!(
                "EEVDF base slice {} µs ({})",
                m.base_slice_ns.value / 1000,
                m.base_slice_ns.source
            ),
            format!(
                "idle states {} ({})",
                platform.clusters[0]
                    .idle_states
                    .iter()
                    .map(|s| format!("{} {}/{} µs", s.name, s.exit_us, s.residency_us))
                    .collect::<Vec<_>>()
                    .join(", "),
                m.idle.source
            ),
            format!(
                "timer slack {} µs ({})",
                m.timer_slack_ns.value / 1000,
                m.timer_slack_ns.source
            ),
            match &m.loop_ns {
                Ok(s) => format!("rt-app loop {:.2} ns ({})", s.value, s.source),
                Err(e) => format!("rt-app loop: not measured ({e}); runs take the calibration"),
            },
            match &m.timer_path {
                Ok(p) => format!(
                    "timer interrupts {:.1}–{:.1} µs late ({}); idle-CPU wake-up {} ({}); rt-app \
                     {} µs per pass ({})",
                    platform.timer.irq_late_min_ns as f64 / 1e3,
                    platform.timer.irq_late_max_ns as f64 / 1e3,
                    p.source,
                    p.value.idle_wake_ns.value.map_or_else(
                        || "not modelled".to_owned(),
                        |l| format!("{:.1} µs", l as f64 / 1e3)
                    ),
                    p.value.idle_wake_ns.source,
                    p.value.period_overhead_p10_p90_ns.map_or_else(
                        || format!("{:.1}", p.value.period_overhead_ns.value as f64 / 1e3),
                        |[lo, hi]| format!("{:.1}–{:.1}", lo as f64 / 1e3, hi as f64 / 1e3)
                    ),
                    p.value.period_overhead_ns.source,
                ),
                Err(e) => format!(
                    "timer path: not measured ({e}); timers on time, idle exit as sysfs says, \
                     no per-pass overhead"
                ),
            },
        ];
        let mut notes = notes;
        if let Some(w) = path.and_then(|p| p.warning.clone()) {
            notes.push(w);
        }
        Ok(SimProfile {
            platform,
            policy,
            loop_ns,
            timer_slack_ns: m.timer_slack_ns.value,
            pass_overhead_ns: path.map_or(0, |p| {
                p.period_overhead_p10_p90_ns
                    .map_or(p.period_overhead_ns.value, |[lo, _]| lo)
            }),
            pass_overhead_max_ns: path
                .and_then(|p| p.period_overhead_p10_p90_ns)
                .map_or(0, |[_, hi]| hi),
            notes,
        })
    }
}

/// The idle states with the measured cost of waking an idle CPU put in: `wake_ns`, how much
/// later a timer fires on an idle CPU than on a busy one, is the wake-up of the idle CPU (in a
/// virtual machine the host resumes the halted vCPU, whatever exit latency the guest's cpuidle
/// declares). Every state that halts (exit latency above 0; polling has none) gets at least that
/// exit latency, and a target residency at least as long.
#[must_use]
pub fn with_idle_wake(states: Vec<SimIdleState>, wake_ns: u64) -> Vec<SimIdleState> {
    let wake_us = wake_ns.div_ceil(1000);
    states
        .into_iter()
        .map(|mut s| {
            if s.exit_us > 0 {
                s.exit_us = s.exit_us.max(wake_us);
                s.residency_us = s.residency_us.max(s.exit_us);
            }
            s
        })
        .collect()
}

/// A figure over the live runs of a thread: the smallest, the median and the largest value (the
/// spread is the full min–max range: with the handful of runs a validation makes, an
/// interquartile range would drop the very runs that show the kernel's noise).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Range {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Range {
    /// The range of `values`; `None` when empty.
    #[must_use]
    pub fn of(values: &[f64]) -> Option<Range> {
        let median = lull_model::stats::median(values)?;
        Some(Range {
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            median,
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    /// Whether `x` lies within the range, ends included.
    #[must_use]
    pub fn contains(&self, x: f64) -> bool {
        self.min <= x && x <= self.max
    }
}

/// A thread's figures over every live run.
#[derive(Clone, PartialEq, Debug)]
pub struct LiveSpread {
    /// Each run's figures, in the order the runs were made.
    pub runs: Vec<Figures>,
    pub cpu_share: Range,
    /// Over the runs in which the thread woke from timers; `None` when it never did.
    pub wakeup_p50_us: Option<Range>,
    pub wakeup_p99_us: Option<Range>,
}

impl LiveSpread {
    /// The spread of `runs` (at least one).
    ///
    /// # Panics
    /// When `runs` is empty.
    #[must_use]
    pub fn of(runs: Vec<Figures>) -> LiveSpread {
        assert!(!runs.is_empty(), "a spread needs at least one run");
        let range = |f: fn(&Figures) -> Option<f64>| {
            Range::of(&runs.iter().filter_map(f).collect::<Vec<_>>())
        };
        LiveSpread {
            cpu_share: range(|f| Some(f.cpu_share)).expect("at least one run"),
            wakeup_p50_us: range(|f| f.wakeup_p50_us),
            wakeup_p99_us: range(|f| f.wakeup_p99_us),
            runs,
        }
    }

    /// The runs' medians as one set of figures (periods: the median run's count, rounded).
    #[must_use]
    pub fn median(&self) -> Figures {
        let periods: Vec<f64> = self.runs.iter().map(|f| f.periods as f64).collect();
        Figures {
            cpu_share: self.cpu_share.median,
            periods: lull_model::stats::median(&periods).map_or(0, |p| p.round() as u64),
            wakeup_p50_us: self.wakeup_p50_us.map(|r| r.median),
            wakeup_p99_us: self.wakeup_p99_us.map(|r| r.median),
        }
    }
}

/// One thread, both ways.
#[derive(Clone, PartialEq, Debug)]
pub struct ThreadComparison {
    pub name: String,
    /// The live runs' medians.
    pub live: Figures,
    /// The live runs, one by one, and their ranges.
    pub spread: LiveSpread,
    pub sim: Figures,
}

/// Whether `sim` is within the latency bound of `live`.
#[must_use]
pub fn latency_within(live: f64, sim: f64) -> bool {
    (sim - live).abs() <= (live * LATENCY_BOUND_FRACTION).max(LATENCY_BOUND_US)
}

impl ThreadComparison {
    /// The CPU-share difference, percentage points.
    #[must_use]
    pub fn cpu_diff_pp(&self) -> f64 {
        (self.sim.cpu_share - self.live.cpu_share) * 100.0
    }

    /// Within the CPU-share bound.
    #[must_use]
    pub fn cpu_ok(&self) -> bool {
        self.cpu_diff_pp().abs() <= CPU_SHARE_BOUND_PP
    }

    /// Within the CPU-share bound of the live median, or inside the live runs' range
    /// (the noise-aware rule: whichever is wider).
    #[must_use]
    pub fn cpu_ok_noise(&self) -> bool {
        self.cpu_ok() || self.spread.cpu_share.contains(self.sim.cpu_share)
    }

    /// Within the latency bound of the live median at p50 and p99; `None` for a thread without
    /// timer wake-ups on either side.
    #[must_use]
    pub fn latency_ok(&self) -> Option<bool> {
        self.latency_check(false)
    }

    /// As [`ThreadComparison::latency_ok`], each percentile also passing when the simulated
    /// figure lies inside the live runs' range (the noise-aware rule).
    #[must_use]
    pub fn latency_ok_noise(&self) -> Option<bool> {
        self.latency_check(true)
    }

    fn latency_check(&self, noise: bool) -> Option<bool> {
        let pair = |l: Option<f64>, r: Option<Range>, s: Option<f64>| match (l, s) {
            (Some(l), Some(s)) => {
                Some(latency_within(l, s) || (noise && r.is_some_and(|r| r.contains(s))))
            }
            (None, None) => None,
            // One side woke from timers and the other never did.
            _ => Some(false),
        };
        match (
            pair(
                self.live.wakeup_p50_us,
                self.spread.wakeup_p50_us,
                self.sim.wakeup_p50_us,
            ),
            pair(
                self.live.wakeup_p99_us,
                self.spread.wakeup_p99_us,
                self.sim.wakeup_p99_us,
            ),
        ) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(true) && b.unwrap_or(true)),
        }
    }
}

/// How many threads pass, by each rule.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Counts {
    /// Threads compared (for latency: those with timer wake-ups).
    pub threads: usize,
    /// Within the fixed bound of the live median.
    pub fixed: usize,
    /// Within the fixed bound or inside the live runs' range.
    pub noise_aware: usize,
}

/// The CPU-share and wake-up-latency counts over `ws`.
#[must_use]
pub fn counts(ws: &[WorkloadComparison]) -> (Counts, Counts) {
    let mut cpu = Counts::default();
    let mut lat = Counts::default();
    for t in ws.iter().flat_map(|w| &w.threads) {
        cpu.threads += 1;
        cpu.fixed += usize::from(t.cpu_ok());
        cpu.noise_aware += usize::from(t.cpu_ok_noise());
        if let Some(ok) = t.latency_ok() {
            lat.threads += 1;
            lat.fixed += usize::from(ok);
            lat.noise_aware += usize::from(t.latency_ok_noise() == Some(true));
        }
    }
    (cpu, lat)
}

/// One workload, both ways.
#[derive(Clone, PartialEq, Debug)]
pub struct WorkloadComparison {
    pub name: String,
    pub path: PathBuf,
    pub duration_s: u32,
    /// Live runs that completed (the spread is over these).
    pub runs: usize,
    /// Live runs that failed (rt-app killed, a thread not sampled, …), each with its reason;
    /// they are left out of the spread.
    pub failed_runs: Vec<String>,
    pub threads: Vec<ThreadComparison>,
}

impl WorkloadComparison {
    /// Each live run's CPU total, the sum of its threads' shares (1.0: one CPU's worth), and
    /// the simulated total. A workload that keeps its CPUs busy (hogs) has the same total in
    /// every undisturbed run; a run that got less shared the CPUs with other load, and its
    /// figures measure that load (docs/validation.md).
    #[must_use]
    pub fn cpu_totals(&self) -> (Vec<f64>, f64) {
        let live = (0..self.runs)
            .map(|i| {
                self.threads
                    .iter()
                    .filter_map(|t| t.spread.runs.get(i))
                    .map(|f| f.cpu_share)
                    .sum()
            })
            .collect();
        (live, self.threads.iter().map(|t| t.sim.cpu_share).sum())
    }
}

/// The workload's name: its file name without `.json`.
#[must_use]
pub fn workload_name(path: &Path) -> String {
    path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}

/// How the validation runs a workload in the simulator on `profile`.
#[must_use]
pub fn sim_run(profile: &SimProfile, seed: u64) -> RtAppRun<'_> {
    let mut run = RtAppRun::new(&profile.platform);
    run.policy = profile.policy.clone();
    run.seed = seed;
    run.loop_ns = profile.loop_ns;
    run.timer_slack_ns = profile.timer_slack_ns;
    run.pass_overhead_ns = profile.pass_overhead_ns;
    run.pass_overhead_max_ns = profile.pass_overhead_max_ns;
    // A live rt-app starts at an arbitrary phase of the tick.
    run.random_start_phase = true;
    run
}

/// Runs `w` in the simulator on `profile` alone (no live run).
///
/// # Errors
/// [`ValidateError::Sim`] when the workload does not fit the profile.
pub fn simulate(
    name: &str,
    w: &RtApp,
    profile: &SimProfile,
    seed: u64,
) -> Result<Vec<(String, Figures)>, ValidateError> {
    let r = run_rtapp(w, &sim_run(profile, seed)).map_err(|e| ValidateError::Sim {
        workload: name.to_owned(),
        reason: e.to_string(),
    })?;
    let secs = r.duration_ns as f64 / 1e9;
    Ok(r.threads
        .iter()
        .map(|t| {
            let s = ThreadSummary::of(&t.records, t.cpu_ns);
            (t.name.clone(), Figures::of(&s, s.cpu_ms / 1e3 / secs))
        })
        .collect())
}

/// Runs `w` live once (rt-app on this machine) and in the simulator on `profile`.
///
/// # Errors
/// A [`ValidateError`] when either run fails.
pub fn compare(
    path: &Path,
    w: &RtApp,
    profile: &SimProfile,
    live_opts: &LiveOptions,
    seed: u64,
) -> Result<WorkloadComparison, ValidateError> {
    let name = workload_name(path);
    let live = live_run(&name, w, live_opts)?;
    let sim = simulate(&name, w, profile, seed)?;
    combine(path, &[live], &sim)
}

fn live_run(name: &str, w: &RtApp, opts: &LiveOptions) -> Result<LiveRun, ValidateError> {
    run_live(w, opts).map_err(|source| ValidateError::Live {
        workload: name.to_owned(),
        source,
    })
}

/// The comparison of `live` runs (at least one) with the simulated figures `sim`.
///
/// # Errors
/// [`ValidateError::ThreadMissing`] when a live thread has no simulated counterpart.
pub fn combine(
    path: &Path,
    live: &[LiveRun],
    sim: &[(String, Figures)],
) -> Result<WorkloadComparison, ValidateError> {
    let runs: Vec<Vec<(String, Figures)>> = live.iter().map(LiveRun::figures).collect();
    combine_figures(path, live.first().map_or(0, |r| r.duration_s), &runs, sim)
}

/// The comparison of live runs given as each run's per-thread figures (at least one run, every
/// run listing the workload's threads in the same order) with the simulated figures `sim`.
///
/// # Errors
/// [`ValidateError::Workload`] without a run or when runs disagree on the threads,
/// [`ValidateError::ThreadMissing`] when a live thread has no simulated counterpart.
pub fn combine_figures(
    path: &Path,
    duration_s: u32,
    live: &[Vec<(String, Figures)>],
    sim: &[(String, Figures)],
) -> Result<WorkloadComparison, ValidateError> {
    let name = workload_name(path);
    let bad = |reason: String| ValidateError::Workload {
        path: path.display().to_string(),
        reason,
    };
    let first = live.first().ok_or_else(|| bad("no live run".into()))?;
    if let Some(r) = live
        .iter()
        .find(|r| r.iter().map(|(n, _)| n).ne(first.iter().map(|(n, _)| n)))
    {
        return Err(bad(format!(
            "the live runs list different threads ({} against {})",
            r.len(),
            first.len()
        )));
    }
    let mut threads = Vec::new();
    for (i, (thread, _)) in first.iter().enumerate() {
        let Some((_, s)) = sim.iter().find(|(n, _)| n == thread) else {
            return Err(ValidateError::ThreadMissing {
                workload: name,
                thread: thread.clone(),
                side: "simulated",
            });
        };
        let spread = LiveSpread::of(live.iter().map(|r| r[i].1).collect());
        threads.push(ThreadComparison {
            name: thread.clone(),
            live: spread.median(),
            spread,
            sim: *s,
        });
    }
    Ok(WorkloadComparison {
        name,
        path: path.to_owned(),
        duration_s,
        runs: live.len(),
        failed_runs: Vec::new(),
        threads,
    })
}

/// Whether every workload runs in the simulator on `m`'s profile: checked before minutes of
/// live runs are spent.
///
/// # Errors
/// The profile or a simulated run fails.
pub fn fits(
    m: &Machine,
    workloads: &[(PathBuf, String, RtApp)],
    seed: u64,
) -> Result<(), ValidateError> {
    let profile = SimProfile::of(m)?;
    for (path, _, w) in workloads {
        simulate(&workload_name(path), w, &profile, seed)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latency_bound_is_the_larger_of_a_quarter_and_200_us() {
        assert!(latency_within(100.0, 290.0));
        assert!(!latency_within(100.0, 310.0));
        assert!(latency_within(4000.0, 4990.0));
        assert!(!latency_within(4000.0, 5010.0));
    }

    #[test]
    fn an_idle_cpu_wakes_as_slowly_as_measured_and_polling_stays_free() {
        let st = |name: &str, exit_us, residency_us| SimIdleState {
            name: name.into(),
            exit_us,
            residency_us,
            core_gated: false,
        };
        let got = with_idle_wake(
            vec![
                st("POLL", 0, 0),
                st("haltpoll idle", 1, 1),
                st("C6", 100, 400),
            ],
            23_500,
        );
        assert_eq!(
            got,
            vec![
                st("POLL", 0, 0),
                st("haltpoll idle", 24, 24),
                st("C6", 100, 400)
            ]
        );
        // A busy CPU as late as an idle one: nothing to add.
        assert_eq!(
            with_idle_wake(vec![st("halt", 1, 1)], 0),
            vec![st("halt", 1, 1)]
        );
    }

    fn fig(share: f64, p50: Option<f64>) -> Figures {
        Figures {
            cpu_share: share,
            periods: 1,
            wakeup_p50_us: p50,
            wakeup_p99_us: p50,
        }
    }

    #[test]
    fn a_thread_passes_within_both_bounds_and_fails_outside_either() {
        let t = |live: Figures, sim| ThreadComparison {
            name: "t-0".into(),
            live,
            spread: LiveSpread::of(vec![live]),
            sim,
        };
        assert!(t(fig(0.50, None), fig(0.519, None)).cpu_ok());
        assert!(!t(fig(0.50, None), fig(0.521, None)).cpu_ok());
        assert_eq!(t(fig(0.5, None), fig(0.5, None)).latency_ok(), None);
        assert_eq!(
            t(fig(0.1, Some(1000.0)), fig(0.1, Some(1200.0))).latency_ok(),
            Some(true)
        );
        assert_eq!(
            t(fig(0.1, Some(1000.0)), fig(0.1, None)).latency_ok(),
            Some(false)
        );
    }

    fn runs(shares: &[f64], p50s: &[Option<f64>]) -> ThreadComparison {
        let spread = LiveSpread::of(shares.iter().zip(p50s).map(|(&s, &p)| fig(s, p)).collect());
        ThreadComparison {
            name: "t-0".into(),
            live: spread.median(),
            spread,
            sim: fig(0.0, None),
        }
    }

    #[test]
    fn the_spread_is_the_runs_min_median_and_max() {
        let t = runs(
            &[0.30, 0.20, 0.26, 0.40, 0.25],
            &[Some(100.0), None, Some(300.0), Some(120.0), Some(90.0)],
        );
        assert_eq!(
            t.spread.cpu_share,
            Range {
                min: 0.20,
                median: 0.26,
                max: 0.40
            }
        );
        assert_eq!(t.live.cpu_share, 0.26);
        // Latency over the runs that had timer wake-ups only.
        assert_eq!(
            t.spread.wakeup_p50_us,
            Some(Range {
                min: 90.0,
                median: 110.0,
                max: 300.0
            })
        );
        assert_eq!(t.live.wakeup_p50_us, Some(110.0));
        assert!(Range::of(&[]).is_none());
        assert!(t.spread.cpu_share.contains(0.20) && t.spread.cpu_share.contains(0.40));
        assert!(!t.spread.cpu_share.contains(0.41));
    }

    #[test]
    fn the_noise_aware_rule_takes_the_wider_of_the_spread_and_the_fixed_bound() {
        let mut t = runs(
            &[0.20, 0.26, 0.40],
            &[Some(1000.0), Some(2000.0), Some(5000.0)],
        );
        // Inside the spread, outside 2 pp of the median: passes only the noise-aware rule.
        t.sim = fig(0.35, Some(4500.0));
        assert!(!t.cpu_ok() && t.cpu_ok_noise());
        assert_eq!(t.latency_ok(), Some(false));
        assert_eq!(t.latency_ok_noise(), Some(true));
        // Outside the spread but within 2 pp of the median: passes both.
        t.spread.cpu_share.max = 0.265;
        t.sim = fig(0.275, Some(2400.0));
        assert!(t.cpu_ok() && t.cpu_ok_noise());
        assert_eq!(t.latency_ok_noise(), Some(true));
        // Outside both.
        t.sim = fig(0.50, Some(9000.0));
        assert!(!t.cpu_ok() && !t.cpu_ok_noise());
        assert_eq!(t.latency_ok_noise(), Some(false));
        // One side without timer wake-ups fails both rules.
        t.sim = fig(0.26, None);
        assert_eq!(t.latency_ok_noise(), Some(false));

        let w = WorkloadComparison {
            name: "w".into(),
            path: "w.json".into(),
            duration_s: 1,
            runs: 3,
            failed_runs: Vec::new(),
            threads: vec![t.clone(), {
                let mut u = t.clone();
                u.sim = fig(0.22, Some(4500.0));
                u
            }],
        };
        assert_eq!(
            w.cpu_totals(),
            (vec![0.2 + 0.2, 0.26 + 0.26, 0.4 + 0.4], 0.26 + 0.22)
        );
        let (cpu, lat) = counts(&[w]);
        assert_eq!(
            cpu,
            Counts {
                threads: 2,
                fixed: 1,
                noise_aware: 2
            }
        );
        assert_eq!(
            lat,
            Counts {
                threads: 2,
                fixed: 0,
                noise_aware: 1
            }
        );
    }
}
