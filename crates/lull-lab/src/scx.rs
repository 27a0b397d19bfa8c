//! `lull lab sched`: Lull's sched_ext scheduler (lull-scx, `docs/scx.md`) against the kernel's
//! EEVDF and the field's sched_ext schedulers scx_lavd and scx_bpfland, in one run of the lab
//! guest (`docs/lab-vm.md`).
//!
//! Scenarios, each under every scheduler in turn (the same recordings and hogs):
//! - seed 003's painting: `lull live vtcfs`'s experiment with the stock daemon (no policy on
//!   the seam), the app driven by the replayed stylus, against 2 and then 10 CPU hogs;
//! - seed 001's file manager with ZIP and FTP behind it: `lull live ucsg`'s experiment with the
//!   stock daemon.
//!
//! While lull-scx is loaded the daemon feeds it its facts
//! ([`crate::live_stack::feed_if_loaded`]); the others get
//! none (they infer interactivity themselves). Figures per scheduler and scenario: the
//! interactive response (mean, p99), the hogs' throughput (painting) or ZIP's and FTP's
//! completion (file manager), and the scheduler process's own CPU time (all its threads, from
//! `/proc/PID/task/TID/schedstat`; the BPF callbacks run in the context of the tasks they schedule and are not
//! in it). Every figure is also given as a ratio to EEVDF's in the same run: under TCG the
//! guest's times are not the host's.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lull_os::bpf::sched_ext::{self, SchedExtState};
use lull_os::sys;
use lull_workload::Trace;
use serde::{Deserialize, Serialize};

use crate::ucsg_live::{self, Background, Foreground, Policy, UcsgLiveSpec};
use crate::vtcfs_live::{self, VtcfsLiveSpec, VtcfsPolicy};

mod report;
pub use report::{fill_ratios, summarise, SchedReport, SchedRow};

/// How long a scheduler may take to come up (TCG guests load BPF slowly: the verifier runs
/// translated; scx_lavd's load measured about 10 s there).
const LOAD_TIMEOUT: Duration = Duration::from_secs(60);
/// How often sched_ext's state is read while waiting for a scheduler to come up or go.
const STATE_POLL: Duration = Duration::from_millis(50);
/// The painting scenario's hog counts (seed 003 §VI-B-1 runs up to ten).
pub const PAINTING_HOGS: [u32; 2] = [2, 10];
/// How many times slower than recorded the stylus is replayed in the guest by default. Under
/// TCG the painting handler takes 55–62 ms of CPU per stroke (release build, `lull live vtcfs
/// --json`'s `handler_cpu_us_mean` in the lab guest) where the host takes about 1 ms
/// (`apps/painting.rs`); at the recording's own pace (a stroke every 19 ms on average over its
/// first 150 events) the app would need about three CPUs, so every scheduler only decides how
/// deep its backlog grows, and the response measures that backlog (docs/scx.md). Ten times
/// slower, a stroke every 190 ms asks about 0.3 of a CPU: as on the host and in seed 003, the
/// handler wakes for an input, works well under the interval and sleeps.
pub const DEFAULT_STRETCH: u32 = 10;
/// The most `--stretch` accepts.
pub const MAX_STRETCH: u32 = 100;
/// The most `--rounds` accepts (a round takes about 4 minutes under TCG).
pub const MAX_ROUNDS: u32 = 20;

/// One scheduler of the comparison.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheduler {
    Eevdf,
    LullScx,
    /// lull-scx with UCSG's sensitivity states and core allocation holding threads to CPUs
    /// (`lull-scx --ucsg`, docs/scx.md).
    LullScxUcsg,
    ScxLavd,
    ScxBpfland,
}

impl Scheduler {
    pub const ALL: [Scheduler; 5] = [
        Scheduler::Eevdf,
        Scheduler::LullScx,
        Scheduler::LullScxUcsg,
        Scheduler::ScxLavd,
        Scheduler::ScxBpfland,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Scheduler::Eevdf => "eevdf",
            Scheduler::LullScx => "lull-scx",
            Scheduler::LullScxUcsg => "lull-scx-ucsg",
            Scheduler::ScxLavd => "scx_lavd",
            Scheduler::ScxBpfland => "scx_bpfland",
        }
    }

    /// The program's file name (`None`: the kernel's own).
    #[must_use]
    pub fn program(self) -> Option<&'static str> {
        match self {
            Scheduler::Eevdf => None,
            Scheduler::LullScx | Scheduler::LullScxUcsg => Some("lull-scx"),
            Scheduler::ScxLavd => Some("scx_lavd"),
            Scheduler::ScxBpfland => Some("scx_bpfland"),
        }
    }

    /// Lull's own scheduler, in either configuration.
    #[must_use]
    pub fn is_lull_scx(self) -> bool {
        matches!(self, Scheduler::LullScx | Scheduler::LullScxUcsg)
    }

    /// The program's arguments beyond the counts file.
    #[must_use]
    pub fn args(self) -> &'static [&'static str] {
        match self {
            Scheduler::LullScxUcsg => &["--ucsg"],
            _ => &[],
        }
    }
}

/// Where `scripts/scx-schedulers.sh` installs scx_lavd and scx_bpfland:
/// `$LULL_CACHE_DIR/scx/bin`, else `$XDG_CACHE_HOME/lull/scx/bin`, else `~/.cache/lull/scx/bin`.
#[must_use]
pub fn comparison_bin_dir() -> Option<PathBuf> {
    let base = std::env::var_os("LULL_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("lull")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/lull")))?;
    Some(base.join("scx/bin"))
}

/// Finds a scheduler's program: lull-scx next to the running executable, the others in
/// [`comparison_bin_dir`] or on `PATH`.
///
/// # Errors
/// [`ProgramMissing`]: what is missing and how to build it.
pub fn find_program(s: Scheduler) -> Result<Option<PathBuf>, ProgramMissing> {
    let Some(name) = s.program() else {
        return Ok(None);
    };
    let mut candidates = Vec::new();
    if s.is_lull_scx() {
        if let Ok(exe) = std::env::current_exe() {
            candidates.push(exe.with_file_name(name));
        }
    } else if let Some(d) = comparison_bin_dir() {
        candidates.push(d.join(name));
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join(name)));
    }
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .map(Some)
        .ok_or(match s {
            Scheduler::LullScx | Scheduler::LullScxUcsg => ProgramMissing::LullScx,
            _ => ProgramMissing::Comparison(name),
        })
}

/// A scheduler's program that is not on this machine, with how to get it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProgramMissing {
    #[error(
        "lull-scx is not built: cargo build --release -p lull-scx (needs clang-19 and libelf-dev)"
    )]
    LullScx,
    #[error("{0} is not installed: scripts/scx-schedulers.sh builds it (cargo install, about 9 minutes; needs clang-19, libelf-dev and Rust >= 1.91)")]
    Comparison(&'static str),
}

/// Why a comparison could not run.
#[derive(Debug, thiserror::Error)]
pub enum SchedCompareError {
    #[error("{0}")]
    NotInGuest(String),
    #[error("sched_ext: {0}")]
    SchedExt(#[from] sched_ext::SchedExtError),
    #[error("{name}: {message}")]
    Scheduler { name: &'static str, message: String },
    // The painting's errors carry no prefix: each is reported beside its scenario's name.
    #[error(transparent)]
    Painting(#[from] vtcfs_live::VtcfsLiveError),
    #[error("--stretch {0} is outside 1..={MAX_STRETCH}")]
    BadStretch(u32),
    #[error("--rounds {0} is outside 1..={MAX_ROUNDS}")]
    BadRounds(u32),
    #[error(transparent)]
    Trace(#[from] lull_workload::TraceError),
    #[error("file manager: {0}")]
    FileManager(#[from] ucsg_live::UcsgLiveError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// What to run.
#[derive(Clone, Debug)]
pub struct SchedSpec {
    pub schedulers: Vec<Scheduler>,
    /// The stylus recording and how many of its events to replay.
    pub trace: Trace,
    pub events: Option<usize>,
    /// The replay runs this many times slower than recorded ([`DEFAULT_STRETCH`]).
    pub stretch: u32,
    /// The file manager's scale (`lull live ucsg --scale`).
    pub scale: f64,
    pub app_binary: PathBuf,
    /// Skip the file manager scenario.
    pub painting_only: bool,
    /// Rounds, each running every scheduler in turn (1..=[`MAX_ROUNDS`]). More than one puts
    /// the schedulers side by side in time, so a host whose load drifts moves them alike.
    pub rounds: u32,
}

/// The note every report carries.
pub const TCG_NOTE: &str = "times are the lab guest's (QEMU; under TCG 10-50x slower than the host, timers emulated): compare them only as ratios within this run";

fn wait_state(want: SchedExtState, timeout: Duration) -> Result<bool, SchedCompareError> {
    let start = Instant::now();
    loop {
        if sched_ext::state()? == want {
            return Ok(true);
        }
        if start.elapsed() > timeout {
            return Ok(false);
        }
        std::thread::sleep(STATE_POLL);
    }
}

/// A scheduler process, loaded.
struct Loaded {
    child: Child,
    name: &'static str,
}

/// CPU time of every thread of process `pid`, ms (`/proc/PID/task/TID/schedstat`, ns).
fn proc_cpu_ms(pid: u32) -> Option<f64> {
    let pid = i32::try_from(pid).ok()?;
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let ns: u64 = tasks
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|tid| lull_os::procfs::thread_cpu_use(pid, tid).map(|(ns, _)| ns))
        .sum();
    Some(ns as f64 / 1e6)
}

fn load(s: Scheduler, program: &Path, stats: &Path) -> Result<Loaded, SchedCompareError> {
    let name = s.name();
    let err = |message: String| SchedCompareError::Scheduler { name, message };
    if sched_ext::state()? != SchedExtState::Disabled {
        return Err(err(format!(
            "sched_ext is busy ({:?}) before loading",
            sched_ext::root_ops()?
        )));
    }
    let mut cmd = Command::new(program);
    if s.is_lull_scx() {
        cmd.arg("--stats-json").arg(stats);
    }
    cmd.args(s.args());
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| err(format!("{}: {e}", program.display())))?;
    // The scheduler's log goes on to ours, so a failure's reason is seen.
    if let Some(stderr) = child.stderr.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("  [{name}] {line}");
            }
        });
    }
    if !wait_state(SchedExtState::Enabled, LOAD_TIMEOUT)? {
        let _ = child.kill();
        let _ = child.wait();
        return Err(err(format!(
            "not enabled within {} s",
            LOAD_TIMEOUT.as_secs()
        )));
    }
    Ok(Loaded { child, name })
}

fn unload(mut l: Loaded) -> Result<(), SchedCompareError> {
    let name = l.name;
    sys::signal_process(l.child.id(), sys::SIGINT)?;
    let status = l.child.wait()?;
    if !wait_state(SchedExtState::Disabled, LOAD_TIMEOUT)? {
        return Err(SchedCompareError::Scheduler {
            name,
            message: "sched_ext still enabled after the scheduler exited".into(),
        });
    }
    if !status.success() {
        eprintln!("  [{name}] exited with {status}");
    }
    Ok(())
}

/// The recording's first `spec.events` events, replayed `spec.stretch` times slower.
fn painting_trace(spec: &SchedSpec) -> Result<Trace, SchedCompareError> {
    if !(1..=MAX_STRETCH).contains(&spec.stretch) {
        return Err(SchedCompareError::BadStretch(spec.stretch));
    }
    let mut t = spec.trace.clone();
    if let Some(n) = spec.events {
        if n < 2 {
            return Err(vtcfs_live::VtcfsLiveError::BadEvents(n).into());
        }
        t.events.truncate(n);
    }
    if spec.stretch == 1 {
        return Ok(t);
    }
    Ok(t.scaled_to(t.span_ns() * u64::from(spec.stretch))?)
}

fn painting_row(
    s: Scheduler,
    hogs: u32,
    spec: &SchedSpec,
    pid: Option<u32>,
) -> Result<SchedRow, SchedCompareError> {
    let live = VtcfsLiveSpec::new(
        hogs,
        vec![VtcfsPolicy::Stock],
        None,
        None,
        painting_trace(spec)?,
        spec.app_binary.clone(),
    )?;
    let cpu0 = pid.and_then(proc_cpu_ms);
    let r =
        vtcfs_live::run(&live)?
            .into_iter()
            .next()
            .ok_or_else(|| SchedCompareError::Scheduler {
                name: s.name(),
                message: "the painting run returned no report".into(),
            })?;
    let cpu1 = pid.and_then(proc_cpu_ms);
    Ok(SchedRow {
        response_mean_us: r.response_us.mean,
        response_p99_us: r.response_us.p99,
        events: Some(r.events),
        responses: Some(r.responses),
        response_all_p99_us: r.response_all_us.p99,
        hog_throughput: Some(r.hog_throughput),
        hog_cpu_share: Some(r.hog_cpu_share),
        drawing_cpu_ms: r
            .handler_cpu_us_mean
            .map(|us| us * r.responses as f64 / 1_000.0),
        scheduler_cpu_ms: cpu0.zip(cpu1).map(|(a, b)| b - a),
        ..SchedRow::new(s, format!("painting-{hogs}-hogs"))
    })
}

fn file_manager_row(
    s: Scheduler,
    spec: &SchedSpec,
    pid: Option<u32>,
) -> Result<SchedRow, SchedCompareError> {
    let live = UcsgLiveSpec {
        foreground: Foreground::FileManager,
        background: Background::ZipFtp,
        policy: Policy::Stock,
        scale: spec.scale,
        app_binary: spec.app_binary.clone(),
    };
    let cpu0 = pid.and_then(proc_cpu_ms);
    let r = ucsg_live::run(&live)?;
    let cpu1 = pid.and_then(proc_cpu_ms);
    let us = |ms: f64| ms * 1_000.0;
    Ok(SchedRow {
        response_mean_us: r.response_ms.map(|m| us(m.mean)),
        response_p99_us: r.response_ms.map(|m| us(m.p99)),
        zip_s: r.completion_s.zip,
        ftp_s: r.completion_s.ftp,
        scheduler_cpu_ms: cpu0.zip(cpu1).map(|(a, b)| b - a),
        ..SchedRow::new(s, "filemanager-zip-ftp".into())
    })
}

/// Runs every scheduler of `spec` over every scenario; a scheduler that is not built, or that
/// fails to load, is skipped with its reason and the rest go on.
///
/// # Errors
/// Outside the lab guest (`LULL_GUEST` unset: the host's kernel may lack sched_ext and the
/// comparison needs root on a machine of its own); a scheduler that does not unload (the
/// kernel's state would taint every later figure).
pub fn run(spec: &SchedSpec) -> Result<SchedReport, SchedCompareError> {
    if std::env::var_os("LULL_GUEST").is_none() {
        return Err(SchedCompareError::NotInGuest(
            "lull lab sched runs inside the lab guest: lull lab vm -- lull lab sched".into(),
        ));
    }
    if !(1..=MAX_ROUNDS).contains(&spec.rounds) {
        return Err(SchedCompareError::BadRounds(spec.rounds));
    }
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    // A private directory for lull-scx's statistics file (run as root: no predictable name in
    // the shared temporary directory), removed when the comparison ends.
    let scratch = lull_os::fileout::ScratchDir::new("lull-scx-stats")?;
    let stats = scratch.path().join("stats.json");
    let mut skipped = Vec::new();
    let mut programs = Vec::new();
    for &s in &spec.schedulers {
        match find_program(s) {
            Ok(p) => programs.push((s, p)),
            Err(why) => {
                eprintln!("lull lab sched: skipping {}: {why}", s.name());
                skipped.push((s, why.to_string()));
            }
        }
    }
    let mut per_round = Vec::new();
    let mut failed = Vec::new();
    let mut lull_scx_stats = Vec::new();
    for round in 1..=spec.rounds {
        if spec.rounds > 1 {
            eprintln!("lull lab sched: round {round} of {}", spec.rounds);
        }
        let mut rows = Vec::new();
        for (s, program) in &programs {
            let s = *s;
            let loaded = match program {
                None => None,
                Some(p) => match load(s, p, &stats) {
                    Ok(l) => Some(l),
                    Err(e) => {
                        eprintln!(
                            "lull lab sched: skipping {} in round {round}: {e}",
                            s.name()
                        );
                        skipped.push((s, format!("round {round}: {e}")));
                        continue;
                    }
                },
            };
            eprintln!("lull lab sched: {} loaded", s.name());
            let pid = loaded.as_ref().map(|l| l.child.id());
            let mut scenarios: Vec<(String, Result<SchedRow, SchedCompareError>)> = PAINTING_HOGS
                .iter()
                .map(|&hogs| {
                    (
                        format!("painting-{hogs}-hogs"),
                        painting_row(s, hogs, spec, pid),
                    )
                })
                .collect();
            if !spec.painting_only {
                scenarios.push(("filemanager-zip-ftp".into(), file_manager_row(s, spec, pid)));
            }
            if let Some(l) = loaded {
                unload(l)?;
                // lull-scx writes its counts as it exits.
                if s.is_lull_scx() {
                    if let Some(v) = std::fs::read_to_string(&stats)
                        .ok()
                        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                    {
                        lull_scx_stats.push(serde_json::json!({
                            "scheduler": s.name(),
                            "round": round,
                            "counts": v,
                        }));
                    }
                    let _ = std::fs::remove_file(&stats);
                }
            }
            for (scenario, r) in scenarios {
                match r {
                    Ok(row) => rows.push(row),
                    Err(e) => {
                        eprintln!("lull lab sched: {} {scenario} failed: {e}", s.name());
                        failed.push((s, scenario, e.to_string()));
                    }
                }
            }
        }
        fill_ratios(&mut rows);
        per_round.push(rows);
    }
    Ok(SchedReport {
        kernel,
        cpus,
        rows: summarise(&per_round),
        per_round,
        skipped,
        failed,
        lull_scx_stats,
        note: TCG_NOTE.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_painting_replay_is_cut_then_stretched() {
        let mut spec = SchedSpec {
            schedulers: vec![Scheduler::Eevdf],
            trace: lull_workload::spiral::stylus_spiral(),
            events: Some(10),
            stretch: 10,
            scale: 0.1,
            app_binary: PathBuf::from("/nonexistent"),
            painting_only: true,
            rounds: 1,
        };
        let mut cut = spec.trace.clone();
        cut.events.truncate(10);
        let t = painting_trace(&spec).unwrap();
        assert_eq!(t.events.len(), 10);
        assert_eq!(t.span_ns(), cut.span_ns() * 10);
        spec.stretch = 1;
        assert_eq!(painting_trace(&spec).unwrap(), cut);
        spec.stretch = 0;
        assert!(matches!(
            painting_trace(&spec),
            Err(SchedCompareError::BadStretch(0))
        ));
    }

    #[test]
    fn outside_the_guest_it_says_where_to_run() {
        if std::env::var_os("LULL_GUEST").is_some() {
            return;
        }
        let spec = SchedSpec {
            schedulers: Scheduler::ALL.to_vec(),
            trace: lull_workload::spiral::stylus_spiral(),
            events: Some(10),
            stretch: DEFAULT_STRETCH,
            scale: 0.1,
            app_binary: PathBuf::from("/nonexistent"),
            painting_only: true,
            rounds: 1,
        };
        let e = run(&spec).unwrap_err();
        assert!(
            e.to_string().contains("lull lab vm -- lull lab sched"),
            "{e}"
        );
    }
}
