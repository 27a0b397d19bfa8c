//! The experiments of `lull reproduce` as a library.
//!
//! [`SECTIONS`] is the registry: every experiment of the seeds that Lull runs, in the order it
//! runs, each with one signature, [`SectionDef::run`]: `fn(&ReproduceOpts) ->
//! Result<SectionData, SectionError>`. A section returns its typed results ([`SectionData`]);
//! [`SectionData::to_json`] is the JSON the results files and `lull reproduce --json` hold, and
//! the command line prints the same data as tables. Adding an experiment means adding one
//! entry to [`SECTIONS`] and one variant to [`SectionData`].
//!
//! Sections read their specs and workloads relative to the working directory (the repository
//! root), as `lull reproduce` documents.

pub mod data;
pub mod error;
pub mod lab_sched;
pub mod sections;
pub mod spec_file;

use std::path::PathBuf;

pub use data::SectionData;
pub use error::{SectionError, SimRunError};
use lull_report::Label;

/// Live runs of each workload in the `validation` section (`lull reproduce --runs N`); the
/// default keeps the main job within its budget (three runs: about 4 minutes on 2 cores).
pub const DEFAULT_VALIDATION_RUNS: u32 = 3;

/// What every section is run with.
#[derive(Debug, Clone)]
pub struct ReproduceOpts {
    /// Live runs per workload in the `validation` section.
    pub validation_runs: u32,
    /// The `lull` binary: the sections that run a program of it (the controller's CPU-bound
    /// program, the TLP table's programs, the lab guest's `lull lab sched`) run this one.
    pub lull: PathBuf,
}

impl ReproduceOpts {
    /// The defaults, with `lull` as the binary to run.
    #[must_use]
    pub fn new(lull: PathBuf) -> ReproduceOpts {
        ReproduceOpts {
            validation_runs: DEFAULT_VALIDATION_RUNS,
            lull,
        }
    }
}

/// A section's runner: the one signature every section has.
pub type Runner = fn(&ReproduceOpts) -> Result<SectionData, SectionError>;

/// One entry of [`SECTIONS`].
#[derive(Debug)]
pub struct SectionDef {
    /// The name `--only` takes, the key in the JSON report and the results file's stem.
    pub key: &'static str,
    pub title: &'static str,
    pub label: Label,
    /// About how long the section takes on a 2-core x86-64 machine, for the time-left estimate
    /// (the `elapsed_s` of a release run's results files on such a machine, 2026-11-25).
    pub expected_s: u32,
    /// A long variant: it runs only with `--long` or when `--only` names it, so that the main
    /// job stays within about 15 minutes on 2 cores.
    pub long: bool,
    /// Runs the experiment.
    pub run: Runner,
}

/// The experiments, in the order they run.
pub const SECTIONS: &[SectionDef] = &[
    SectionDef {
        key: "dispatch_bench",
        title: "ESM dispatch throughput (measured in process)",
        label: Label::Measured,
        expected_s: 3,
        long: false,
        run: sections::bench::dispatch,
    },
    SectionDef {
        key: "kds_compose",
        title: "KDS compose + draw of four full-screen 1080p layers vs memcpy (measured in process)",
        label: Label::Measured,
        expected_s: 1,
        long: false,
        run: sections::bench::compose,
    },
    SectionDef {
        key: "kds_figure18",
        title: "KDS figure 18: a C client composes two layers, every screen pixel checked (measured live)",
        label: Label::Measured,
        expected_s: 1,
        long: false,
        run: sections::live::figure18,
    },
    SectionDef {
        key: "live_esm",
        title: "Live ESM vs pull-16ms, vsync-batched, blocking-middleware: tracking-20s and idle (measured live)",
        label: Label::Measured,
        expected_s: 115,
        long: false,
        run: sections::live::live_esm,
    },
    SectionDef {
        key: "live_apps",
        title: "Live apps (tracking, messaging, video) under ESM+KDS+guiS vs the three baselines (measured live)",
        label: Label::Measured,
        expected_s: 350,
        long: false,
        run: sections::live::live_apps,
    },
    SectionDef {
        key: "audit",
        title: "IPSA recorder: validation and throughput perturbation (seed 002 ch. 3, measured live)",
        label: Label::Measured,
        expected_s: 30,
        long: false,
        run: sections::live::audit,
    },
    SectionDef {
        key: "marz_sim",
        title: "Seed-000 experiments on a modelled Jetson TK1: power, energy, latency (modelled)",
        label: Label::Modelled,
        expected_s: 1,
        long: false,
        run: sections::modelled::marz,
    },
    SectionDef {
        key: "marz_policies",
        title: "Seed-000 experiments under the seed's kernel (CFS + ondemand) and today's Linux (EEVDF + schedutil) (modelled)",
        label: Label::Modelled,
        expected_s: 1,
        long: false,
        run: sections::modelled::marz_policies,
    },
    SectionDef {
        key: "ucsg_sim",
        title: "UCSG (seed 001) on a modelled Galaxy S4: energy, response, frame rate, completion, footprints (modelled)",
        label: Label::Modelled,
        expected_s: 1,
        long: false,
        run: sections::modelled::ucsg,
    },
    SectionDef {
        key: "vtcfs_sim",
        title: "VT-CFS and the interactive boost (seed 003) on a modelled Tegra 250: painting-app response and its decomposition (modelled)",
        label: Label::Modelled,
        expected_s: 4,
        long: false,
        run: sections::modelled::vtcfs,
    },
    SectionDef {
        key: "validation",
        title: "The simulator against this machine's kernel on rt-app workloads (measured live and modelled)",
        label: Label::MeasuredAndModelled,
        // Three live runs of the twelve 6 s workloads, and the probe.
        expected_s: 240,
        long: false,
        run: sections::live::validation,
    },
    SectionDef {
        key: "toggling_sim",
        title: "Seed 004's affinity and toggling schemes on a modelled Odroid-XU3: Blackscholes and Vips, figure 3.9 (modelled)",
        label: Label::Modelled,
        expected_s: 1,
        long: false,
        run: sections::modelled::toggling,
    },
    SectionDef {
        key: "tlp_table",
        title: "Seed 004's Table 1.1 on this machine: TLP of real programs (measured live) and of every modelled app (modelled)",
        label: Label::MeasuredAndModelled,
        expected_s: 35,
        long: false,
        run: sections::live::tlp_table,
    },
    SectionDef {
        key: "controller_live",
        title: "Seed 004's controller interface live: monitoring overhead, and the schemes against a capacity thief (measured live)",
        label: Label::Measured,
        expected_s: 60,
        long: false,
        run: sections::live::controller,
    },
    SectionDef {
        key: "lab_sched",
        title: "lull-scx (Lull's policies on sched_ext) vs EEVDF, scx_lavd and scx_bpfland in the lab guest (measured, TCG: ratios only)",
        label: Label::Measured,
        expected_s: 1_800,
        long: true,
        run: lab_sched::section,
    },
];

/// A section name `--only` gave that is not a section's key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no section named {name:?}; the sections are: {}", keys().join(", "))]
pub struct UnknownSection {
    pub name: String,
}

/// Every section's key, in run order.
#[must_use]
pub fn keys() -> Vec<&'static str> {
    SECTIONS.iter().map(|s| s.key).collect()
}

/// The sections `only` names (when it is empty, every section, the long variants only with
/// `long`), in `SECTIONS` order, with their 1-based place in it.
///
/// # Errors
/// A name that is not a section's key.
pub fn select(
    only: &[String],
    long: bool,
) -> Result<Vec<(usize, &'static SectionDef)>, UnknownSection> {
    if let Some(bad) = only
        .iter()
        .find(|n| !SECTIONS.iter().any(|s| s.key == n.as_str()))
    {
        return Err(UnknownSection { name: bad.clone() });
    }
    Ok(SECTIONS
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            if only.is_empty() {
                long || !s.long
            } else {
                only.iter().any(|n| n == s.key)
            }
        })
        .map(|(i, s)| (i + 1, s))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_plain_names() {
        for (i, a) in SECTIONS.iter().enumerate() {
            assert!(a
                .key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'));
            assert!(
                SECTIONS[i + 1..].iter().all(|b| b.key != a.key),
                "{}",
                a.key
            );
        }
    }

    #[test]
    fn only_selects_in_order_and_names_unknown_sections() {
        let all = select(&[], true).unwrap();
        assert_eq!(all.len(), SECTIONS.len());
        let some = select(&["validation".into(), "marz_sim".into()], false).unwrap();
        let keys: Vec<_> = some.iter().map(|(i, s)| (*i, s.key)).collect();
        assert_eq!(keys, [(7, "marz_sim"), (11, "validation")]);
        let err = select(&["marz".into()], false).unwrap_err().to_string();
        assert!(
            err.contains("\"marz\"") && err.contains("marz_sim"),
            "{err}"
        );
    }

    #[test]
    fn long_variants_run_only_when_asked_for() {
        let default: Vec<_> = select(&[], false)
            .unwrap()
            .iter()
            .map(|(_, s)| s.key)
            .collect();
        assert!(!default.contains(&"lab_sched"), "{default:?}");
        assert_eq!(default.len(), SECTIONS.iter().filter(|s| !s.long).count());
        let named = select(&["lab_sched".into()], false).unwrap();
        assert_eq!(named.len(), 1);
        let within: u32 = SECTIONS
            .iter()
            .filter(|s| !s.long)
            .map(|s| s.expected_s)
            .sum();
        // The main job's budget (about 15 minutes on 2 cores) by the sections' own estimates.
        assert!(within <= 15 * 60, "{within} s");
    }
}
