//! `lull validate kernel`: each rt-app workload run live under the real kernel and in the
//! simulator on a profile of this machine, side by side, with the bounds checked.
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

use super::live::{run_live, LiveError, LiveOptions};
use super::machine::{probe, Machine};

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
        let bad = |e: String| ValidateError::Machine(e);
        let base = Platform::by_name("x86-64").expect("x86-64 is shipped");
        let cores = m.cpu_count() as u32;
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
        let platform = base
            .with_machine(cores, hz, mhz, idle)
            .map_err(|e| bad(e.to_string()))?;
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
        ];
        Ok(SimProfile {
            platform,
            policy,
            loop_ns,
            timer_slack_ns: m.timer_slack_ns.value,
            notes,
        })
    }
}

/// One side's figures of a thread.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Figures {
    /// CPU time over the run's duration.
    pub cpu_share: f64,
    pub periods: u64,
    pub wakeup_p50_us: Option<f64>,
    pub wakeup_p99_us: Option<f64>,
}

impl Figures {
    fn of(s: &ThreadSummary, cpu_share: f64) -> Figures {
        Figures {
            cpu_share,
            periods: s.periods,
            wakeup_p50_us: s.wakeup_latency_us.map(|l| l.p50),
            wakeup_p99_us: s.wakeup_latency_us.map(|l| l.p99),
        }
    }
}

/// One thread, both ways.
#[derive(Clone, PartialEq, Debug)]
pub struct ThreadComparison {
    pub name: String,
    pub live: Figures,
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

    /// Within the latency bound at p50 and p99; `None` for a thread without timer wake-ups on
    /// either side.
    #[must_use]
    pub fn latency_ok(&self) -> Option<bool> {
        let pair = |l: Option<f64>, s: Option<f64>| match (l, s) {
            (Some(l), Some(s)) => Some(latency_within(l, s)),
            (None, None) => None,
            // One side woke from timers and the other never did.
            _ => Some(false),
        };
        match (
            pair(self.live.wakeup_p50_us, self.sim.wakeup_p50_us),
            pair(self.live.wakeup_p99_us, self.sim.wakeup_p99_us),
        ) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(true) && b.unwrap_or(true)),
        }
    }
}

/// One workload, both ways.
#[derive(Clone, PartialEq, Debug)]
pub struct WorkloadComparison {
    pub name: String,
    pub path: PathBuf,
    pub duration_s: u32,
    pub threads: Vec<ThreadComparison>,
}

/// The workload's name: its file name without `.json`.
#[must_use]
pub fn workload_name(path: &Path) -> String {
    path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
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
    let mut run = RtAppRun::new(&profile.platform);
    run.policy = profile.policy.clone();
    run.seed = seed;
    run.loop_ns = profile.loop_ns;
    run.timer_slack_ns = profile.timer_slack_ns;
    let r = run_rtapp(w, &run).map_err(|e| ValidateError::Sim {
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

/// Runs `w` live (rt-app on this machine) and in the simulator on `profile`.
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
    let live = run_live(w, live_opts).map_err(|source| ValidateError::Live {
        workload: name.clone(),
        source,
    })?;
    let sim = simulate(&name, w, profile, seed)?;
    let mut threads = Vec::new();
    for lt in &live.threads {
        let Some((_, s)) = sim.iter().find(|(n, _)| *n == lt.thread.name) else {
            return Err(ValidateError::ThreadMissing {
                workload: name,
                thread: lt.thread.name.clone(),
                side: "simulated",
            });
        };
        threads.push(ThreadComparison {
            name: lt.thread.name.clone(),
            live: Figures::of(&lt.summary, lt.cpu_share),
            sim: *s,
        });
    }
    Ok(WorkloadComparison {
        name,
        path: path.to_owned(),
        duration_s: live.duration_s,
        threads,
    })
}

/// Probes this machine and runs every workload of `paths` both ways, one after another,
/// telling `progress` what it starts.
///
/// # Errors
/// The first failure: an unreadable or unsupported workload, rt-app missing, a failed run.
pub fn validate_all(
    paths: &[PathBuf],
    seed: u64,
    mut progress: impl FnMut(&str),
) -> Result<(Machine, SimProfile, Vec<WorkloadComparison>), ValidateError> {
    let mut workloads = Vec::new();
    for p in paths {
        let bad = |reason: String| ValidateError::Workload {
            path: p.display().to_string(),
            reason,
        };
        let text = lull_os::input_file::read_bounded_text(p, lull_os::input_file::RTAPP_JSON)
            .map_err(|e| bad(e.to_string()))?;
        workloads.push((
            p,
            lull_workload::rtapp::parse(&text).map_err(|e| bad(e.to_string()))?,
        ));
    }
    progress("probing this machine (about 3 s of rt-app)");
    let machine = probe();
    let rt_app = machine
        .rt_app
        .clone()
        .map_err(|e| ValidateError::Machine(e.to_string()))?;
    let profile = SimProfile::of(&machine)?;
    let opts = LiveOptions {
        rt_app: Some(rt_app),
        ..LiveOptions::default()
    };
    let mut results = Vec::new();
    for (i, (path, w)) in workloads.iter().enumerate() {
        progress(&format!(
            "[{}/{}] {} ({} s live)",
            i + 1,
            workloads.len(),
            path.display(),
            w.duration_s.map_or_else(|| "-".into(), |d| d.to_string())
        ));
        results.push(compare(path, w, &profile, &opts, seed)?);
    }
    Ok((machine, profile, results))
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
        let t = |live, sim| ThreadComparison {
            name: "t-0".into(),
            live,
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
}
