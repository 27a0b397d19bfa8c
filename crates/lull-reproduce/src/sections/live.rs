//! The sections measured on this machine: the figure-18 demonstration, the live ESM and apps,
//! the IPSA recorder, the TLP table and seed 004's controller.

use std::ffi::OsString;
use std::path::Path;

use lull_ctl::overhead::{self, OverheadOptions, SAMPLE_THREADS};
use lull_lab::audit::experiments::{self, PerturbationConfig, ValidationConfig};
use lull_lab::audit::tlp_table::{self, sim as sim_tlp, TableConfig};
use lull_lab::experiment;
use lull_lab::kds_demo::{self, Figure18Config};
use lull_lab::live::{self, RunSpec, Workload};
use lull_lab::stack::LIVE_MODELS;
use lull_lab::toggling_live::{self as tl, TogglingSpec};

use crate::data::{Audit, Controller, LiveEsm, Tlp};
use crate::{ReproduceOpts, SectionData, SectionError};

/// The screen of the figure-18 demonstration (`lull kds demo figure18`'s default).
pub const FIGURE18_SCREEN: (u32, u32) = (640, 480);
/// Seconds of each idle run in `live_esm`.
const IDLE_S: u64 = 3;
/// The recorder's validation in `audit`: one run of 1 s (the command's defaults are longer).
const AUDIT_VALIDATION_RUN_MS: u64 = 1000;
const AUDIT_VALIDATION_REPEATS: u32 = 1;
/// The perturbation table in `audit`: two runs of 300 ms per condition.
const AUDIT_PERTURBATION_RUN_MS: u64 = 300;
const AUDIT_PERTURBATION_REPEATS: u32 = 2;
/// Repetitions of the overhead measurement in `controller_live` (the command's default is 5).
const OVERHEAD_REPS: usize = 3;
/// The CPU-bound program's rounds and the samples taken in `controller_live`.
const OVERHEAD_ROUNDS: u64 = 400_000_000;
const OVERHEAD_SAMPLES: usize = 2000;
/// Repetitions of each arm of the live toggling table in `controller_live` (`lull live
/// toggling` takes 3).
const TOGGLING_REPS: u32 = 1;

/// `kds_figure18`: the demonstration on a [`FIGURE18_SCREEN`] screen, the snapshot in the
/// temporary directory.
///
/// # Errors
/// The client cannot be built, or the demonstration fails.
pub fn figure18(_: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let png = std::env::temp_dir().join("lull-reproduce-figure18.png");
    let config = Figure18Config::beside_exe(FIGURE18_SCREEN, png)?;
    Ok(SectionData::Figure18(Box::new(kds_demo::figure18(
        &config,
    )?)))
}

/// `live_esm`: every live model on tracking-20s and idle, and ESM's change against each
/// baseline.
///
/// # Errors
/// The recording cannot be read, or a run fails (the error names the model).
pub fn live_esm(_: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let live_err = |what: String| move |source| SectionError::Live { what, source };
    let base = live::stylus_trace(None).map_err(live_err("the stylus recording".into()))?;
    let mut tracking_20s = Vec::new();
    let mut idle = Vec::new();
    for model in LIVE_MODELS {
        lull_lab::progress::note(&format!("{} on tracking-20s, then idle", model.name()));
        let spec = RunSpec::latency(model, Workload::Tracking20s, &base)
            .map_err(live_err(model.name().into()))?;
        tracking_20s.push(live::run(&spec).map_err(live_err(model.name().into()))?);
        let spec = RunSpec::idle(model, IDLE_S).map_err(live_err(model.name().into()))?;
        idle.push(live::run(&spec).map_err(live_err(format!("{} idle", model.name())))?);
    }
    let esm_vs_baselines = live::esm_vs_baselines(&tracking_20s, &idle);
    Ok(SectionData::LiveEsm(Box::new(LiveEsm {
        tracking_20s,
        idle,
        esm_vs_baselines,
    })))
}

/// `live_apps`: each app under every model, then the video in the background
/// (`experiment::reproduce`).
///
/// # Errors
/// The app binary or the recording is missing, or a run fails.
pub fn live_apps(_: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let binary = experiment::default_app_binary()?;
    let stylus = live::stylus_trace(None).map_err(|source| SectionError::Live {
        what: "the stylus recording".into(),
        source,
    })?;
    Ok(SectionData::LiveApps(Box::new(experiment::reproduce(
        &binary, &stylus,
    )?)))
}

/// `audit`: the recorder's validation (short) and a short perturbation table.
///
/// # Errors
/// The recorder cannot run here.
pub fn audit(_: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let validation = experiments::validate(&ValidationConfig {
        run_ms: AUDIT_VALIDATION_RUN_MS,
        repeats: AUDIT_VALIDATION_REPEATS,
        ..ValidationConfig::default()
    })?;
    let perturbation = experiments::perturbation(&PerturbationConfig {
        run_ms: AUDIT_PERTURBATION_RUN_MS,
        repeats: AUDIT_PERTURBATION_REPEATS,
        ..PerturbationConfig::default()
    })?;
    Ok(SectionData::Audit(Box::new(Audit {
        validation,
        perturbation,
    })))
}

/// `validation`: see [`super::validation::section`].
///
/// # Errors
/// As that.
pub fn validation(opts: &ReproduceOpts) -> Result<SectionData, SectionError> {
    super::validation::section(opts)
}

/// `tlp_table`: the live table with its default programs and time, and the modelled table of
/// every spec under `experiments/`.
///
/// # Errors
/// The live table cannot be recorded.
pub fn tlp_table(opts: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let mut progress = |line: &str| lull_lab::progress::note(line);
    let modelled = sim_tlp::sim_table(&sim_tlp::default_specs(Path::new(".")), &mut progress);
    let cfg = TableConfig {
        lull: Some(opts.lull.clone()),
        ..TableConfig::default()
    };
    let live = tlp_table::run_table(&cfg, &mut progress)?;
    Ok(SectionData::TlpTable(Box::new(Tlp { live, modelled })))
}

/// The online CPUs' count (at least 1).
fn online_cpus() -> usize {
    lull_os::topology::probe(Path::new(lull_os::topology::SYSFS_CPUS))
        .online
        .len()
        .max(1)
}

/// The overhead measurement's options: `lull`'s hidden `ctl burn` as the CPU-bound program (one
/// thread per online CPU) and as the parked threads sampled.
#[must_use]
pub fn overhead_options(lull: &Path, reps: usize, rounds: u64, samples: usize) -> OverheadOptions {
    let me = |args: &[String]| -> Vec<OsString> {
        std::iter::once(lull.as_os_str().to_owned())
            .chain(["ctl", "burn"].iter().map(OsString::from))
            .chain(args.iter().map(OsString::from))
            .collect()
    };
    OverheadOptions {
        burn: me(&[
            "--threads".into(),
            online_cpus().to_string(),
            "--rounds".into(),
            rounds.to_string(),
        ]),
        park: me(&[
            "--threads".into(),
            SAMPLE_THREADS.to_string(),
            "--park".into(),
        ]),
        reps,
        samples,
    }
}

/// `controller_live`: the monitoring overhead and the live toggling table with one repetition
/// per arm.
///
/// # Errors
/// A measurement fails, or `lull-work` is missing.
pub fn controller(opts: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let o = overhead_options(&opts.lull, OVERHEAD_REPS, OVERHEAD_ROUNDS, OVERHEAD_SAMPLES);
    let overhead = overhead::measure(&o)?;
    let mut spec = TogglingSpec::new(tl::default_work_binary()?);
    spec.reps = TOGGLING_REPS;
    let toggling = tl::run(&spec)?;
    Ok(SectionData::Controller(Box::new(Controller {
        overhead,
        toggling,
        cpus: online_cpus(),
    })))
}
