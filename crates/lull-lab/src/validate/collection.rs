//! Live runs kept apart from their analysis: [`collect`] probes this machine and runs the
//! workloads live (what needs the machine, and a quiet one), [`analyse`] runs the simulator on
//! the collected machine facts and compares (what needs neither). A [`Collection`] saves to a
//! directory and loads back (`lull validate kernel --save-live DIR`, `--live-from DIR`,
//! docs/validation.md), so the model can be worked on against the same live figures, and
//! anyone can reproduce a comparison from them.
//!
//! The directory holds `machine.json` (the probe's text and [`MachineFacts`], the load averages
//! at the start and the end) and one `<workload>.live.json` per workload: the workload's text
//! as it ran, and every live run's per-thread [`Figures`] with the load average before it.

use std::fs;
use std::path::{Path, PathBuf};

use lull_workload::rtapp::RtApp;
use serde::{Deserialize, Serialize};

use super::compare::{
    combine_figures, fits, simulate, workload_name, SimProfile, ValidateError, WorkloadComparison,
};
use super::figures::Figures;
use super::live::{run_live, LiveOptions};
use super::machine::{probe, Machine, MachineFacts};

/// The version of the saved layout; a directory of another version is refused.
pub const FORMAT: u32 = 1;
/// The machine's file in a saved collection.
pub const MACHINE_FILE: &str = "machine.json";
/// The ending of each workload's file in a saved collection.
pub const LIVE_SUFFIX: &str = ".live.json";
/// Where Linux gives the load averages.
const LOADAVG: &str = "/proc/loadavg";

/// One live run of a workload: its round, the 1-minute load average just before it (what else
/// ran: a figure taken beside other load measures the load) and each thread's figures.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct CollectedRun {
    /// 1-based: the live runs go in rounds over every workload.
    pub round: u32,
    pub load_1min: Option<f64>,
    pub threads: Vec<CollectedThread>,
}

/// One thread's figures of a live run.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct CollectedThread {
    pub name: String,
    #[serde(flatten)]
    pub figures: Figures,
}

/// A live run that failed, and why.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct FailedRun {
    pub round: u32,
    pub error: String,
}

/// A workload's live runs.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct LiveWorkload {
    pub name: String,
    /// The file it was read from, as given.
    pub file: PathBuf,
    /// The workload's text as it ran: the simulator runs this, not the file as it is now.
    pub rtapp: String,
    pub duration_s: u32,
    pub runs: Vec<CollectedRun>,
    pub failed_runs: Vec<FailedRun>,
}

/// The machine a collection was made on.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct CollectedMachine {
    pub format: u32,
    /// The probe's description (`Machine`'s display).
    pub text: String,
    pub facts: MachineFacts,
    /// `/proc/loadavg` when the collection started and when it ended.
    pub loadavg_start: Option<String>,
    pub loadavg_end: Option<String>,
    /// Seconds since the Unix epoch when the collection started.
    pub started_unix_s: u64,
}

/// A probe of this machine and every workload's live runs.
#[derive(Clone, PartialEq, Debug)]
pub struct Collection {
    pub machine: CollectedMachine,
    pub workloads: Vec<LiveWorkload>,
}

/// Why a collection could not be saved or loaded.
#[derive(Debug, thiserror::Error)]
pub enum CollectionError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A saved file that cannot be read, is not a regular file, or is too large to be one.
    #[error(transparent)]
    Read(#[from] lull_os::input_file::ReadError),
    #[error("{path}: {reason}")]
    Malformed { path: PathBuf, reason: String },
    #[error("{0}: no {MACHINE_FILE}: not a saved collection of live runs")]
    NoMachine(PathBuf),
    #[error("{0}: no *{LIVE_SUFFIX}: no workload was saved")]
    NoWorkload(PathBuf),
    #[error("round {round} is not among the saved ones ({have})")]
    NoSuchRound { round: u32, have: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CollectionError + '_ {
    move |source| CollectionError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The text of `/proc/loadavg`, trimmed.
#[must_use]
pub fn loadavg() -> Option<String> {
    fs::read_to_string(LOADAVG)
        .ok()
        .map(|s| s.trim().to_owned())
}

/// The 1-minute load average of a `/proc/loadavg` text.
#[must_use]
pub fn load_1min(loadavg: &str) -> Option<f64> {
    loadavg.split_whitespace().next()?.parse().ok()
}

/// Reads and parses the rt-app workloads of `paths`, keeping each text.
///
/// # Errors
/// [`ValidateError::Workload`] for an unreadable or unsupported file.
pub fn read_workloads(paths: &[PathBuf]) -> Result<Vec<(PathBuf, String, RtApp)>, ValidateError> {
    paths
        .iter()
        .map(|p| {
            let bad = |reason: String| ValidateError::Workload {
                path: p.display().to_string(),
                reason,
            };
            let text = lull_os::input_file::read_bounded_text(p, lull_os::input_file::RTAPP_JSON)
                .map_err(|e| bad(e.to_string()))?;
            let w = lull_workload::rtapp::parse(&text).map_err(|e| bad(e.to_string()))?;
            Ok((p.clone(), text, w))
        })
        .collect()
}

/// Probes this machine and runs every workload of `paths` `runs` times live, telling
/// `progress` what it starts. The live runs go in rounds (every workload once, then again), so
/// that a disturbance of the machine lasting a while lands on one run of many workloads rather
/// than on every run of one. A failed run is left out and noted. `check` sees the probed
/// machine and the workloads before any live run (the caller's chance to refuse early).
///
/// # Errors
/// An unreadable or unsupported workload, rt-app missing, `check`'s error, or a workload whose
/// every run failed.
pub fn collect(
    paths: &[PathBuf],
    runs: u32,
    check: impl FnOnce(&Machine, &[(PathBuf, String, RtApp)]) -> Result<(), ValidateError>,
    mut progress: impl FnMut(&str),
) -> Result<(Machine, Collection), ValidateError> {
    let runs = runs.max(1);
    let workloads = read_workloads(paths)?;
    let loadavg_start = loadavg();
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    progress("probing this machine (about 3 s of rt-app)");
    let machine = probe();
    let rt_app = machine
        .rt_app
        .clone()
        .map_err(|e| ValidateError::Machine(e.to_string()))?;
    check(&machine, &workloads)?;
    let opts = LiveOptions {
        rt_app: Some(rt_app),
        ..LiveOptions::default()
    };
    let mut live: Vec<LiveWorkload> = workloads
        .iter()
        .map(|(path, text, w)| LiveWorkload {
            name: workload_name(path),
            file: path.clone(),
            rtapp: text.clone(),
            duration_s: w.duration_s.unwrap_or(0),
            runs: Vec::new(),
            failed_runs: Vec::new(),
        })
        .collect();
    for round in 1..=runs {
        for (i, (path, _, w)) in workloads.iter().enumerate() {
            progress(&format!(
                "run {round}/{runs}, [{}/{}] {} ({} s live)",
                i + 1,
                workloads.len(),
                path.display(),
                w.duration_s.map_or_else(|| "-".into(), |d| d.to_string())
            ));
            let load = loadavg().as_deref().and_then(load_1min);
            match run_live(w, &opts) {
                Ok(r) => {
                    live[i].duration_s = r.duration_s;
                    live[i].runs.push(CollectedRun {
                        round,
                        load_1min: load,
                        threads: r
                            .figures()
                            .into_iter()
                            .map(|(name, figures)| CollectedThread { name, figures })
                            .collect(),
                    });
                }
                // One failed run (on a loaded machine rt-app may overrun its exit grace) is
                // left out and counted; a workload with no run at all fails below.
                Err(e) => {
                    progress(&format!("run {round} failed, left out: {e}"));
                    live[i].failed_runs.push(FailedRun {
                        round,
                        error: e.to_string(),
                    });
                }
            }
        }
    }
    if let Some(w) = live.iter().find(|w| w.runs.is_empty()) {
        return Err(ValidateError::Workload {
            path: w.file.display().to_string(),
            reason: format!(
                "every live run failed: {}",
                w.failed_runs
                    .iter()
                    .map(|f| f.error.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        });
    }
    let collection = Collection {
        machine: CollectedMachine {
            format: FORMAT,
            text: machine.to_string(),
            facts: machine.facts(),
            loadavg_start,
            loadavg_end: loadavg(),
            started_unix_s,
        },
        workloads: live,
    };
    Ok((machine, collection))
}

/// Runs every workload of `c` in the simulator (seed `seed`) on the profile of `c`'s machine
/// facts, and compares with its live runs.
///
/// # Errors
/// The facts make no profile, a workload does not fit it, or threads do not match.
pub fn analyse(
    c: &Collection,
    seed: u64,
) -> Result<(SimProfile, Vec<WorkloadComparison>), ValidateError> {
    let profile = SimProfile::of_facts(&c.machine.facts)?;
    let mut out = Vec::new();
    for w in &c.workloads {
        let rtapp = lull_workload::rtapp::parse(&w.rtapp).map_err(|e| ValidateError::Workload {
            path: w.file.display().to_string(),
            reason: e.to_string(),
        })?;
        let sim = simulate(&w.name, &rtapp, &profile, seed)?;
        let runs: Vec<Vec<(String, Figures)>> = w
            .runs
            .iter()
            .map(|r| {
                r.threads
                    .iter()
                    .map(|t| (t.name.clone(), t.figures))
                    .collect()
            })
            .collect();
        let mut cmp = combine_figures(&w.file, w.duration_s, &runs, &sim)?;
        cmp.failed_runs = w
            .failed_runs
            .iter()
            .map(|f| format!("round {}: {}", f.round, f.error))
            .collect();
        out.push(cmp);
    }
    Ok((profile, out))
}

impl Collection {
    /// Writes the collection into `dir` (created if absent): [`MACHINE_FILE`] and one
    /// `<workload>`[`LIVE_SUFFIX`] per workload.
    ///
    /// # Errors
    /// A file cannot be written.
    pub fn save(&self, dir: &Path) -> Result<(), CollectionError> {
        fs::create_dir_all(dir).map_err(io(dir))?;
        let write = |name: String, json: String| {
            let path = dir.join(name);
            fs::write(&path, json + "\n").map_err(io(&path))
        };
        write(
            MACHINE_FILE.into(),
            serde_json::to_string_pretty(&self.machine).expect("serialises"),
        )?;
        for w in &self.workloads {
            write(
                format!("{}{LIVE_SUFFIX}", w.name),
                serde_json::to_string_pretty(w).expect("serialises"),
            )?;
        }
        Ok(())
    }

    /// Reads a collection [`Collection::save`] wrote, workloads in file-name order.
    ///
    /// # Errors
    /// The directory is not a saved collection, a file is unreadable or malformed, or of
    /// another [`FORMAT`].
    pub fn load(dir: &Path) -> Result<Collection, CollectionError> {
        let machine_path = dir.join(MACHINE_FILE);
        if !machine_path.is_file() {
            return Err(CollectionError::NoMachine(dir.to_owned()));
        }
        // Bounded: a saved collection is the project's own results JSON.
        let read = |path: &Path| {
            lull_os::input_file::read_bounded_text(path, lull_os::input_file::RESULTS_JSON)
        };
        let malformed = |path: &Path, reason: String| CollectionError::Malformed {
            path: path.to_owned(),
            reason,
        };
        let machine: CollectedMachine = serde_json::from_str(&read(&machine_path)?)
            .map_err(|e| malformed(&machine_path, e.to_string()))?;
        if machine.format != FORMAT {
            return Err(malformed(
                &machine_path,
                format!("format {} (this build reads {FORMAT})", machine.format),
            ));
        }
        let mut files: Vec<PathBuf> = fs::read_dir(dir)
            .map_err(io(dir))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(LIVE_SUFFIX))
            })
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(CollectionError::NoWorkload(dir.to_owned()));
        }
        let mut workloads = Vec::new();
        for f in files {
            let w: LiveWorkload =
                serde_json::from_str(&read(&f)?).map_err(|e| malformed(&f, e.to_string()))?;
            if w.runs.is_empty() {
                return Err(malformed(&f, "no live run".into()));
            }
            workloads.push(w);
        }
        Ok(Collection { machine, workloads })
    }

    /// Keeps only the live runs of the given rounds (1-based), e.g. the ones taken while the
    /// machine was quiet.
    ///
    /// # Errors
    /// [`CollectionError::NoSuchRound`] for a round no workload has.
    pub fn keep_rounds(&mut self, rounds: &[u32]) -> Result<(), CollectionError> {
        let have: std::collections::BTreeSet<u32> = self
            .workloads
            .iter()
            .flat_map(|w| w.runs.iter().map(|r| r.round))
            .collect();
        if let Some(&round) = rounds.iter().find(|r| !have.contains(r)) {
            return Err(CollectionError::NoSuchRound {
                round,
                have: have
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        for w in &mut self.workloads {
            w.runs.retain(|r| rounds.contains(&r.round));
            w.failed_runs.retain(|r| rounds.contains(&r.round));
        }
        Ok(())
    }
}

/// Probes this machine, runs every workload of `paths` `runs` times live
/// ([`collect`]) and once in the simulator
/// ([`analyse`]), telling `progress` what it starts.
///
/// # Errors
/// The first failure: an unreadable or unsupported workload, rt-app missing, a workload whose
/// every live run failed, a simulated run that failed.
pub fn validate_all(
    paths: &[PathBuf],
    seed: u64,
    runs: u32,
    progress: impl FnMut(&str),
) -> Result<(Machine, SimProfile, Vec<WorkloadComparison>), ValidateError> {
    let (machine, collection) = collect(paths, runs, |m, ws| fits(m, ws, seed), progress)?;
    let (profile, results) = analyse(&collection, seed)?;
    Ok((machine, profile, results))
}
