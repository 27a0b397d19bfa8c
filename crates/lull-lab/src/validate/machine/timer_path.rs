//! The timer path of this machine's kernel, measured with tracefs during short rt-app runs:
//! how late a sleeping thread's timer wakes it on an idle and on a busy CPU, and what a period
//! costs beyond its logged run ([`measure_timer_path`]). It shares the lone-task rt-app probes
//! of its parent module.

use std::path::Path;

use lull_model::stats::median;
use lull_workload::rtapp::{Event, RtApp, TaskSpec};

use super::super::live::{
    run_live, LiveError, LiveOptions, RtAppMissing, LOOP_PROBE_CALIBRATION_NS,
};
use super::{
    lone_task, periodic, Source, Sourced, LOOP_PROBE_RUN_US, TIMER_PROBE_PERIOD_US,
    TIMER_PROBE_RUNTIME_US,
};

/// Why the timer path could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum TimerPathError {
    #[error(transparent)]
    RtAppMissing(#[from] RtAppMissing),
    #[error("{0}")]
    Trace(#[from] lull_os::tracefs::InstanceError),
    #[error("{0}")]
    Run(#[from] LiveError),
    #[error("the trace lost {0} events (buffer {PATH_PROBE_BUFFER_KB} KiB per CPU)")]
    Lost(u64),
    #[error("the {0} run has no thread")]
    NoThread(&'static str),
    #[error("the lone thread never ran")]
    NeverRan,
    #[error("the lone thread logged no period")]
    NoPeriod,
    #[error(
        "{0} timers of the busy run fired on a busy CPU in each of {PATH_PROBE_ATTEMPTS} traces \
         (fewer than {PATH_PROBE_MIN_SAMPLES})"
    )]
    TooFewBusyTimers(usize),
}

/// How this machine's kernel delivers a sleeping thread's timer, from tracefs timelines of two
/// short rt-app runs ([`measure_timer_path`]).
#[derive(Clone, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub struct TimerPath {
    /// How late past its hard expiry (soft expiry + slack) a sleep's timer interrupt runs on a
    /// CPU that is running a thread, ns: 10th, 50th and 90th percentiles. On bare metal about
    /// a microsecond; in a virtual machine the host's timer emulation and interrupt injection.
    pub late_busy_ns: [u64; 3],
    /// Waking an idle CPU, ns: the median lateness of timers that fired on an idle CPU less the
    /// busy median (a halted vCPU is woken by the host). `None` when too few timers of the lone
    /// thread found their CPU idle (other load kept the CPUs busy): then not modelled.
    pub idle_wake_ns: Sourced<Option<u64>>,
    /// Median CPU time per period of a lone timer thread beyond the run rt-app times, ns: the
    /// wake-up's return to user space, rt-app's own per-period work (clock reads, its log
    /// entry), the sleep's system call and the switch out, all charged to the thread.
    pub period_overhead_ns: Sourced<u64>,
    /// The 10th and 90th percentiles of the same, ns, when measured (the median above from a
    /// trace with enough stretches): how much a pass's cost varies. `None` with a fallback.
    #[serde(default)]
    pub period_overhead_p10_p90_ns: Option<[u64; 2]>,
    /// Timer wake-ups the figures come from (idle run, busy run).
    pub wakes: (usize, usize),
    /// Set when a figure is a default because no trace gave enough samples: what happened.
    pub warning: Option<String>,
}

/// The fewest samples a timer-path figure is taken from: complete timer wake-ups of a run, those
/// among them that fired on an idle CPU (for the idle wake-up), on-CPU stretches of the lone
/// thread (for the per-pass overhead), timers that fired on a busy CPU (for the lateness). The
/// idle run gives about 100 wake-ups a second, the busy run 500; a fifth of the idle run is
/// plenty for a median, and a median of fewer is one outlier away from anything (a trace that
/// dropped every switch out of idle once gave 1 wake-up, and the model then used 0 µs).
pub const PATH_PROBE_MIN_SAMPLES: usize = 20;
/// The most wake-ups a usable trace may have lost, as a percentage of the complete ones: a
/// timer whose thread never shows switching in before it arms its next one lost an event
/// (this kernel's trace sometimes drops nearly every `sched_switch` out of idle,
/// docs/validation.md), and the wake-ups it drops are the idle ones.
pub const PATH_PROBE_MAX_INCOMPLETE_PCT: usize = 10;
/// Fresh tracefs instances each timer-path run is tried in before its figures fall back: the gap
/// struck 1 run in 4 when it was measured (2026-11-28), so three tries all failing is rare.
pub const PATH_PROBE_ATTEMPTS: usize = 3;
/// The idle-CPU wake-up used when no trace gave enough samples, ns: 27.5 µs median lateness on
/// an idle CPU less 4.0 µs on a busy one, measured by this probe on the 2-vCPU validation VM
/// (Linux 6.18, haltpoll) on a quiet machine, 2026-11-28 (docs/validation.md).
pub const FALLBACK_IDLE_WAKE_NS: u64 = 23_500;
/// The rt-app overhead per pass used when no trace gave enough stretches, ns: measured by this
/// probe on the same machine and day as [`FALLBACK_IDLE_WAKE_NS`].
pub const FALLBACK_PASS_OVERHEAD_NS: u64 = 4_000;
/// The 10th and 90th percentiles of that overhead used with it, ns: 0 and 12 µs, measured by
/// this probe on the same machine on a quiet run (2026-11-28 13:35 UTC, 100 stretches). Without a
/// range the modelled pass cost is fixed, and identical threads woken together always run in
/// the same order, as the kernel's never do (docs/validation.md).
pub const FALLBACK_PASS_OVERHEAD_P10_P90_NS: [u64; 2] = [0, 12_000];

/// What one traced run of the lone timer thread gave.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct IdleRunSample {
    /// Timer wake-ups seen whole (armed, fired, woken, switched in).
    pub complete: usize,
    /// Timer wake-ups with an event missing.
    pub incomplete: usize,
    /// Complete wake-ups whose timer fired on an idle CPU, and their median lateness, ns.
    pub fired_idle: usize,
    pub late_idle_p50_ns: Option<i64>,
    /// On-CPU stretches of the thread, and their median, ns.
    pub stretches: usize,
    pub on_cpu_p50_ns: Option<i64>,
    /// The 10th and 90th percentiles of the stretches, ns.
    pub on_cpu_p10_p90_ns: Option<[i64; 2]>,
    /// The median `run` rt-app logged, ns.
    pub run_p50_ns: Option<i64>,
}

impl IdleRunSample {
    /// Why this run's trace is not enough to measure from; `None` when it is.
    #[must_use]
    pub fn shortfall(&self) -> Option<String> {
        if self.complete < PATH_PROBE_MIN_SAMPLES {
            return Some(format!(
                "{} complete timer wake-ups (fewer than {PATH_PROBE_MIN_SAMPLES}), {} with an \
                 event missing",
                self.complete, self.incomplete
            ));
        }
        if self.incomplete * 100 > self.complete * PATH_PROBE_MAX_INCOMPLETE_PCT {
            return Some(format!(
                "{} of {} timer wake-ups had an event missing (more than \
                 {PATH_PROBE_MAX_INCOMPLETE_PCT} %)",
                self.incomplete,
                self.complete + self.incomplete
            ));
        }
        if self.stretches < PATH_PROBE_MIN_SAMPLES || self.on_cpu_p50_ns.is_none() {
            return Some(format!(
                "{} on-CPU stretches (fewer than {PATH_PROBE_MIN_SAMPLES})",
                self.stretches
            ));
        }
        if self.run_p50_ns.is_none() {
            return Some("no period logged".into());
        }
        None
    }
}

/// The idle-path figures from the traced attempts of the lone thread's run, in the order they
/// were made: the first attempt with enough samples ([`IdleRunSample::shortfall`]) gives both,
/// the idle wake-up only when at least [`PATH_PROBE_MIN_SAMPLES`] of its timers fired on an
/// idle CPU (else `None`: the CPUs were busy, and the wake-up of an idle CPU is not modelled).
/// When none has enough, both are the named fallbacks ([`FALLBACK_IDLE_WAKE_NS`],
/// [`FALLBACK_PASS_OVERHEAD_NS`], with the range [`FALLBACK_PASS_OVERHEAD_P10_P90_NS`]) with
/// [`Source::Fallback`], and with the warning to print. A figure from too few samples never comes out of here.
#[must_use]
pub fn idle_path(attempts: &[IdleRunSample], late_busy_p50_ns: u64) -> IdlePath {
    let nonneg = |v: i64| v.max(0) as u64;
    for (i, a) in attempts.iter().enumerate() {
        if a.shortfall().is_some() {
            continue;
        }
        let (Some(on_cpu), Some(run)) = (a.on_cpu_p50_ns, a.run_p50_ns) else {
            continue;
        };
        let attempt = format!("trace {} of {}", i + 1, attempts.len());
        let idle = match a.late_idle_p50_ns {
            Some(late) if a.fired_idle >= PATH_PROBE_MIN_SAMPLES => Sourced::new(
                Some(nonneg(late).saturating_sub(late_busy_p50_ns)),
                Source::Measured(format!(
                    "median lateness of {} timers on an idle CPU less the busy median, {attempt}",
                    a.fired_idle
                )),
            ),
            _ => Sourced::new(
                None,
                Source::Measured(format!(
                    "only {} of {} timers found their CPU idle (fewer than \
                     {PATH_PROBE_MIN_SAMPLES}: the CPUs were busy), {attempt}",
                    a.fired_idle, a.complete
                )),
            ),
        };
        let overhead = Sourced::new(
            nonneg(on_cpu - run),
            Source::Measured(format!(
                "median of {} on-CPU stretches less the median logged run, {attempt}",
                a.stretches
            )),
        );
        return IdlePath {
            idle_wake_ns: idle,
            period_overhead_ns: overhead,
            period_overhead_p10_p90_ns: a
                .on_cpu_p10_p90_ns
                .map(|[lo, hi]| [nonneg(lo - run), nonneg(hi - run)]),
            warning: None,
        };
    }
    let why: Vec<String> = attempts
        .iter()
        .enumerate()
        .map(|(i, a)| {
            format!(
                "trace {}: {}",
                i + 1,
                a.shortfall().unwrap_or_else(|| "incomplete".into())
            )
        })
        .collect();
    let why = why.join("; ");
    let warning = format!(
        "WARNING: the timer-path probe got too few samples in {} fresh trace(s) ({why}); the \
         idle-CPU wake-up ({:.1} µs) and rt-app's per-pass overhead ({:.1} µs, {:.1}–{:.1} µs) \
         are defaults measured on the 2-vCPU validation VM on 2026-11-28, not on this run",
        attempts.len(),
        FALLBACK_IDLE_WAKE_NS as f64 / 1e3,
        FALLBACK_PASS_OVERHEAD_NS as f64 / 1e3,
        FALLBACK_PASS_OVERHEAD_P10_P90_NS[0] as f64 / 1e3,
        FALLBACK_PASS_OVERHEAD_P10_P90_NS[1] as f64 / 1e3,
    );
    IdlePath {
        idle_wake_ns: Sourced::new(
            Some(FALLBACK_IDLE_WAKE_NS),
            Source::Fallback(format!(
                "FALLBACK_IDLE_WAKE_NS, the probe's 2026-11-28 measurement ({why})"
            )),
        ),
        period_overhead_ns: Sourced::new(
            FALLBACK_PASS_OVERHEAD_NS,
            Source::Fallback(format!(
                "FALLBACK_PASS_OVERHEAD_NS, the probe's 2026-11-28 measurement ({why})"
            )),
        ),
        period_overhead_p10_p90_ns: Some(FALLBACK_PASS_OVERHEAD_P10_P90_NS),
        warning: Some(warning),
    }
}

/// The idle-path figures of [`idle_path`].
#[derive(Clone, PartialEq, Debug)]
pub struct IdlePath {
    pub idle_wake_ns: Sourced<Option<u64>>,
    pub period_overhead_ns: Sourced<u64>,
    pub period_overhead_p10_p90_ns: Option<[u64; 2]>,
    /// Set when the figures are the fallbacks: the warning to print.
    pub warning: Option<String>,
}

/// The timer-path probe's busy run: a thread waking every 2 ms on CPU 0 beside a hog pinned
/// there, so that its timer interrupts arrive while the CPU runs the hog (500 wake-ups a
/// second: about 500 samples in the run).
const PATH_PROBE_BUSY_PERIOD_US: u64 = 2_000;
/// The busy run's work per period, µs: short, so the thread sleeps most of each period.
const PATH_PROBE_BUSY_RUNTIME_US: u64 = 100;
/// The timer-path probe's length per run, s.
pub const PATH_PROBE_DURATION_S: u32 = 1;
/// Kernel buffer per CPU for a probe run's trace: 2 runs × 1 s of a few thousand events at
/// about 100 bytes each fit with room to spare.
const PATH_PROBE_BUFFER_KB: u32 = 4096;
/// The events the timer-path probe records.
const PATH_PROBE_EVENTS: [&str; 4] = [
    "timer/hrtimer_start",
    "timer/hrtimer_expire_entry",
    "sched/sched_wakeup",
    "sched/sched_switch",
];

/// Runs `workload` under a tracefs text trace of [`PATH_PROBE_EVENTS`].
fn traced_run(
    rt_app: &Path,
    workload: &RtApp,
) -> Result<(super::super::live::LiveRun, String), TimerPathError> {
    let trace = lull_os::tracefs::TextTrace::create(&PATH_PROBE_EVENTS, PATH_PROBE_BUFFER_KB)?;
    let opts = LiveOptions {
        rt_app: Some(rt_app.to_owned()),
        calibration_ns: LOOP_PROBE_CALIBRATION_NS,
        duration_s: None,
    };
    trace.set_tracing(true)?;
    let run = run_live(workload, &opts);
    trace.set_tracing(false)?;
    let run = run?;
    if trace.lost() > 0 {
        return Err(TimerPathError::Lost(trace.lost()));
    }
    Ok((run, trace.text()?))
}

/// One traced run of the lone timer thread (idle CPUs): what its trace and log gave.
fn idle_run_sample(rt_app: &Path, lone: &RtApp) -> Result<IdleRunSample, TimerPathError> {
    use lull_audit::timer_path::{on_cpu_ns, percentile, read, TimerPathStats};
    let (run, text) = traced_run(rt_app, lone)?;
    let t = run
        .threads
        .first()
        .ok_or(TimerPathError::NoThread("idle"))?;
    let (wakes, counts) = read(&text, &[t.tid as u32]);
    let stats = TimerPathStats::of(&wakes);
    let stretches: Vec<i64> = on_cpu_ns(&text, t.tid as u32)
        .into_iter()
        .map(|n| n as i64)
        .collect();
    let run_ns = median(
        &t.records
            .iter()
            .map(|r| r.run_us as f64 * 1e3)
            .collect::<Vec<_>>(),
    );
    Ok(IdleRunSample {
        complete: wakes.len(),
        incomplete: counts.incomplete as usize,
        fired_idle: stats.fired_idle,
        late_idle_p50_ns: stats.late_idle_p50_ns,
        stretches: stretches.len(),
        on_cpu_p50_ns: percentile(&stretches, 50),
        on_cpu_p10_p90_ns: percentile(&stretches, 10)
            .zip(percentile(&stretches, 90))
            .map(|(a, b)| [a, b]),
        run_p50_ns: run_ns.map(|r| r.round() as i64),
    })
}

/// The timer path of this machine (tracefs timelines, docs/validation.md): a lone thread with
/// the timer probe's workload (idle CPUs: lateness when idle, CPU per period), then a thread on
/// a 2 ms timer beside a hog on CPU 0 (lateness when busy). Each run is tried in up to
/// [`PATH_PROBE_ATTEMPTS`] fresh tracefs instances until its trace has enough samples
/// ([`PATH_PROBE_MIN_SAMPLES`]); the idle figures then fall back to named defaults with a
/// warning ([`idle_path`]). About 2 s (up to 6 s with retries); root and tracefs needed.
///
/// # Errors
/// Why it could not be measured.
pub fn measure_timer_path(rt_app: &Path) -> Result<Sourced<TimerPath>, TimerPathError> {
    use lull_audit::timer_path::{read, TimerPathStats};
    let lone = lone_task(
        "lull-path-idle",
        PATH_PROBE_DURATION_S,
        LOOP_PROBE_CALIBRATION_NS,
        periodic(TIMER_PROBE_RUNTIME_US, TIMER_PROBE_PERIOD_US),
    );
    let mut attempts = Vec::new();
    while attempts.len() < PATH_PROBE_ATTEMPTS {
        let a = idle_run_sample(rt_app, &lone)?;
        attempts.push(a);
        if a.shortfall().is_none() {
            break;
        }
    }

    let mut busy_w = lone_task(
        "lull-path-busy",
        PATH_PROBE_DURATION_S,
        LOOP_PROBE_CALIBRATION_NS,
        periodic(PATH_PROBE_BUSY_RUNTIME_US, PATH_PROBE_BUSY_PERIOD_US),
    );
    busy_w.tasks[0].cpus = Some(vec![0]);
    let mut hog = TaskSpec::endless(
        "lull-path-hog",
        1,
        vec![Event::Run {
            us: LOOP_PROBE_RUN_US,
        }],
    );
    hog.cpus = Some(vec![0]);
    busy_w.tasks.push(hog);
    let mut busy = None;
    let mut most_busy = 0;
    for _ in 0..PATH_PROBE_ATTEMPTS {
        let (run, text) = traced_run(rt_app, &busy_w)?;
        let t = run
            .threads
            .first()
            .ok_or(TimerPathError::NoThread("busy"))?;
        let (busy_wakes, _) = read(&text, &[t.tid as u32]);
        let on_busy = busy_wakes.iter().filter(|w| !w.fired_idle).count();
        most_busy = most_busy.max(on_busy);
        if on_busy >= PATH_PROBE_MIN_SAMPLES {
            busy = Some((TimerPathStats::of(&busy_wakes), busy_wakes.len(), on_busy));
            break;
        }
    }
    let Some((stats, busy_n, on_busy)) = busy else {
        return Err(TimerPathError::TooFewBusyTimers(most_busy));
    };
    let (Some(p10), Some(p50), Some(p90)) = (
        stats.late_busy_p10_ns,
        stats.late_busy_p50_ns,
        stats.late_busy_p90_ns,
    ) else {
        return Err(TimerPathError::TooFewBusyTimers(on_busy));
    };
    let nonneg = |v: i64| v.max(0) as u64;
    let IdlePath {
        idle_wake_ns,
        period_overhead_ns,
        period_overhead_p10_p90_ns,
        warning,
    } = idle_path(&attempts, nonneg(p50));
    let idle_n = attempts.last().map_or(0, |a| a.complete);
    Ok(Sourced::new(
        TimerPath {
            late_busy_ns: [nonneg(p10), nonneg(p50), nonneg(p90)],
            idle_wake_ns,
            period_overhead_ns,
            period_overhead_p10_p90_ns,
            wakes: (idle_n, busy_n),
            warning,
        },
        Source::Measured(format!(
            "tracefs hrtimer_start/hrtimer_expire_entry/sched_wakeup/sched_switch of a lone \
             thread on a {TIMER_PROBE_PERIOD_US} µs timer ({idle_n} wake-ups, {} on an idle \
             CPU, trace {} of up to {PATH_PROBE_ATTEMPTS}) and of one on a \
             {PATH_PROBE_BUSY_PERIOD_US} µs timer beside a hog on CPU 0 ({on_busy} on a busy CPU)",
            attempts.last().map_or(0, |a| a.fired_idle),
            attempts.len(),
        )),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(complete: usize, incomplete: usize, fired_idle: usize) -> IdleRunSample {
        IdleRunSample {
            complete,
            incomplete,
            fired_idle,
            late_idle_p50_ns: Some(27_500),
            stretches: complete,
            on_cpu_p50_ns: Some(1_024_000),
            on_cpu_p10_p90_ns: Some([1_022_000, 1_031_000]),
            run_p50_ns: Some(1_020_000),
        }
    }

    #[test]
    fn a_trace_with_too_few_samples_is_never_measured_from() {
        // The 2026-11-28 12:02 probe: the trace dropped the switches out of idle, one wake-up
        // was left, and its figures (0 µs) reached the model.
        let gap = IdleRunSample {
            complete: 1,
            incomplete: 98,
            fired_idle: 1,
            late_idle_p50_ns: Some(3_000),
            stretches: 1,
            on_cpu_p50_ns: Some(900_000),
            on_cpu_p10_p90_ns: Some([900_000, 900_000]),
            run_p50_ns: Some(1_020_000),
        };
        assert!(gap.shortfall().unwrap().contains("1 complete"));
        let IdlePath {
            idle_wake_ns: idle,
            period_overhead_ns: overhead,
            period_overhead_p10_p90_ns: range,
            warning,
        } = idle_path(&[gap, gap, gap], 4_000);
        assert_eq!(range, Some(FALLBACK_PASS_OVERHEAD_P10_P90_NS));
        assert_eq!(idle.value, Some(FALLBACK_IDLE_WAKE_NS));
        assert_eq!(overhead.value, FALLBACK_PASS_OVERHEAD_NS);
        assert!(matches!(idle.source, Source::Fallback(_)));
        assert!(matches!(overhead.source, Source::Fallback(_)));
        let w = warning.expect("a fallback is warned about");
        assert!(
            w.starts_with("WARNING") && w.contains("3 fresh trace"),
            "{w}"
        );
        // Enough wake-ups but many lost ones: the lost are the idle ones, so not enough either.
        assert!(sample(80, 20, 80).shortfall().unwrap().contains("missing"));
        assert!(sample(90, 9, 90).shortfall().is_none());
        // Too few stretches, or no logged run.
        let mut s = sample(90, 0, 90);
        s.stretches = PATH_PROBE_MIN_SAMPLES - 1;
        assert!(s.shortfall().unwrap().contains("stretches"));
        s = sample(90, 0, 90);
        s.run_p50_ns = None;
        assert!(s.shortfall().is_some());
    }

    #[test]
    fn the_first_trace_with_enough_samples_gives_the_idle_path() {
        let gap = sample(3, 95, 3);
        let good = sample(99, 0, 97);
        let got = idle_path(&[gap, good], 4_000);
        assert_eq!(got.period_overhead_p10_p90_ns, Some([2_000, 11_000]));
        let (idle, overhead, warning) = (got.idle_wake_ns, got.period_overhead_ns, got.warning);
        assert_eq!(idle.value, Some(23_500));
        assert_eq!(overhead.value, 4_000);
        assert!(warning.is_none());
        match &idle.source {
            Source::Measured(how) => {
                assert!(how.contains("97 timers") && how.contains("trace 2 of 2"))
            }
            other => panic!("{other:?}"),
        }
        // A busy machine: the trace is whole but few timers found an idle CPU. That is a
        // measurement (the idle wake-up is not modelled), not a fallback.
        let busy = sample(99, 0, PATH_PROBE_MIN_SAMPLES - 1);
        let got = idle_path(&[busy], 4_000);
        let (idle, overhead, warning) = (got.idle_wake_ns, got.period_overhead_ns, got.warning);
        assert_eq!(idle.value, None);
        assert!(matches!(idle.source, Source::Measured(_)));
        assert_eq!(overhead.value, 4_000);
        assert!(warning.is_none());
        // No attempt at all (cannot happen in the probe) is a fallback too.
        assert!(idle_path(&[], 4_000).warning.is_some());
    }
}
