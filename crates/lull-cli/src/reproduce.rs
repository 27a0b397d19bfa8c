//! `lull reproduce`: every experiment of the seeds that Lull runs, one section each.
//!
//! Each experiment is a [`Section`]: a function that runs it and returns its table and JSON.
//! Adding an experiment means adding one entry to [`SECTIONS`]. With `--out DIR` every section's JSON is also written as a results file
//! (`lull_report`), as soon as the section ends, so an interrupted run keeps what it finished.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use lull_lab::bench::{self, DispatchBenchConfig};
use lull_report::{Label, Outcome, Provenance, ResultFile};
use serde_json::json;

use crate::output::Section;
use crate::progress::Progress;

type Runner = fn() -> Result<Section, String>;

/// Live runs of each workload in the `validation` section (`lull reproduce --runs N`); the
/// default keeps the main job within its budget (three runs: about 4 minutes on 2 cores).
pub const DEFAULT_VALIDATION_RUNS: u32 = 3;

static VALIDATION_RUNS: AtomicU32 = AtomicU32::new(DEFAULT_VALIDATION_RUNS);

/// The live runs the `validation` section makes per workload, as `--runs` set them.
pub fn validation_runs() -> u32 {
    VALIDATION_RUNS.load(Ordering::Relaxed)
}

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
    runner: Runner,
}

/// The experiments, in the order they run.
pub const SECTIONS: &[SectionDef] = &[
    SectionDef {
        key: "dispatch_bench",
        title: "ESM dispatch throughput (measured in process)",
        label: Label::Measured,
        expected_s: 3,
        long: false,
        runner: dispatch_section,
    },
    SectionDef {
        key: "kds_compose",
        title: "KDS compose + draw of four full-screen 1080p layers vs memcpy (measured in process)",
        label: Label::Measured,
        expected_s: 1,
        long: false,
        runner: kds_compose_section,
    },
    SectionDef {
        key: "kds_figure18",
        title: "KDS figure 18: a C client composes two layers, every screen pixel checked (measured live)",
        label: Label::Measured,
        expected_s: 1,
        long: false,
        runner: crate::kds::reproduce_section,
    },
    SectionDef {
        key: "live_esm",
        title: "Live ESM vs pull-16ms, vsync-batched, blocking-middleware: tracking-20s and idle (measured live)",
        label: Label::Measured,
        expected_s: 115,
        long: false,
        runner: crate::live::reproduce_section,
    },
    SectionDef {
        key: "live_apps",
        title: "Live apps (tracking, messaging, video) under ESM+KDS+guiS vs the three baselines (measured live)",
        label: Label::Measured,
        expected_s: 350,
        long: false,
        runner: crate::live::apps_reproduce_section,
    },
    SectionDef {
        key: "audit",
        title: "IPSA recorder: validation and throughput perturbation (seed 002 ch. 3, measured live)",
        label: Label::Measured,
        expected_s: 30,
        long: false,
        runner: crate::audit::reproduce_section,
    },
    SectionDef {
        key: "marz_sim",
        title: "Seed-000 experiments on a modelled Jetson TK1: power, energy, latency (modelled)",
        label: Label::Modelled,
        expected_s: 1,
        long: false,
        runner: crate::sim::marz_section,
    },
    SectionDef {
        key: "marz_policies",
        title: "Seed-000 experiments under the seed's kernel (CFS + ondemand) and today's Linux (EEVDF + schedutil) (modelled)",
        label: Label::Modelled,
        expected_s: 1,
        long: false,
        runner: crate::sim::policies_section,
    },
    SectionDef {
        key: "ucsg_sim",
        title: "UCSG (seed 001) on a modelled Galaxy S4: energy, response, frame rate, completion, footprints (modelled)",
        label: Label::Modelled,
        expected_s: 1,
        long: false,
        runner: crate::ucsg::reproduce_section,
    },
    SectionDef {
        key: "vtcfs_sim",
        title: "VT-CFS and the interactive boost (seed 003) on a modelled Tegra 250: painting-app response and its decomposition (modelled)",
        label: Label::Modelled,
        expected_s: 4,
        long: false,
        runner: crate::vtcfs::reproduce_section,
    },
    SectionDef {
        key: "validation",
        title: "The simulator against this machine's kernel on rt-app workloads (measured live and modelled)",
        label: Label::MeasuredAndModelled,
        // Three live runs of the twelve 6 s workloads, and the probe.
        expected_s: 240,
        long: false,
        runner: crate::validate::reproduce_section,
    },
    SectionDef {
        key: "toggling_sim",
        title: "Seed 004's affinity and toggling schemes on a modelled Odroid-XU3: Blackscholes and Vips, figure 3.9 (modelled)",
        label: Label::Modelled,
        expected_s: 1,
        long: false,
        runner: crate::toggling::section,
    },
    SectionDef {
        key: "tlp_table",
        title: "Seed 004's Table 1.1 on this machine: TLP of real programs (measured live) and of every modelled app (modelled)",
        label: Label::MeasuredAndModelled,
        expected_s: 35,
        long: false,
        runner: crate::audit::tlp_reproduce_section,
    },
    SectionDef {
        key: "controller_live",
        title: "Seed 004's controller interface live: monitoring overhead, and the schemes against a capacity thief (measured live)",
        label: Label::Measured,
        expected_s: 60,
        long: false,
        runner: crate::ctl::reproduce_section,
    },
    SectionDef {
        key: "lab_sched",
        title: "lull-scx (Lull's policies on sched_ext) vs EEVDF, scx_lavd and scx_bpfland in the lab guest (measured, TCG: ratios only)",
        label: Label::Measured,
        expected_s: 1_800,
        long: true,
        runner: lab_sched_section,
    },
];

fn lab_sched_section() -> Result<Section, String> {
    let (table, json) = crate::lab_sched::reproduce_section()?;
    Ok(Section { table, json })
}

fn dispatch_section() -> Result<Section, String> {
    let result = bench::dispatch(&DispatchBenchConfig::default());
    Ok(Section {
        table: crate::dispatch_table(&result),
        json: json!(result),
    })
}

fn kds_compose_section() -> Result<Section, String> {
    let result =
        bench::compose(&bench::ComposeBenchConfig::default()).map_err(|e| e.to_string())?;
    Ok(Section {
        table: crate::compose_table(&result),
        json: json!(result),
    })
}

/// Where `python -m lull.verdicts` writes the seed claims' evidence (relative to the repository).
pub const EVIDENCE_PATH: &str = "experiments/verdicts/evidence.json";

/// Copies [`EVIDENCE_PATH`] to `DIR/seed-verdicts.json` for the report's scoreboard; without
/// it the scoreboard says it has no evidence.
fn copy_evidence(dir: &std::path::Path) -> Result<(), String> {
    let src = std::path::Path::new(EVIDENCE_PATH);
    let text = lull_os::input_file::read_bounded_text(src, lull_os::input_file::RESULTS_JSON)
        .map_err(|e| format!("{EVIDENCE_PATH}: {e} (run from the repository root)"))?;
    let dst = dir.join(lull_report::scoreboard::EVIDENCE_FILE);
    lull_os::fileout::write_file_atomically(&dst, text.as_bytes())
        .map_err(|e| format!("{}: {}", dst.display(), e.into_io()))
}

fn progress_note(s: &str) {
    eprintln!("{s}");
}

/// What `lull reproduce` was asked for.
#[derive(Debug, Default)]
pub struct Options {
    /// One JSON document on stdout instead of tables.
    pub json: bool,
    /// Where to write `results/` (and the report).
    pub out: Option<PathBuf>,
    /// The sections to run, by key; all but the long variants when empty.
    pub only: Vec<String>,
    /// Also run the long variants (`SectionDef::long`).
    pub long: bool,
    /// Live runs per workload in the `validation` section; `None`: [`DEFAULT_VALIDATION_RUNS`].
    pub runs: Option<u32>,
}

/// The sections `only` names (when it is empty, every section, the long variants only with
/// `long`), in `SECTIONS` order, with their 1-based place in it.
///
/// # Errors
/// A name that is not a section's key.
pub fn select(only: &[String], long: bool) -> Result<Vec<(usize, &'static SectionDef)>, String> {
    if let Some(bad) = only
        .iter()
        .find(|n| !SECTIONS.iter().any(|s| s.key == n.as_str()))
    {
        let keys: Vec<&str> = SECTIONS.iter().map(|s| s.key).collect();
        return Err(format!(
            "no section named {bad:?}; the sections are: {}",
            keys.join(", ")
        ));
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

pub fn run(opts: &Options) -> ExitCode {
    VALIDATION_RUNS.store(
        opts.runs.unwrap_or(DEFAULT_VALIDATION_RUNS),
        Ordering::Relaxed,
    );
    let selected = match select(&opts.only, opts.long) {
        Ok(s) => s,
        Err(why) => {
            eprintln!("lull reproduce: --only: {why}");
            return ExitCode::from(2);
        }
    };
    if let Some(dir) = &opts.out {
        if let Err(e) = std::fs::create_dir_all(lull_report::results_dir(dir)) {
            eprintln!("lull reproduce: --out {}: {e}", dir.display());
            return ExitCode::from(2);
        }
    }
    let provenance = Provenance::here();
    let progress = Progress::new(
        selected
            .iter()
            .map(|(_, s)| f64::from(s.expected_s))
            .collect(),
    );
    lull_lab::progress::set_sink(progress.sink());
    let mut report = serde_json::Map::new();
    let mut failed = false;
    for (nth, (index, def)) in selected.iter().enumerate() {
        progress.section(nth + 1, selected.len(), def.key, def.title);
        if !opts.json {
            progress.print(&format!("== {index}. {} ==", def.title));
        }
        let started = Instant::now();
        let outcome = match (def.runner)() {
            Ok(section) => {
                if !opts.json {
                    progress.print(&section.table);
                }
                Outcome::Data(section.json)
            }
            Err(why) => {
                failed = true;
                progress.eprint(&format!("lull reproduce: {}: {why}", def.title));
                Outcome::Error(why)
            }
        };
        let elapsed_s = started.elapsed().as_secs_f64();
        progress.section_done(elapsed_s, matches!(outcome, Outcome::Data(_)));
        let json = match &outcome {
            Outcome::Data(v) => v.clone(),
            Outcome::Error(why) => json!({ "error": why }),
        };
        if let Some(dir) = &opts.out {
            let file = ResultFile::new(
                def.key,
                *index,
                def.title,
                def.label,
                provenance.clone(),
                elapsed_s,
                outcome,
            );
            if let Err(e) = lull_report::write(dir, &file) {
                failed = true;
                progress.eprint(&format!("lull reproduce: {e}"));
            }
        }
        report.insert(def.key.to_owned(), json);
    }
    lull_lab::progress::clear_sink();
    progress.finish();
    if opts.json {
        println!("{}", crate::to_json(&report));
    }
    if let Some(dir) = &opts.out {
        eprintln!(
            "lull reproduce: results in {}",
            lull_report::results_dir(dir).display()
        );
        // The scoreboard's evidence: the sweeps' file of the repository, beside the results.
        if let Err(e) = copy_evidence(dir) {
            progress_note(&format!("lull reproduce: {e}"));
        }
        // The report covers every results file in DIR, this run's and any earlier `--only` runs'.
        match lull_report::render(dir) {
            Ok(s) => eprintln!(
                "lull reproduce: report in {} ({} plots)",
                s.index.display(),
                s.plots
            ),
            Err(e) => {
                eprintln!("lull reproduce: report: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
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
        let err = select(&["marz".into()], false).unwrap_err();
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
