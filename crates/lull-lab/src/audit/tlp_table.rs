//! Seed 004's Table 1.1 on this machine: the thread-level parallelism of real programs, measured
//! with the live recorder (tracefs), and of every modelled app, from the simulator's audit log.
//!
//! **Scope.** Table 1.1 is the TLP of the whole device while one app runs ("the Android system
//! including UI daemons, frameworks and kernel itself" for the idle row), so `tlp` here is
//! machine-wide: every logged task counts. The recorder's own process and kernel workers are
//! counted-not-logged, so they leave a CPU idle, as seed 004 ignores "the trace or our logging
//! code". `own_tlp` is the program's own: only the tasks of its process tree, followed from its
//! start through the process events connector ([`tree`]).
//!
//! Each program gets its own recording, from just before it starts until it exits; the analysis
//! takes the records between its start and its exit ([`row_of`]).
//!
//! - [`programs`]: the programs and their generated inputs;
//! - [`tree`]: a program's process tree;
//! - [`sim`]: the TLP of modelled apps.

pub mod programs;
pub mod sim;
pub mod tree;

use std::collections::{BTreeMap, HashSet};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lull_audit::tlp::{self, TaskFilter, TlpReport, DEFAULT_WINDOW_NS};
use lull_audit::AuditRecord;
use lull_os::proc_connector::ProcConnector;
use lull_os::sys::monotonic_ns;
use serde::Serialize;

use super::recorder::{Extraction, Recorder, RecorderConfig};
use super::AuditError;
use programs::{Program, Setup};
use tree::ProcessTree;

/// One row of seed 004's Table 1.1 (TLP on a 4 big + 4 LITTLE Odroid running Android).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SeedRow {
    pub category: &'static str,
    pub application: &'static str,
    pub tlp: f64,
}

/// Seed 004 Table 1.1 (the last row is the seed's "Daily Usage" average).
pub const SEED_TABLE_1_1: [SeedRow; 10] = [
    SeedRow {
        category: "System",
        application: "None",
        tlp: 1.02,
    },
    SeedRow {
        category: "Web Browser",
        application: "Chrome",
        tlp: 2.29,
    },
    SeedRow {
        category: "Video Player",
        application: "Netflix",
        tlp: 1.12,
    },
    SeedRow {
        category: "Music Player",
        application: "Spotify",
        tlp: 1.14,
    },
    SeedRow {
        category: "Communication",
        application: "Telegram",
        tlp: 1.12,
    },
    SeedRow {
        category: "Game",
        application: "Angry Birds",
        tlp: 1.15,
    },
    SeedRow {
        category: "Social Network",
        application: "Facebook",
        tlp: 1.42,
    },
    SeedRow {
        category: "Navigation",
        application: "Google Maps",
        tlp: 1.35,
    },
    SeedRow {
        category: "Email",
        application: "Gmail",
        tlp: 1.12,
    },
    SeedRow {
        category: "Daily Usage",
        application: "Average",
        tlp: 1.26,
    },
];
/// CPUs of the seed's device (Odroid-XU3: four Cortex-A15 and four Cortex-A7, all online).
pub const SEED_CPUS: u16 = 8;

/// Default length of the idle recording and of the rt-app workload, s.
pub const DEFAULT_SECONDS: u64 = 5;
/// Longest a program may run, beyond `--seconds`, before it is killed (its row then says so):
/// ten times the few seconds each is sized for, so only a hung program reaches it.
pub const PROGRAM_TIMEOUT: Duration = Duration::from_secs(60);
/// The recorder extracts as soon as a CPU's kernel buffer holds data ([`Extraction::Poll`]):
/// hackbench switches hundreds of thousands of times a second, and a fixed quarter-second
/// extraction overran the 35,000-entry rings with it (75,000 records lost in one run here).
pub const EXTRACTION: Extraction = Extraction::Poll;
/// Entries per CPU ring: one read can bring a whole kernel buffer (~60,000 events of 4 MB), more
/// than the default 35,000 entries (seed 002's), which the rings then overwrote under hackbench.
/// 262,144 entries hold a full [`KERNEL_BUFFER_KB`] buffer's events.
pub const RING_ENTRIES: usize = 1 << 18;
/// Kernel buffer per CPU, KB: four times the recorder's default, so a burst of hackbench
/// switches while the extraction thread waits for a CPU fits.
pub const KERNEL_BUFFER_KB: u32 = 16 * 1024;
/// Longest wait for process events (or the program's exit) between checks.
const WAIT_POLL_MS: u32 = 20;

/// How a row ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    /// Recorded and analysed.
    Measured,
    /// Recorded and analysed, but the program failed (its exit code, a timeout): `reason` says.
    Failed,
    /// Not run: `reason` says why (a program missing here).
    Skipped,
}

/// One program's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProgramRow {
    pub name: String,
    pub command: String,
    pub status: RowStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// From the program's start to its exit (the idle row: the recording's length), s.
    pub seconds: f64,
    /// Machine-wide TLP while the program ran.
    pub tlp: Option<f64>,
    /// Share of the busy time with exactly i CPUs busy, keyed "1", "2", … (figure 1.3).
    pub busy_cpus_fraction: BTreeMap<String, f64>,
    /// C₀: the fraction of the time no CPU ran a logged task.
    pub idle_fraction: Option<f64>,
    /// TLP of the program's own tasks (its process tree); `None` for the idle system or when
    /// none of them ran.
    pub own_tlp: Option<f64>,
    pub own_busy_cpus_fraction: BTreeMap<String, f64>,
    /// Tasks (threads and processes) of the program's tree.
    pub own_tasks: usize,
    /// Events the machine-wide analysis inferred missing and reconciled (seed 004).
    pub dropped_events: u64,
    /// Records missing by sequence number (kernel buffer overrun, ring overwrite).
    pub lost_records: u64,
    /// Of the lost records: events the kernel dropped (its buffer was full), and records the
    /// user-space rings overwrote before extraction.
    pub kernel_lost: u64,
    pub overwritten: u64,
    /// Records outside the program's run, left out of the analysis.
    pub records_outside: u64,
    /// Times the process events connector lost events (the tree may miss tasks).
    pub connector_overruns: u64,
    pub exit_code: Option<i32>,
}

impl ProgramRow {
    /// A row for a program that was not run.
    #[must_use]
    pub fn skipped(p: &Program, reason: String) -> ProgramRow {
        ProgramRow {
            name: p.name.to_owned(),
            command: p.command_line(),
            status: RowStatus::Skipped,
            reason: Some(reason),
            seconds: 0.0,
            tlp: None,
            busy_cpus_fraction: BTreeMap::new(),
            idle_fraction: None,
            own_tlp: None,
            own_busy_cpus_fraction: BTreeMap::new(),
            own_tasks: 0,
            dropped_events: 0,
            lost_records: 0,
            kernel_lost: 0,
            overwritten: 0,
            records_outside: 0,
            connector_overruns: 0,
            exit_code: None,
        }
    }
}

/// The live table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TlpTable {
    /// Live figures, measured on this machine (not modelled).
    pub modelled: bool,
    pub cpus: u16,
    pub programs: Vec<ProgramRow>,
    /// The seed's Table 1.1, for comparison.
    pub seed_table_1_1: Vec<SeedRow>,
    pub seed_cpus: u16,
    /// Geometric mean of the measured rows' machine-wide TLP (the seed's "average" is the
    /// geometric mean of its nine rows, the idle system included); `None` without any.
    pub geomean_tlp: Option<f64>,
    /// Wall time of the whole table, s.
    pub total_s: f64,
}

/// The geometric mean of the TLP of the rows that have one.
#[must_use]
pub fn geomean_tlp(rows: &[ProgramRow]) -> Option<f64> {
    let tlps: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.tlp)
        .filter(|t| *t > 0.0)
        .collect();
    (!tlps.is_empty()).then(|| (tlps.iter().map(|t| t.ln()).sum::<f64>() / tlps.len() as f64).exp())
}

/// What one program's run produced, for [`row_of`].
#[derive(Debug, Clone)]
pub struct RunRecord<'a> {
    pub records: &'a [AuditRecord],
    pub cpus: u16,
    pub lost_records: u64,
    /// The program's run, monotonic ns (the recorder's trace clock).
    pub start_ns: u64,
    pub end_ns: u64,
    /// The program's tasks; `None` for the idle system.
    pub own_tids: Option<&'a HashSet<u32>>,
}

/// Assembles a measured row from one run's records (pure): machine-wide TLP over the records
/// within the run, and the own TLP over the program's tasks.
#[must_use]
pub fn row_of(p: &Program, run: &RunRecord<'_>) -> ProgramRow {
    let inside: Vec<AuditRecord> = run
        .records
        .iter()
        .filter(|r| (run.start_ns..=run.end_ns).contains(&r.ts_ns))
        .copied()
        .collect();
    let outside = (run.records.len() - inside.len()) as u64;
    let machine = tlp::analyze(
        &inside,
        run.cpus,
        &TaskFilter::all(),
        DEFAULT_WINDOW_NS,
        run.lost_records,
    );
    let own: Option<TlpReport> = run.own_tids.map(|tids| {
        let f = TaskFilter {
            tids: tids.clone(),
            ..TaskFilter::default()
        };
        tlp::analyze(&inside, run.cpus, &f, DEFAULT_WINDOW_NS, run.lost_records)
    });
    ProgramRow {
        name: p.name.to_owned(),
        command: p.command_line(),
        status: RowStatus::Measured,
        reason: None,
        seconds: run.end_ns.saturating_sub(run.start_ns) as f64 / 1e9,
        tlp: machine.tlp,
        busy_cpus_fraction: machine.busy_share(),
        idle_fraction: machine.busy_cpus_fraction.get("0").copied(),
        own_tlp: own.as_ref().and_then(|o| o.tlp),
        own_busy_cpus_fraction: own.as_ref().map(TlpReport::busy_share).unwrap_or_default(),
        own_tasks: run.own_tids.map_or(0, HashSet::len),
        dropped_events: machine.dropped_events,
        lost_records: machine.lost_records,
        kernel_lost: 0,
        overwritten: 0,
        records_outside: outside,
        connector_overruns: 0,
        exit_code: None,
    }
}

/// Settings of the live table.
#[derive(Debug, Clone)]
pub struct TableConfig {
    /// Length of the idle recording and of the rt-app workload, s.
    pub seconds: u64,
    /// Programs to run, by [`programs::PROGRAM_NAMES`] name; empty = all.
    pub only: Vec<String>,
    /// The `lull` executable (for the tracking app's experiment).
    pub lull: Option<PathBuf>,
    pub timeout: Duration,
}

impl Default for TableConfig {
    fn default() -> Self {
        TableConfig {
            seconds: DEFAULT_SECONDS,
            only: Vec::new(),
            lull: None,
            timeout: PROGRAM_TIMEOUT,
        }
    }
}

/// How a started program ended.
struct Ended {
    start_ns: u64,
    end_ns: u64,
    exit_code: Option<i32>,
    failure: Option<String>,
}

/// Starts `p` (in its own process group, in `dir`) and waits for it, following its tree.
fn run_command(
    p: &Program,
    dir: &Path,
    timeout: Duration,
    conn: &mut ProcConnector,
    tree_out: &mut Option<ProcessTree>,
) -> Result<Ended, AuditError> {
    let mut cmd = Command::new(&p.argv[0]);
    cmd.args(&p.argv[1..])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .process_group(0);
    // Its error output goes to a file, whose last line explains a failure.
    let err_path = dir.join(format!("{}.stderr", p.name));
    match std::fs::File::create(&err_path) {
        Ok(f) => cmd.stderr(f),
        Err(_) => cmd.stderr(Stdio::null()),
    };
    // Events from before the start are not the program's.
    conn.drain(|_| {})
        .map_err(|e| AuditError::Experiment(e.to_string()))?;
    let start_ns = monotonic_ns();
    let started = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Ok(Ended {
                start_ns,
                end_ns: monotonic_ns(),
                exit_code: None,
                failure: Some(format!("cannot start {}: {e}", p.argv[0])),
            })
        }
    };
    let mut tree = ProcessTree::new(child.id());
    let mut failure = None;
    // Ends the whole process group: the program and whatever it started.
    let kill_group = |child: &mut std::process::Child| {
        let _ = lull_os::sys::signal_process_group(child.id(), lull_os::sys::SIGKILL);
        child.wait().ok()
    };
    let status = loop {
        let _ = lull_os::sys::poll_readable(&[conn.raw()], Some(WAIT_POLL_MS), &mut [false]);
        if let Err(e) = conn.drain(|ev| tree.on_event(ev)) {
            kill_group(&mut child);
            return Err(AuditError::Experiment(e.to_string()));
        }
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(e) => {
                kill_group(&mut child);
                return Err(AuditError::Child(e));
            }
        }
        if started.elapsed() > timeout {
            failure = Some(format!(
                "timed out after {} s and was killed",
                timeout.as_secs()
            ));
            break kill_group(&mut child);
        }
    };
    let end_ns = monotonic_ns();
    conn.drain(|ev| tree.on_event(ev))
        .map_err(|e| AuditError::Experiment(e.to_string()))?;
    *tree_out = Some(tree);
    let exit_code = status.and_then(|s| s.code());
    if failure.is_none() {
        match status {
            Some(s) if s.success() => {}
            Some(s) => {
                let last = std::fs::read_to_string(&err_path).ok().and_then(|t| {
                    t.lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .map(str::to_owned)
                });
                failure = Some(match last {
                    Some(l) => format!("exited with {s}: {l}"),
                    None => format!("exited with {s}"),
                });
            }
            None => failure = Some("its exit status was lost".to_owned()),
        }
    }
    Ok(Ended {
        start_ns,
        end_ns,
        exit_code,
        failure,
    })
}

/// Records and analyses one program, run in `dir` (root: tracefs and the process events
/// connector). A program that fails or times out is a [`RowStatus::Failed`] row.
///
/// # Errors
/// The recorder or the connector cannot run; the program cannot be waited for.
pub fn measure(p: &Program, dir: &Path, cfg: &TableConfig) -> Result<ProgramRow, AuditError> {
    let mut conn = if p.argv.is_empty() {
        None
    } else {
        Some(ProcConnector::open().map_err(|e| AuditError::Experiment(e.to_string()))?)
    };
    let rc = RecorderConfig {
        extraction: EXTRACTION,
        ring_entries: RING_ENTRIES,
        kernel_buffer_kb: KERNEL_BUFFER_KB,
        ..RecorderConfig::default()
    };
    let rec = Recorder::start(rc, Vec::new())?;
    let mut tree = None;
    let ended = match conn.as_mut() {
        None => {
            let start_ns = monotonic_ns();
            // The idle system: nothing is started; the recording is the measurement.
            std::thread::sleep(Duration::from_secs(p.idle_s));
            Ok(Ended {
                start_ns,
                end_ns: monotonic_ns(),
                exit_code: None,
                failure: None,
            })
        }
        // The rt-app workload lasts `seconds`: the limit is beyond it.
        Some(c) => run_command(
            p,
            dir,
            cfg.timeout + Duration::from_secs(cfg.seconds),
            c,
            &mut tree,
        ),
    };
    let (bytes, summary) = rec.stop()?;
    let ended = ended?;
    let log = lull_audit::log::decode(&bytes)?;
    let lost = lull_audit::log::stats(&log).gap_records;
    let mut row = row_of(
        p,
        &RunRecord {
            records: &log.records,
            cpus: log.header.rings,
            lost_records: lost,
            start_ns: ended.start_ns,
            end_ns: ended.end_ns,
            own_tids: tree.as_ref().map(ProcessTree::tids),
        },
    );
    row.exit_code = ended.exit_code;
    row.kernel_lost = summary.kernel_lost;
    row.overwritten = summary.overwritten;
    row.connector_overruns = conn.map_or(0, |c| c.counters().overruns);
    if let Some(why) = ended.failure {
        row.status = RowStatus::Failed;
        row.reason = Some(why);
    }
    Ok(row)
}

/// Runs the live table (root; tracefs; the process events connector). `progress` gets a line
/// per program.
///
/// # Errors
/// The recorder or the connector cannot run; an unknown name in `cfg.only`; the scratch
/// directory cannot be written. A program missing here is a skipped row, not an error.
pub fn run_table(
    cfg: &TableConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<TlpTable, AuditError> {
    lull_os::tracefs::available()?;
    if let Some(bad) = cfg
        .only
        .iter()
        .find(|n| !programs::PROGRAM_NAMES.contains(&n.as_str()))
    {
        return Err(AuditError::Experiment(format!(
            "unknown program {bad:?}: expected one of {}",
            programs::PROGRAM_NAMES.join(", ")
        )));
    }
    let cpus = lull_os::tracefs::tracefs_root()
        .map(|r| lull_os::tracefs::cpu_count(&r))
        .unwrap_or(1);
    // Private scratch space, removed with everything in it on every return.
    let scratch = lull_os::fileout::ScratchDir::new("lull-tlp-table").map_err(AuditError::Write)?;
    let dir = scratch.path().to_owned();
    let started = Instant::now();
    let setup = Setup {
        dir: &dir,
        cpus,
        seconds: cfg.seconds,
        lull: cfg.lull.as_deref(),
    };
    let mut rows = Vec::new();
    let mut result = Ok(());
    for name in programs::PROGRAM_NAMES {
        if !cfg.only.is_empty() && !cfg.only.iter().any(|n| n == name) {
            continue;
        }
        let p = match programs::prepare(name, &setup) {
            Ok(p) => p,
            Err(e) => {
                result = Err(AuditError::Write(e));
                break;
            }
        };
        if let Some(why) = programs::missing(&p) {
            progress(&format!("{name}: skipped: {why}"));
            rows.push(ProgramRow::skipped(&p, why));
            continue;
        }
        progress(&format!("{name}: {}", p.command_line()));
        match measure(&p, &dir, cfg) {
            Ok(row) => {
                progress(&format!(
                    "{name}: {:.1} s, TLP {}, own TLP {}{}",
                    row.seconds,
                    row.tlp.map_or("-".into(), |t| format!("{t:.2}")),
                    row.own_tlp.map_or("-".into(), |t| format!("{t:.2}")),
                    row.reason
                        .as_ref()
                        .map_or(String::new(), |r| format!(" ({r})"))
                ));
                rows.push(row);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    drop(scratch);
    result?;
    Ok(TlpTable {
        modelled: false,
        cpus: cpus as u16,
        geomean_tlp: geomean_tlp(&rows),
        programs: rows,
        seed_table_1_1: SEED_TABLE_1_1.to_vec(),
        seed_cpus: SEED_CPUS,
        total_s: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests;
