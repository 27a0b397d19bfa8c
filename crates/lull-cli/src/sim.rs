//! `lull sim …`: the discrete-event simulator of a modelled SoC (figures are modelled, not
//! measured). Parsing and printing only; the simulator lives in `lull-sim`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use lull_audit::AuditLog;
use lull_sim::{
    latency_change_ms, power_reduction_pct, seed_000_reported, Experiment as _, ExperimentResult,
    Figures, Kind, RunOpts,
};

use crate::output::emit;
use crate::spec_file::read_spec;
use lull_model::DeliveryModel;
use serde_json::Value;

use crate::output::{self, figure, fixed, Col};

#[derive(Subcommand, Debug)]
pub enum SimCommand {
    /// Run every model of an experiment spec on its modelled platform.
    Run(RunArgs),
    /// Run an rt-app workload (JSON) on a modelled platform and print each thread's CPU time,
    /// periods, wake-up latency and slack.
    Rtapp(crate::rtapp::RtAppArgs),
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The spec files, each of the kind its `kind = "…"` says: framework, ucsg, painting,
    /// interbench, hackbench or toggling (e.g. experiments/marz/tracking-10s.toml,
    /// experiments/ucsg/*.toml, experiments/vtcfs/painting.toml).
    #[arg(required = true, num_args = 1..)]
    spec: Vec<PathBuf>,
    /// Print JSON: {"experiment","models":{MODEL:{…}}} for one spec, an array of them for several.
    #[arg(long)]
    json: bool,
    /// UCSG specs: also write each model's CPU footprint (cluster, active cores, frequency every
    /// 100 ms) to DIR/<experiment>-<model>.csv and all models' to DIR/<experiment>.svg.
    #[arg(long, value_name = "DIR")]
    footprint_dir: Option<PathBuf>,
    /// Override the spec's random seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Framework, UCSG and toggling specs: also write each model's scheduling events as an audit
    /// log (the `lull audit` format) to DIR/<experiment>-<model>.audit.
    #[arg(long, value_name = "DIR")]
    audit_dir: Option<PathBuf>,
    /// Framework specs: override a slot of the spec's [policy] table, e.g. `--policy scheduler=eevdf --policy
    /// governor=schedutil` (slots: scheduler, governor, idle, cores, placement, base_slice_us,
    /// preempt_tick_us, boost_c_ms, boost_slice_us).
    #[arg(long, value_name = "SLOT=NAME")]
    policy: Vec<String>,
    /// Toggling specs (experiments/toggling/): write each model's per-thread core-over-time plot
    /// (seed 004 figures 3.1-3.8) to DIR/<experiment>-<model>.svg.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Seed-003 benchmark specs (experiments/vtcfs/): run them at the seed's size (interbench:
    /// 30 s, ten times; hackbench: 100 loops) instead of the spec's own size.
    #[arg(long)]
    seed_size: bool,
}

/// The columns of a framework spec's table, one row per model.
const MODEL_COLS: [Col; 11] = [
    Col::Left("model", 20),
    Col::Right("power mW", 10),
    Col::Right("CPU mW", 8),
    Col::Right("energy mJ", 11),
    Col::Right("lat mean", 9),
    Col::Right("lat p99", 9),
    Col::Right("lat max", 9),
    Col::Right("events", 9),
    Col::Right("handled", 8),
    Col::Right("wake/s", 8),
    Col::Right("frames", 7),
];

/// The table of one experiment: each model's figures, then ESM+KDS+guiS against each baseline
/// with the seed's reported figure beside it.
#[must_use]
pub fn table(r: &ExperimentResult) -> String {
    let details = format!("seed {}", r.header.seed);
    let mut t = output::modelled_table(
        &r.header,
        &details,
        &MODEL_COLS,
        r.models.iter().map(|(name, m)| {
            [
                name.clone(),
                fixed(m.power_mw_mean, 1),
                fixed(m.cpu_power_mw_mean, 1),
                fixed(m.energy_mj, 1),
                figure(m.latency_ms.mean, 2),
                figure(m.latency_ms.p99, 2),
                figure(m.latency_ms.max, 2),
                m.events_injected.to_string(),
                m.events_handled.to_string(),
                fixed(m.wakeups_per_s, 1),
                m.frames_drawn.to_string(),
            ]
        }),
    );
    if let Some((ours_name, ours)) = r.ours() {
        for (name, base) in r.models.iter().filter(|(n, _)| n.as_str() != ours_name) {
            let lat = latency_change_ms(base, ours)
                .map_or_else(|| "-".to_owned(), |d| format!("{d:+.2} ms"));
            let seed = if name == DeliveryModel::Pull16ms.name() {
                seed_000_reported(&r.header.experiment).unwrap_or("")
            } else {
                ""
            };
            let _ = writeln!(
                t,
                "{ours_name} vs {name:<20} power {:+6.1} % ({:+7.1} mW), mean latency {lat:>10}   {seed}",
                -power_reduction_pct(base, ours),
                ours.power_mw_mean - base.power_mw_mean,
            );
        }
    }
    t
}

pub fn run(cmd: SimCommand) -> ExitCode {
    match cmd {
        SimCommand::Rtapp(args) => crate::rtapp::run(&args),
        SimCommand::Run(args) => {
            let mut texts = Vec::new();
            let mut values = Vec::new();
            for path in &args.spec {
                match run_one(path, &args) {
                    Ok((text, value)) => {
                        texts.push(text);
                        values.push(value);
                    }
                    Err(e) => return output::failed("lull sim run", &e, false),
                }
            }
            let text = if args.json {
                let v = if values.len() == 1 {
                    values.swap_remove(0)
                } else {
                    Value::Array(values)
                };
                let mut j = serde_json::to_string_pretty(&v).expect("results serialise");
                j.push('\n');
                j
            } else {
                texts.join("\n")
            };
            emit(&text, "lull sim run")
        }
    }
}

/// The `[policy]` overrides of a command line, `SLOT=NAME` each.
fn policy_overrides(given: &[String]) -> Result<Vec<(String, String)>, String> {
    given
        .iter()
        .map(|p| {
            p.split_once('=')
                .map(|(slot, name)| (slot.to_owned(), name.to_owned()))
                .ok_or_else(|| format!("--policy {p:?}: expected SLOT=NAME, e.g. scheduler=eevdf"))
        })
        .collect()
}

/// Runs one spec file of any kind: its table and its JSON.
fn run_one(path: &Path, args: &RunArgs) -> Result<(String, Value), String> {
    let spec = read_spec(path)?;
    let at = path.display();
    let kind = spec.kind();
    for (given, only, option) in [
        (args.footprint_dir.is_some(), Kind::Ucsg, "--footprint-dir"),
        (args.plot.is_some(), Kind::Toggling, "--plot"),
    ] {
        if given && kind != only {
            return Err(format!(
                "{at}: {option} applies to {only} specs, not to a {kind} spec"
            ));
        }
    }
    let opts = RunOpts {
        seed: args.seed,
        models: None,
        policy: policy_overrides(&args.policy)?,
        seed_size: args.seed_size,
        audit: args.audit_dir.is_some(),
    };
    let report = spec.run(&opts).map_err(|e| format!("{at}: {e}"))?;
    if let Some(dir) = &args.audit_dir {
        write_audit_logs(dir, &spec.header().experiment, &report.audit_logs)?;
    }
    let table = match &report.figures {
        Figures::Framework(r) => table(r),
        Figures::Ucsg(r) => {
            if let Some(dir) = &args.footprint_dir {
                crate::ucsg::write_footprints(r, dir)?;
            }
            crate::ucsg::table(r)
        }
        Figures::Painting(r) => crate::vtcfs::table(r),
        Figures::Interbench(r) => crate::vtcfs_bench::interbench_table(r),
        Figures::Hackbench(r) => crate::vtcfs_bench::hackbench_table(r),
        Figures::Toggling(r) => {
            let mut t = crate::toggling::table(r);
            if let Some(dir) = &args.plot {
                for p in crate::toggling::write_plots(dir, r)? {
                    let _ = writeln!(t, "plot: {p}");
                }
            }
            t
        }
    };
    Ok((table, report.figures.to_json()))
}

/// Writes each model's scheduling events to `dir/<experiment>-<model>.audit` (the `lull audit`
/// format, so `lull audit tlp` reads them).
///
/// # Errors
/// The directory or a file could not be written.
fn write_audit_logs(
    dir: &Path,
    experiment: &str,
    logs: &[(String, AuditLog)],
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for (model, log) in logs {
        let bytes = lull_audit::log::encode(log).map_err(|e| e.to_string())?;
        let path = dir.join(format!("{experiment}-{model}.audit"));
        lull_os::fileout::write_file_atomically(&path, &bytes).map_err(|e| e.to_string())?;
        eprintln!(
            "wrote {} ({} scheduling events)",
            path.display(),
            log.records.len()
        );
    }
    Ok(())
}

/// `lull reproduce`'s `marz_sim` section as text: every seed-000 spec's table, then the
/// simulator's speed.
pub fn marz_table(r: &lull_reproduce::data::Marz) -> String {
    let mut text = String::new();
    let mut sim_events = 0u64;
    for x in &r.results {
        sim_events += x.models.values().map(|m| m.sim_events).sum::<u64>();
        text.push_str(&table(x));
        text.push('\n');
    }
    let secs = r.wall_s;
    let _ = write!(
        text,
        "{} experiments, {sim_events} simulated events in {secs:.2} s of wall time ({:.0} events/s on this machine)",
        r.results.len(),
        sim_events as f64 / secs.max(1e-9)
    );
    text
}

/// `lull reproduce`'s `marz_policies` section as text: every seed-000 spec under the seed's
/// kernel policies (CFS and ondemand) and under today's Linux (EEVDF and schedutil), for
/// ESM+KDS+guiS, ESM and the pull model.
pub fn policies_table(r: &lull_reproduce::data::MarzPolicies) -> String {
    let mut cols = vec![Col::Left("experiment", 14), Col::Left("model", 14)];
    for (set, _, _) in lull_reproduce::data::POLICY_SETS {
        cols.extend([
            Col::Bar,
            Col::Left(set, 15),
            Col::Right("power mW", 8),
            Col::Right("lat mean", 8),
            Col::Right("lat p99", 8),
        ]);
    }
    let mut rows = Vec::new();
    for (experiment, runs) in &r.experiments {
        for model in [
            DeliveryModel::EsmKdsGuis,
            DeliveryModel::Esm,
            DeliveryModel::Pull16ms,
        ]
        .map(DeliveryModel::name)
        {
            if !runs[0].1.models.contains_key(model) {
                continue;
            }
            let mut cells = vec![experiment.clone(), model.to_owned()];
            for (_, r) in runs {
                let m = &r.models[model];
                cells.extend([
                    String::new(),
                    fixed(m.power_mw_mean, 1),
                    figure(m.latency_ms.mean, 2),
                    figure(m.latency_ms.p99, 2),
                ]);
            }
            rows.push(cells);
        }
    }
    let text = output::table(&cols, rows);
    text.trim_end().to_owned()
}
