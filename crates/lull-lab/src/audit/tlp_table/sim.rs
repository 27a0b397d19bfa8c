//! The TLP of modelled apps (modelled, not measured): every model of a simulator spec, run with
//! the simulator's audit log switched on and analysed as the live recordings are
//! ([`lull_audit::tlp`]). All tasks of the modelled system count (machine-wide, as Table 1.1).
//!
//! Any spec whose kind records scheduling events works (framework, UCSG, toggling): it is loaded
//! by its `kind` ([`lull_sim::load`]) and run through [`lull_sim::Experiment`] with the audit log
//! on; a spec that cannot be read, or of a kind without an audit log, is a skipped row with the
//! reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lull_audit::tlp::{self, TaskFilter, DEFAULT_WINDOW_NS};
use lull_audit::AuditLog;
use lull_sim::{Experiment as _, RunOpts};
use serde::Serialize;

/// The spec directories of the default simulated table, under the repository root.
pub const SIM_SPEC_DIRS: [&str; 3] = [
    "experiments/marz",
    "experiments/ucsg",
    "experiments/toggling",
];

/// One model of one spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimRow {
    pub spec: String,
    pub experiment: String,
    pub model: String,
    /// Machine-wide TLP of the modelled run; `None` when no task ran.
    pub tlp: Option<f64>,
    /// Share of the busy time with exactly i cores busy, keyed "1", "2", ….
    pub busy_cpus_fraction: BTreeMap<String, f64>,
    /// C₀: the fraction of the run no core ran a task.
    pub idle_fraction: Option<f64>,
    /// Cores of the modelled platform (rings of the audit log).
    pub cores: u16,
    /// Length of the modelled run, s.
    pub seconds: f64,
    /// Scheduling events of the run.
    pub events: usize,
    pub dropped_events: u64,
    /// TLP over time: each window's TLP (`None` where no task ran), to 0.01; the windows are
    /// `tlp_window_ms` wide (`lull_audit::tlp::DEFAULT_WINDOW_NS`, wider for very long runs).
    pub tlp_over_time: Vec<Option<f64>>,
    pub tlp_window_ms: f64,
}

/// A spec that could not be run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SimSkipped {
    pub spec: String,
    pub reason: String,
}

/// The simulated table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimTable {
    /// Always true: these figures come from the simulator.
    pub modelled: bool,
    pub rows: Vec<SimRow>,
    pub skipped: Vec<SimSkipped>,
}

/// The `.toml` specs of [`SIM_SPEC_DIRS`] under `root`, each directory in name order; a
/// directory that does not exist contributes nothing.
#[must_use]
pub fn default_specs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in SIM_SPEC_DIRS {
        let Ok(entries) = std::fs::read_dir(root.join(d)) else {
            continue;
        };
        let mut v: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        v.sort();
        out.extend(v);
    }
    out
}

/// The row of one model's log.
#[must_use]
pub fn row_of_log(spec: &str, experiment: &str, model: &str, log: &AuditLog) -> SimRow {
    let r = tlp::analyze_log(log, &TaskFilter::all(), DEFAULT_WINDOW_NS);
    SimRow {
        spec: spec.to_owned(),
        experiment: experiment.to_owned(),
        model: model.to_owned(),
        tlp: r.tlp,
        busy_cpus_fraction: r.busy_share(),
        idle_fraction: r.busy_cpus_fraction.get("0").copied(),
        cores: r.cpus,
        seconds: r.span_ns as f64 / 1e9,
        events: log.records.len(),
        dropped_events: r.dropped_events,
        tlp_over_time: r
            .windows
            .iter()
            .map(|w| w.tlp.map(|t| (t * 100.0).round() / 100.0))
            .collect(),
        tlp_window_ms: r.window_ns as f64 / 1e6,
    }
}

/// Why a spec gave no rows.
#[derive(Debug, thiserror::Error)]
pub enum SpecTlpError {
    #[error(transparent)]
    Load(#[from] lull_sim::SpecError),
    #[error(transparent)]
    Run(#[from] lull_sim::RunError),
}

/// Runs every model of the spec in `text` (named `name` in the rows).
///
/// # Errors
/// [`SpecTlpError`]: the spec cannot be read or a model cannot run.
pub fn spec_tlp(name: &str, text: &str) -> Result<Vec<SimRow>, SpecTlpError> {
    let spec = lull_sim::load(name, text)?;
    let opts = RunOpts {
        audit: true,
        ..RunOpts::default()
    };
    let report = spec.run(&opts)?;
    let experiment = &spec.header().experiment;
    Ok(report
        .audit_logs
        .iter()
        .map(|(model, log)| row_of_log(name, experiment, model, log))
        .collect())
}

/// Runs every spec of `paths`; `progress` gets a line per spec. A spec that cannot be read or
/// run is a skipped entry with the reason, and the others still run.
pub fn sim_table(paths: &[PathBuf], progress: &mut dyn FnMut(&str)) -> SimTable {
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for p in paths {
        let name = p.display().to_string();
        let res = lull_os::input_file::read_bounded_text(p, lull_os::input_file::SPEC)
            .map_err(|e| e.to_string())
            .and_then(|text| spec_tlp(&name, &text).map_err(|e| e.to_string()));
        match res {
            Ok(r) => {
                progress(&format!("{name}: {} models", r.len()));
                rows.extend(r);
            }
            Err(reason) => {
                progress(&format!("{name}: skipped: {reason}"));
                skipped.push(SimSkipped { spec: name, reason });
            }
        }
    }
    SimTable {
        modelled: true,
        rows,
        skipped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small framework spec: the stylus trace scaled to 2 s on the Jetson TK1 model.
    fn spec() -> String {
        lull_sim::StylusSpec {
            experiment: "tlp-unit",
            seed: 3,
            models: &["esm", "pull-16ms"],
            tail_ms: 200,
            main_cores: 4,
            companion: true,
            scale_to_ms: 2_000,
            ..lull_sim::StylusSpec::default()
        }
        .toml()
    }

    #[test]
    fn a_small_spec_gives_a_deterministic_tlp_within_its_cores() {
        let a = spec_tlp("unit.toml", &spec()).expect("runs");
        let b = spec_tlp("unit.toml", &spec()).expect("runs");
        assert_eq!(a, b, "the same spec gives the same figures");
        assert_eq!(a.len(), 2);
        for r in &a {
            let t = r.tlp.expect("tasks ran");
            assert!((1.0..=f64::from(r.cores)).contains(&t), "{t}");
            let sum: f64 = r.busy_cpus_fraction.values().sum();
            assert!((sum - 1.0).abs() < 1e-9);
            assert!(r.events > 0);
            assert!(r.seconds > 1.0);
            // TLP over time: one window per started 100 ms of the run, each within the cores.
            assert_eq!(r.tlp_window_ms, 100.0);
            let windows = (r.seconds * 1000.0 / r.tlp_window_ms).ceil() as usize;
            assert!(
                r.tlp_over_time.len().abs_diff(windows) <= 1,
                "{}",
                r.tlp_over_time.len()
            );
            assert!(r
                .tlp_over_time
                .iter()
                .flatten()
                .all(|t| (1.0..=f64::from(r.cores)).contains(t)));
        }
    }

    #[test]
    fn a_spec_nothing_reads_is_skipped_with_the_reason() {
        let scratch = lull_os::fileout::ScratchDir::new("lull-sim-tlp").expect("scratch");
        let dir = scratch.path();
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "experiment = 3\n").expect("writes");
        let good = dir.join("good.toml");
        std::fs::write(&good, spec()).expect("writes");
        let missing = dir.join("missing.toml");
        let t = sim_table(&[bad, good, missing], &mut |_| {});
        assert!(t.modelled);
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.skipped.len(), 2);
        assert!(t.skipped.iter().all(|s| !s.reason.is_empty()));
    }

    #[test]
    fn the_default_specs_are_the_shipped_marz_and_ucsg_ones() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let specs = default_specs(&root);
        assert!(specs
            .iter()
            .any(|p| p.ends_with("experiments/marz/tracking-10s.toml")));
        assert!(specs
            .iter()
            .any(|p| p.ends_with("experiments/ucsg/fig6-video-zip.toml")));
        assert!(specs
            .iter()
            .all(|p| p.extension().is_some_and(|x| x == "toml")));
    }
}
