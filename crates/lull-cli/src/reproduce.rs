//! `lull reproduce`: runs the registry of experiments (`lull_reproduce::SECTIONS`) and prints
//! each section's results as a table, or all of them as one JSON document. With `--out DIR`
//! every section's JSON is also written as a results file (`lull_report`), as soon as the
//! section ends, so an interrupted run keeps what it finished. The experiments themselves
//! live in `lull_reproduce`; this parses, prints and writes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use lull_report::{Outcome, Provenance, ResultFile};
use lull_reproduce::{ReproduceOpts, SectionData, DEFAULT_VALIDATION_RUNS};
use serde_json::json;

use crate::progress::Progress;

/// A section's results as the table `lull reproduce` prints.
fn table(data: &SectionData) -> String {
    match data {
        SectionData::Dispatch(r) => crate::dispatch_table(r),
        SectionData::Compose(r) => crate::compose_table(r),
        SectionData::Figure18(r) => crate::kds::figure18_summary(r),
        SectionData::LiveEsm(r) => crate::live::live_esm_table(r),
        SectionData::LiveApps(r) => crate::live::apps_table(r),
        SectionData::Audit(r) => crate::audit::section_table(r),
        SectionData::Marz(r) => crate::sim::marz_table(r),
        SectionData::MarzPolicies(r) => crate::sim::policies_table(r),
        SectionData::Ucsg(r) => crate::ucsg::section_table(r),
        SectionData::Vtcfs(r) => crate::vtcfs::section_table(r),
        SectionData::Validation(r) => crate::validate::section_table(r),
        SectionData::Toggling(r) => crate::toggling::section_table(r),
        SectionData::TlpTable(r) => crate::audit::tlp_section_table(r),
        SectionData::Controller(r) => crate::ctl::section_table(r),
        SectionData::LabSched(r) => crate::lab_sched::table(&r.report),
    }
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
    /// Live runs per workload in the `validation` section; `None`:
    /// [`lull_reproduce::DEFAULT_VALIDATION_RUNS`].
    pub runs: Option<u32>,
}

pub fn run(opts: &Options) -> ExitCode {
    let lull = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("lull reproduce: this program's path: {e}");
            return ExitCode::FAILURE;
        }
    };
    let run_opts = ReproduceOpts {
        validation_runs: opts.runs.unwrap_or(DEFAULT_VALIDATION_RUNS),
        lull,
    };
    let selected = match lull_reproduce::select(&opts.only, opts.long) {
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
        let outcome = match (def.run)(&run_opts).and_then(|data| {
            let json = data.to_json().map_err(lull_reproduce::SectionError::from)?;
            Ok((data, json))
        }) {
            Ok((data, json)) => {
                if !opts.json {
                    progress.print(&table(&data));
                }
                Outcome::Data(json)
            }
            Err(why) => {
                failed = true;
                progress.eprint(&format!("lull reproduce: {}: {why}", def.title));
                Outcome::Error(why.to_string())
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
        println!("{}", crate::output::to_json(&report));
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
