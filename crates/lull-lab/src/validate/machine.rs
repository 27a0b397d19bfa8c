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

mod timer_path;
pub use timer_path::{
    idle_path, measure_timer_path, IdlePath, IdleRunSample, TimerPath, TimerPathError,
    FALLBACK_IDLE_WAKE_NS, FALLBACK_PASS_OVERHEAD_NS, FALLBACK_PASS_OVERHEAD_P10_P90_NS,
    PATH_PROBE_ATTEMPTS, PATH_PROBE_DURATION_S, PATH_PROBE_MAX_INCOMPLETE_PCT,
    PATH_PROBE_MIN_SAMPLES,
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
        let path = dir.path.join("config.gz");
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
        let driver = dir.path.join("current_driver");
        fs::write(&driver, "haltpoll\n").unwrap();
        let states = dir.path.join("cpu0");
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

        let none = cpu_idle(&dir.path.join("nope"), &dir.path.join("nope2"));
        assert_eq!(none.value, CpuIdle::default());
        assert!(matches!(none.source, Source::Unavailable(_)));
    }

    #[test]
    fn cpufreq_absent_says_so() {
        let dir = TestDir::new("cpufreq");
        let absent = cpufreq(&dir.path.join("cpufreq"));
        assert_eq!(absent.value, None);
        assert!(absent.source.to_string().contains("no cpufreq"));
        let present = dir.path.join("cpufreq");
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

    #[test]
    fn missing_rt_app_says_which_package() {
        assert!(RtAppMissing.to_string().contains("Debian package `rt-app`"));
    }

    /// A fresh private directory, removed on drop.
    struct TestDir {
        path: PathBuf,
        _scratch: lull_os::fileout::ScratchDir,
    }

    impl TestDir {
        fn new(tag: &str) -> TestDir {
            let scratch =
                lull_os::fileout::ScratchDir::new(&format!("lull-machine-test-{tag}")).unwrap();
            TestDir {
                path: scratch.path().to_path_buf(),
                _scratch: scratch,
            }
        }
    }
}
