//! This machine as Linux exposes it to the scheduler, each figure with where it came from, and
//! two properties measured with short rt-app runs.
//!
//! The simulator is only as faithful as its machine description, so [`probe`] reads what the
//! kernel tells (online CPUs, tick rate, EEVDF base slice, idle states, frequency, timer slack)
//! and measures what it does not (rt-app's real cost per busy loop, the timer wake-up latency of
//! an idle machine). A figure the kernel hides is never guessed silently: its [`Source`] says it
//! is the kernel's default, or that nothing could be read.

use lull_model::stats::median;
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use lull_workload::rtapp::{Calibration, Event, PeriodRecord, RtApp, TaskSpec, TimerMode};

use super::live::{
    find_rt_app, run_live, LiveError, LiveOptions, RtAppMissing, LOOP_PROBE_CALIBRATION_NS,
};

/// Where a figure came from.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub enum Source {
    /// Read from this sysfs or procfs file (or directory of files).
    File(PathBuf),
    /// `CONFIG_*` of the running kernel's own build configuration, `/proc/config.gz`.
    ProcConfigGz,
    /// `CONFIG_*` of `/boot/config-<release>`.
    BootConfig(PathBuf),
    /// The kernel's built-in default, because the real value could not be read: the text says
    /// which default and why.
    KernelDefault(String),
    /// Measured on this machine: the text says how.
    Measured(String),
    /// Found by searching `PATH`.
    PathSearch,
    /// Not available: the text says what was tried.
    Unavailable(String),
    /// A measurement that could not be made here with enough samples, replaced by a named
    /// default measured elsewhere: the text says which default, where it comes from and why it
    /// was needed.
    Fallback(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::File(p) => {
                let kind = if p.starts_with("/sys") {
                    "sysfs"
                } else {
                    "procfs"
                };
                write!(f, "{kind} {}", p.display())
            }
            Source::ProcConfigGz => f.write_str("/proc/config.gz"),
            Source::BootConfig(p) => write!(f, "{}", p.display()),
            Source::KernelDefault(why) => write!(f, "kernel default: {why}"),
            Source::Measured(how) => write!(f, "measured: {how}"),
            Source::PathSearch => f.write_str("PATH"),
            Source::Unavailable(why) => write!(f, "unavailable: {why}"),
            Source::Fallback(why) => write!(f, "NOT MEASURED, default: {why}"),
        }
    }
}

/// A value and where it came from.
#[derive(Clone, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

impl<T> Sourced<T> {
    #[must_use]
    pub fn new(value: T, source: Source) -> Sourced<T> {
        Sourced { value, source }
    }

    fn file(value: T, path: &Path) -> Sourced<T> {
        Sourced::new(value, Source::File(path.to_owned()))
    }
}

/// One idle state of a CPU (`cpuidle/stateN`).
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub struct IdleState {
    /// N of `stateN`.
    pub index: u32,
    pub name: String,
    /// Exit latency, µs.
    pub latency_us: u64,
    /// Target residency: the shortest idle period worth entering this state for, µs.
    pub residency_us: u64,
    /// Whether the state is disabled (`disable` = 1).
    pub disabled: bool,
}

/// The idle driver and cpu0's idle states.
#[derive(Clone, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct CpuIdle {
    /// `cpuidle/current_driver`; `None` without cpuidle.
    pub driver: Option<String>,
    /// cpu0's states in index order.
    pub states: Vec<IdleState>,
}

/// cpu0's frequency scaling, when the kernel has any.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct CpuFreq {
    pub driver: Option<String>,
    pub governor: Option<String>,
    pub min_khz: Option<u64>,
    pub max_khz: Option<u64>,
    pub cur_khz: Option<u64>,
}

/// This machine as the kernel describes it, plus the measured rt-app properties.
#[derive(Debug)]
pub struct Machine {
    /// Online CPUs (`/sys/devices/system/cpu/online`); the count is `cpus.value.len()`.
    pub cpus: Sourced<Vec<u32>>,
    /// `CONFIG_HZ`: the tick rate; `None` when no kernel configuration is readable.
    pub hz: Sourced<Option<u32>>,
    /// EEVDF's base slice, ns.
    pub base_slice_ns: Sourced<u64>,
    /// cpu0's idle states and the idle driver.
    pub idle: Sourced<CpuIdle>,
    /// cpu0's frequency scaling; `None`: no cpufreq (the CPU runs at a fixed frequency as far as
    /// Linux knows).
    pub cpufreq: Sourced<Option<CpuFreq>>,
    /// The nominal frequency of `/proc/cpuinfo`'s first `cpu MHz`.
    pub nominal_mhz: Sourced<Option<f64>>,
    /// Timer slack of a normal thread, ns: how late the kernel may fire its sleep timers to
    /// batch wake-ups.
    pub timer_slack_ns: Sourced<u64>,
    /// The kernel release (what `uname -r` prints).
    pub kernel_release: Sourced<Option<String>>,
    /// `kernel.sched_autogroup_enabled`: whether the fair class groups threads per session.
    pub autogroup: Sourced<Option<bool>>,
    /// The rt-app binary.
    pub rt_app: Result<PathBuf, RtAppMissing>,
    /// Effective ns per rt-app busy loop; see [`measure_loop_ns`].
    pub loop_ns: Result<Sourced<f64>, LiveError>,
    /// Median timer wake-up latency of a lone thread, µs; see [`measure_idle_timer_latency_us`].
    pub idle_timer_latency_us: Result<Sourced<f64>, LiveError>,
    /// The timer path measured with tracefs; see [`measure_timer_path`]. An error says why it
    /// could not be measured (no root, no tracefs, no rt-app).
    pub timer_path: Result<Sourced<TimerPath>, TimerPathError>,
}

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

/// What the simulator's profile of this machine is made from ([`Machine::facts`];
/// `compare::SimProfile::of_facts`): kept with a saved collection of live runs, so that the
/// simulator can be run again on the same profile without the machine.
#[derive(Clone, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub struct MachineFacts {
    pub cpus: Sourced<Vec<u32>>,
    pub hz: Sourced<Option<u32>>,
    pub base_slice_ns: Sourced<u64>,
    pub idle: Sourced<CpuIdle>,
    pub nominal_mhz: Sourced<Option<f64>>,
    pub timer_slack_ns: Sourced<u64>,
    /// The measured loop time, or why it was not measured.
    pub loop_ns: Result<Sourced<f64>, String>,
    /// The measured timer path, or why it was not measured.
    pub timer_path: Result<Sourced<TimerPath>, String>,
}

impl Machine {
    /// The facts the simulator's profile is made from.
    #[must_use]
    pub fn facts(&self) -> MachineFacts {
        MachineFacts {
            cpus: self.cpus.clone(),
            hz: self.hz.clone(),
            base_slice_ns: self.base_slice_ns.clone(),
            idle: self.idle.clone(),
            nominal_mhz: self.nominal_mhz.clone(),
            timer_slack_ns: self.timer_slack_ns.clone(),
            loop_ns: self.loop_ns.as_ref().map_err(ToString::to_string).cloned(),
            timer_path: self
                .timer_path
                .as_ref()
                .map_err(ToString::to_string)
                .cloned(),
        }
    }

    /// The number of online CPUs.
    #[must_use]
    pub fn cpu_count(&self) -> usize {
        self.cpus.value.len()
    }
}

/// Where Linux lists the online CPUs.
const CPU_ONLINE: &str = "/sys/devices/system/cpu/online";
/// The running kernel's build configuration, when built with `CONFIG_IKCONFIG_PROC`.
const PROC_CONFIG_GZ: &str = "/proc/config.gz";
/// EEVDF's tunable base slice (debugfs; root only, and refused under lockdown).
const DEBUGFS_BASE_SLICE: &str = "/sys/kernel/debug/sched/base_slice_ns";
const CPUIDLE_DRIVER: &str = "/sys/devices/system/cpu/cpuidle/current_driver";
const CPU0_CPUIDLE: &str = "/sys/devices/system/cpu/cpu0/cpuidle";
const CPU0_CPUFREQ: &str = "/sys/devices/system/cpu/cpu0/cpufreq";
const CPUINFO: &str = "/proc/cpuinfo";
const TIMER_SLACK: &str = "/proc/self/timerslack_ns";
const OSRELEASE: &str = "/proc/sys/kernel/osrelease";
const AUTOGROUP: &str = "/proc/sys/kernel/sched_autogroup_enabled";
/// The kernel's default timer slack of a thread (`init_task.timer_slack_ns`), inherited by every
/// normal thread that does not change it.
pub const DEFAULT_TIMER_SLACK_NS: u64 = 50_000;

/// The loop probe's `run`, µs: long enough that the clock reads and the logging around it are
/// negligible (under 0.1 %), short enough to give many periods in the run.
const LOOP_PROBE_RUN_US: u64 = 100_000;
/// The loop probe's `sleep` between runs, µs: lets the thread block so each period starts fresh.
const LOOP_PROBE_SLEEP_US: u64 = 10_000;
/// The loop probe's length, s (rt-app's duration is whole seconds): about 18 periods, enough
/// for a stable median, within the 2 s budget of a probe.
pub const LOOP_PROBE_DURATION_S: u32 = 2;
/// The timer probe's `runtime` per period, µs: a little work so the thread really sleeps and
/// wakes each period, as a periodic task does.
const TIMER_PROBE_RUNTIME_US: u64 = 1_000;
/// The timer probe's period, µs: 100 wake-ups per second.
const TIMER_PROBE_PERIOD_US: u64 = 10_000;
/// The timer probe's length, s: about 100 wake-ups, plenty for a median.
pub const TIMER_PROBE_DURATION_S: u32 = 1;

/// Describes this machine: the kernel's figures, then the two rt-app probe runs (about 3 s in
/// all; skipped with an error when rt-app is missing). Run it on an otherwise idle machine:
/// the probes measure what an uncontended thread sees.
#[must_use]
pub fn probe() -> Machine {
    let cpus = online_cpus();
    let rt_app = find_rt_app();
    let (loop_ns, idle_timer_latency_us, timer_path) = match &rt_app {
        Ok(path) => (
            measure_loop_ns(path),
            measure_idle_timer_latency_us(path),
            measure_timer_path(path),
        ),
        Err(e) => (
            Err(LiveError::RtAppMissing(e.clone())),
            Err(LiveError::RtAppMissing(e.clone())),
            Err(TimerPathError::RtAppMissing(e.clone())),
        ),
    };
    let cpu_count = cpus.value.len();
    Machine {
        hz: config_hz(),
        base_slice_ns: base_slice_ns(cpu_count),
        idle: cpu_idle(Path::new(CPUIDLE_DRIVER), Path::new(CPU0_CPUIDLE)),
        cpufreq: cpufreq(Path::new(CPU0_CPUFREQ)),
        nominal_mhz: nominal_mhz(),
        timer_slack_ns: timer_slack_ns(),
        kernel_release: kernel_release(),
        autogroup: autogroup(),
        cpus,
        rt_app,
        loop_ns,
        idle_timer_latency_us,
        timer_path,
    }
}

/// A kernel file the probe could not read; the probe says so in the figure's [`Source`].
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
struct ReadError {
    path: PathBuf,
    source: std::io::Error,
}

fn read_trimmed(path: &Path) -> Result<String, ReadError> {
    fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .map_err(|source| ReadError {
            path: path.to_owned(),
            source,
        })
}

/// The online CPUs; empty (and unavailable) when sysfs cannot be read.
fn online_cpus() -> Sourced<Vec<u32>> {
    let path = Path::new(CPU_ONLINE);
    match read_trimmed(path).map(|s| parse_cpu_list(&s)) {
        Ok(Some(cpus)) => Sourced::file(cpus, path),
        Ok(None) => Sourced::new(
            Vec::new(),
            Source::Unavailable(format!("{CPU_ONLINE}: not a CPU list")),
        ),
        Err(e) => Sourced::new(Vec::new(), Source::Unavailable(e.to_string())),
    }
}

/// The kernel CPU list reader (one home: `lull_os::topology`).
pub use lull_os::topology::parse_cpu_list;

/// `CONFIG_HZ` of a kernel configuration; `None` when absent (a tickless-only config still sets
/// it, so absence means a truncated or foreign file).
#[must_use]
pub fn parse_config_hz(config: &str) -> Option<u32> {
    config
        .lines()
        .find_map(|l| l.trim().strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
}

/// The tick rate from `/proc/config.gz`, else `/boot/config-<release>`.
fn config_hz() -> Sourced<Option<u32>> {
    let mut tried = Vec::new();
    match read_gz(Path::new(PROC_CONFIG_GZ)) {
        Ok(text) => match parse_config_hz(&text) {
            Some(hz) => return Sourced::new(Some(hz), Source::ProcConfigGz),
            None => tried.push(format!("{PROC_CONFIG_GZ}: no CONFIG_HZ")),
        },
        Err(e) => tried.push(format!("{PROC_CONFIG_GZ}: {e}")),
    }
    match kernel_release().value {
        Some(release) => {
            let path = PathBuf::from(format!("/boot/config-{release}"));
            match fs::read_to_string(&path) {
                Ok(text) => match parse_config_hz(&text) {
                    Some(hz) => return Sourced::new(Some(hz), Source::BootConfig(path)),
                    None => tried.push(format!("{}: no CONFIG_HZ", path.display())),
                },
                Err(e) => tried.push(format!("{}: {e}", path.display())),
            }
        }
        None => tried.push("/boot/config-<release>: kernel release unknown".into()),
    }
    Sourced::new(None, Source::Unavailable(tried.join("; ")))
}

fn read_gz(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(fs::File::open(path)?).read_to_string(&mut text)?;
    Ok(text)
}

/// EEVDF's base slice: debugfs when readable, else the kernel's default for `cpus` CPUs.
fn base_slice_ns(cpus: usize) -> Sourced<u64> {
    let path = Path::new(DEBUGFS_BASE_SLICE);
    let why = match read_trimmed(path).map(|s| s.parse::<u64>()) {
        Ok(Ok(ns)) => return Sourced::file(ns, path),
        Ok(Err(e)) => format!("{DEBUGFS_BASE_SLICE}: {e}"),
        Err(e) => e.to_string(),
    };
    Sourced::new(
        lull_sched::class::eevdf::default_base_slice_ns(cpus),
        Source::KernelDefault(format!("for {cpus} CPUs ({why})")),
    )
}

/// The idle driver (`driver_file`) and the states under `cpuidle_dir` (`stateN/{name,latency,
/// residency,disable}`). States whose files cannot be read are left out; no cpuidle directory
/// gives no states.
#[must_use]
pub fn cpu_idle(driver_file: &Path, cpuidle_dir: &Path) -> Sourced<CpuIdle> {
    let driver = read_trimmed(driver_file).ok();
    let mut states = Vec::new();
    if let Ok(entries) = fs::read_dir(cpuidle_dir) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(index) = name
                .to_str()
                .and_then(|n| n.strip_prefix("state"))
                .and_then(|n| n.parse().ok())
            else {
                continue;
            };
            if let Some(state) = read_idle_state(&entry.path(), index) {
                states.push(state);
            }
        }
    }
    states.sort_by_key(|s| s.index);
    let source = if driver.is_none() && states.is_empty() {
        Source::Unavailable(format!(
            "no cpuidle ({} and {} unreadable)",
            driver_file.display(),
            cpuidle_dir.display()
        ))
    } else {
        Source::File(cpuidle_dir.to_owned())
    };
    Sourced::new(CpuIdle { driver, states }, source)
}

fn read_idle_state(dir: &Path, index: u32) -> Option<IdleState> {
    let field = |f: &str| read_trimmed(&dir.join(f)).ok();
    let number = |f: &str| field(f).and_then(|v| v.parse::<u64>().ok());
    Some(IdleState {
        index,
        name: field("name")?,
        latency_us: number("latency")?,
        residency_us: number("residency")?,
        disabled: number("disable")? != 0,
    })
}

/// cpu0's frequency scaling from `dir` (`cpu0/cpufreq`), `None` when the directory is absent.
#[must_use]
pub fn cpufreq(dir: &Path) -> Sourced<Option<CpuFreq>> {
    if !dir.is_dir() {
        return Sourced::new(
            None,
            Source::Unavailable(format!("no cpufreq ({} absent)", dir.display())),
        );
    }
    let field = |f: &str| read_trimmed(&dir.join(f)).ok();
    let khz = |f: &str| field(f).and_then(|v| v.parse().ok());
    Sourced::file(
        Some(CpuFreq {
            driver: field("scaling_driver"),
            governor: field("scaling_governor"),
            min_khz: khz("cpuinfo_min_freq"),
            max_khz: khz("cpuinfo_max_freq"),
            cur_khz: khz("scaling_cur_freq"),
        }),
        dir,
    )
}

/// The first `cpu MHz` of a `/proc/cpuinfo` text.
#[must_use]
pub fn parse_cpuinfo_mhz(cpuinfo: &str) -> Option<f64> {
    cpuinfo.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key.trim() == "cpu MHz")
            .then(|| value.trim().parse().ok())
            .flatten()
    })
}

fn nominal_mhz() -> Sourced<Option<f64>> {
    let path = Path::new(CPUINFO);
    match read_trimmed(path) {
        Ok(text) => match parse_cpuinfo_mhz(&text) {
            Some(mhz) => Sourced::file(Some(mhz), path),
            None => Sourced::new(None, Source::Unavailable(format!("{CPUINFO}: no cpu MHz"))),
        },
        Err(e) => Sourced::new(None, Source::Unavailable(e.to_string())),
    }
}

fn timer_slack_ns() -> Sourced<u64> {
    let path = Path::new(TIMER_SLACK);
    match read_trimmed(path).map(|s| s.parse::<u64>()) {
        Ok(Ok(ns)) => Sourced::file(ns, path),
        Ok(Err(e)) => Sourced::new(
            DEFAULT_TIMER_SLACK_NS,
            Source::KernelDefault(format!("init_task's ({TIMER_SLACK}: {e})")),
        ),
        Err(e) => Sourced::new(
            DEFAULT_TIMER_SLACK_NS,
            Source::KernelDefault(format!("init_task's ({e})")),
        ),
    }
}

/// The kernel release, from the same `utsname` field `uname(2)` returns.
fn kernel_release() -> Sourced<Option<String>> {
    let path = Path::new(OSRELEASE);
    match read_trimmed(path) {
        Ok(r) => Sourced::file(Some(r), path),
        Err(e) => Sourced::new(None, Source::Unavailable(e.to_string())),
    }
}

fn autogroup() -> Sourced<Option<bool>> {
    let path = Path::new(AUTOGROUP);
    match read_trimmed(path) {
        Ok(v) => Sourced::file(Some(v != "0"), path),
        Err(e) => Sourced::new(None, Source::Unavailable(e.to_string())),
    }
}

/// A workload of one task named `name` repeating `events` until the duration ends.
fn lone_task(name: &str, duration_s: u32, calibration_ns: u32, events: Vec<Event>) -> RtApp {
    RtApp {
        duration_s: Some(duration_s),
        calibration: Calibration::NsPerLoop(calibration_ns),
        tasks: vec![TaskSpec::endless(name, 1, events)],
    }
}

/// The records of the single thread of a probe run.
fn probe_records(rt_app: &Path, workload: &RtApp) -> Result<Vec<PeriodRecord>, LiveError> {
    let opts = LiveOptions {
        rt_app: Some(rt_app.to_owned()),
        calibration_ns: LOOP_PROBE_CALIBRATION_NS,
        duration_s: None,
    };
    let run = run_live(workload, &opts)?;
    Ok(run
        .threads
        .into_iter()
        .next()
        .map(|t| t.records)
        .unwrap_or_default())
}

/// The effective ns per rt-app busy loop on an idle CPU: a lone task runs `run` 100 ms / `sleep`
/// 10 ms with calibration [`LOOP_PROBE_CALIBRATION_NS`] (C) for [`LOOP_PROBE_DURATION_S`].
/// rt-app then runs 100 ms × 1000 / C loops per period, and the wall time it logs for them
/// gives C × median(run µs) / 100 000 ns per loop.
///
/// # Errors
/// The run's [`LiveError`], or [`LiveError::NoRecords`] when the run logged no period.
pub fn measure_loop_ns(rt_app: &Path) -> Result<Sourced<f64>, LiveError> {
    let workload = lone_task(
        "lull-loop-probe",
        LOOP_PROBE_DURATION_S,
        LOOP_PROBE_CALIBRATION_NS,
        vec![
            Event::Run {
                us: LOOP_PROBE_RUN_US,
            },
            Event::Sleep {
                us: LOOP_PROBE_SLEEP_US,
            },
        ],
    );
    let records = probe_records(rt_app, &workload)?;
    let n = records.len();
    let run_us = median(&records.iter().map(|r| r.run_us as f64).collect::<Vec<_>>())
        .ok_or(LiveError::NoRecords("loop probe"))?;
    Ok(Sourced::new(
        f64::from(LOOP_PROBE_CALIBRATION_NS) * run_us / LOOP_PROBE_RUN_US as f64,
        Source::Measured(format!(
            "rt-app run {LOOP_PROBE_RUN_US} µs at calibration {LOOP_PROBE_CALIBRATION_NS}, \
             median of {n} periods"
        )),
    ))
}

/// The timer wake-up latency of an otherwise idle machine, µs: the median `wu_lat` of a lone
/// task with `runtime` 1 ms on a private 10 ms timer, for [`TIMER_PROBE_DURATION_S`].
///
/// # Errors
/// The run's [`LiveError`], or [`LiveError::NoRecords`] when the run logged no period.
pub fn measure_idle_timer_latency_us(rt_app: &Path) -> Result<Sourced<f64>, LiveError> {
    let workload = lone_task(
        "lull-tmr-probe",
        TIMER_PROBE_DURATION_S,
        LOOP_PROBE_CALIBRATION_NS,
        periodic(TIMER_PROBE_RUNTIME_US, TIMER_PROBE_PERIOD_US),
    );
    let records = probe_records(rt_app, &workload)?;
    let n = records.len();
    let lat_us = median(
        &records
            .iter()
            .map(|r| r.wu_lat_us as f64)
            .collect::<Vec<_>>(),
    )
    .ok_or(LiveError::NoRecords("timer probe"))?;
    Ok(Sourced::new(
        lat_us,
        Source::Measured(format!(
            "rt-app timer period {TIMER_PROBE_PERIOD_US} µs alone, median wu_lat of {n} periods"
        )),
    ))
}

/// A periodic thread's loop: `runtime_us` of work, then sleep until its timer's next period.
fn periodic(runtime_us: u64, period_us: u64) -> Vec<Event> {
    vec![
        Event::Runtime { us: runtime_us },
        Event::Timer {
            reference: "unique".into(),
            period_us,
            mode: TimerMode::Relative,
        },
    ]
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
) -> Result<(super::live::LiveRun, String), TimerPathError> {
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
    use lull_audit::timer_path::{on_cpu_ns, quantile, read, TimerPathStats};
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
        on_cpu_p50_ns: quantile(&stretches, 0.5),
        on_cpu_p10_p90_ns: quantile(&stretches, 0.1)
            .zip(quantile(&stretches, 0.9))
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

impl fmt::Display for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn opt<T: fmt::Display>(v: &Option<T>) -> String {
            v.as_ref().map_or_else(|| "-".into(), ToString::to_string)
        }
        let cpus: Vec<String> = self.cpus.value.iter().map(u32::to_string).collect();
        writeln!(
            f,
            "online CPUs      {} [{}]  ({})",
            self.cpu_count(),
            cpus.join(","),
            self.cpus.source
        )?;
        writeln!(
            f,
            "HZ               {}  ({})",
            opt(&self.hz.value),
            self.hz.source
        )?;
        writeln!(
            f,
            "base slice       {} ns  ({})",
            self.base_slice_ns.value, self.base_slice_ns.source
        )?;
        writeln!(
            f,
            "cpuidle driver   {}  ({})",
            opt(&self.idle.value.driver),
            self.idle.source
        )?;
        for s in &self.idle.value.states {
            writeln!(
                f,
                "  state{} {:<10} latency {} µs, residency {} µs{}",
                s.index,
                s.name,
                s.latency_us,
                s.residency_us,
                if s.disabled { ", disabled" } else { "" }
            )?;
        }
        match &self.cpufreq.value {
            Some(c) => writeln!(
                f,
                "cpufreq          {} / {}, {}–{} kHz, now {} kHz  ({})",
                opt(&c.driver),
                opt(&c.governor),
                opt(&c.min_khz),
                opt(&c.max_khz),
                opt(&c.cur_khz),
                self.cpufreq.source
            )?,
            None => writeln!(f, "cpufreq          none  ({})", self.cpufreq.source)?,
        }
        writeln!(
            f,
            "nominal MHz      {}  ({})",
            opt(&self.nominal_mhz.value),
            self.nominal_mhz.source
        )?;
        writeln!(
            f,
            "timer slack      {} ns  ({})",
            self.timer_slack_ns.value, self.timer_slack_ns.source
        )?;
        writeln!(
            f,
            "kernel           {}  ({})",
            opt(&self.kernel_release.value),
            self.kernel_release.source
        )?;
        writeln!(
            f,
            "autogroup        {}  ({})",
            opt(&self.autogroup.value),
            self.autogroup.source
        )?;
        match &self.rt_app {
            Ok(p) => writeln!(f, "rt-app           {}", p.display())?,
            Err(e) => writeln!(f, "rt-app           {e}")?,
        }
        match &self.loop_ns {
            Ok(v) => writeln!(f, "loop             {:.2} ns  ({})", v.value, v.source)?,
            Err(e) => writeln!(f, "loop             not measured: {e}")?,
        }
        match &self.idle_timer_latency_us {
            Ok(v) => writeln!(f, "timer latency    {:.1} µs  ({})", v.value, v.source)?,
            Err(e) => writeln!(f, "timer latency    not measured: {e}")?,
        }
        match &self.timer_path {
            Ok(v) => {
                let p = &v.value;
                writeln!(
                    f,
                    "timer path       late past hard expiry on a busy CPU {:.1} µs (p10 {:.1}, \
                     p90 {:.1})  ({})",
                    p.late_busy_ns[1] as f64 / 1e3,
                    p.late_busy_ns[0] as f64 / 1e3,
                    p.late_busy_ns[2] as f64 / 1e3,
                    v.source
                )?;
                writeln!(
                    f,
                    "  idle-CPU wake-up {}  ({})",
                    p.idle_wake_ns.value.map_or_else(
                        || "not modelled".into(),
                        |l| format!("{:.1} µs", l as f64 / 1e3)
                    ),
                    p.idle_wake_ns.source
                )?;
                writeln!(
                    f,
                    "  CPU per period beyond the timed run {:.1} µs{}  ({})",
                    p.period_overhead_ns.value as f64 / 1e3,
                    p.period_overhead_p10_p90_ns
                        .map_or_else(String::new, |[lo, hi]| format!(
                            " (p10 {:.1}, p90 {:.1})",
                            lo as f64 / 1e3,
                            hi as f64 / 1e3
                        )),
                    p.period_overhead_ns.source
                )?;
                match &p.warning {
                    Some(w) => writeln!(f, "  {w}"),
                    None => Ok(()),
                }
            }
            Err(e) => writeln!(f, "timer path       not measured: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_expand_ranges() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("0-2,5,7-8"), Some(vec![0, 1, 2, 5, 7, 8]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        for bad in ["x", "0-", "2-1", "0,,1", "1-2-3"] {
            assert_eq!(parse_cpu_list(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn config_hz_is_the_numeric_option() {
        let config = "# Timer frequency\n# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\n\
                      CONFIG_HZ=250\nCONFIG_SCHED_HRTICK=y\n";
        assert_eq!(parse_config_hz(config), Some(250));
        assert_eq!(
            parse_config_hz("CONFIG_HZ_1000=y\nCONFIG_HZ=1000"),
            Some(1000)
        );
        assert_eq!(parse_config_hz("CONFIG_HZ_250=y\n"), None);
        assert_eq!(parse_config_hz("# CONFIG_HZ=250 is not set"), None);
        assert_eq!(parse_config_hz(""), None);
    }

    #[test]
    fn config_gz_round_trips_through_the_decoder() {
        use std::io::Write;
        let dir = TestDir::new("gz");
        let path = dir.0.join("config.gz");
        let mut enc =
            flate2::write::GzEncoder::new(fs::File::create(&path).unwrap(), Default::default());
        enc.write_all(b"CONFIG_HZ_300=y\nCONFIG_HZ=300\n").unwrap();
        enc.finish().unwrap();
        assert_eq!(parse_config_hz(&read_gz(&path).unwrap()), Some(300));
        fs::write(&path, "not gzip").unwrap();
        assert!(read_gz(&path).is_err());
    }

    #[test]
    fn cpuidle_states_are_read_in_index_order() {
        let dir = TestDir::new("cpuidle");
        let driver = dir.0.join("current_driver");
        fs::write(&driver, "haltpoll\n").unwrap();
        let states = dir.0.join("cpu0");
        for (i, name, lat, res, dis) in [
            (0, "POLL", 0, 0, 0),
            (1, "haltpoll idle", 1, 1, 0),
            (10, "C6", 133, 600, 1),
            (2, "C1E", 10, 20, 0),
        ] {
            let s = states.join(format!("state{i}"));
            fs::create_dir_all(&s).unwrap();
            for (f, v) in [
                ("name", name.to_string()),
                ("latency", lat.to_string()),
                ("residency", res.to_string()),
                ("disable", dis.to_string()),
            ] {
                fs::write(s.join(f), format!("{v}\n")).unwrap();
            }
        }
        // Not a state; a state missing a file is left out.
        fs::write(states.join("driver"), "x").unwrap();
        fs::create_dir_all(states.join("state3")).unwrap();
        fs::write(states.join("state3/name"), "broken").unwrap();

        let idle = cpu_idle(&driver, &states);
        assert_eq!(idle.source, Source::File(states.clone()));
        assert_eq!(idle.value.driver.as_deref(), Some("haltpoll"));
        let got: Vec<(u32, &str, u64, u64, bool)> = idle
            .value
            .states
            .iter()
            .map(|s| {
                (
                    s.index,
                    s.name.as_str(),
                    s.latency_us,
                    s.residency_us,
                    s.disabled,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (0, "POLL", 0, 0, false),
                (1, "haltpoll idle", 1, 1, false),
                (2, "C1E", 10, 20, false),
                (10, "C6", 133, 600, true),
            ]
        );

        let none = cpu_idle(&dir.0.join("nope"), &dir.0.join("nope2"));
        assert_eq!(none.value, CpuIdle::default());
        assert!(matches!(none.source, Source::Unavailable(_)));
    }

    #[test]
    fn cpufreq_absent_says_so() {
        let dir = TestDir::new("cpufreq");
        let absent = cpufreq(&dir.0.join("cpufreq"));
        assert_eq!(absent.value, None);
        assert!(absent.source.to_string().contains("no cpufreq"));
        let present = dir.0.join("cpufreq");
        fs::create_dir_all(&present).unwrap();
        fs::write(present.join("scaling_governor"), "schedutil\n").unwrap();
        fs::write(present.join("cpuinfo_max_freq"), "3000000\n").unwrap();
        let got = cpufreq(&present).value.unwrap();
        assert_eq!(got.governor.as_deref(), Some("schedutil"));
        assert_eq!(got.max_khz, Some(3_000_000));
        assert_eq!(got.min_khz, None);
    }

    #[test]
    fn cpuinfo_mhz_is_the_first_one() {
        let text = "processor\t: 0\nmodel name\t: X\ncpu MHz\t\t: 2596.132\n\nprocessor\t: 1\n\
                    cpu MHz\t\t: 1200.000\n";
        assert_eq!(parse_cpuinfo_mhz(text), Some(2596.132));
        assert_eq!(parse_cpuinfo_mhz("processor : 0\n"), None);
    }

    #[test]
    fn base_slice_falls_back_to_the_kernel_default() {
        // Unprivileged (or under lockdown) debugfs is unreadable; as root it may be readable,
        // and then the figure is the file's.
        let got = base_slice_ns(2);
        match &got.source {
            Source::KernelDefault(why) => {
                assert_eq!(got.value, 1_400_000);
                assert!(why.contains("2 CPUs"), "{why}");
            }
            Source::File(p) => assert_eq!(p, Path::new(DEBUGFS_BASE_SLICE)),
            other => panic!("{other:?}"),
        }
    }

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

    #[test]
    fn missing_rt_app_says_which_package() {
        assert!(RtAppMissing.to_string().contains("Debian package `rt-app`"));
    }

    /// A fresh directory under the system temp dir, removed on drop.
    struct TestDir(PathBuf);

    impl TestDir {
        fn new(tag: &str) -> TestDir {
            let p = std::env::temp_dir().join(format!(
                "lull-machine-test-{tag}-{}-{}",
                std::process::id(),
                lull_os::sys::monotonic_ns()
            ));
            fs::create_dir_all(&p).unwrap();
            TestDir(p)
        }
    }

    impl Drop for TestDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}
