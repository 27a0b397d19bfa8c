//! The `validation` section: every shipped rt-app workload live and in the simulator, and the
//! comparison's JSON (which `lull validate kernel --json` prints too).

use lull_lab::validate::compare::{
    counts, validate_all, Counts, Figures, Range, SimProfile, ThreadComparison, WorkloadComparison,
    CPU_SHARE_BOUND_PP, LATENCY_BOUND_FRACTION, LATENCY_BOUND_US,
};
use lull_lab::validate::Machine;
use serde_json::{json, Value};

use super::files_in;
use crate::data::Validation;
use crate::{ReproduceOpts, SectionData, SectionError};

/// Where the shipped validation workloads live, relative to the working directory.
pub const VALIDATION_DIR: &str = "experiments/validation";

/// The simulator's random seed in the section (`lull validate kernel`'s default).
const SECTION_SEED: u64 = 1;

/// The shipped workloads, in name order.
///
/// # Errors
/// The directory cannot be listed or holds no workload.
pub fn shipped() -> Result<Vec<std::path::PathBuf>, SectionError> {
    files_in(VALIDATION_DIR, "", "json", ".json workloads")
}

/// `validation`: every shipped workload both ways, live `opts.validation_runs` times.
///
/// # Errors
/// The workloads cannot be listed, or the comparison fails.
pub fn section(opts: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let (machine, profile, workloads) =
        validate_all(&shipped()?, SECTION_SEED, opts.validation_runs, |what| {
            lull_lab::progress::note(&format!("lull validate kernel: {what} …"));
        })?;
    Ok(SectionData::Validation(Box::new(Validation {
        machine,
        profile,
        workloads,
    })))
}

fn figures_json(f: &Figures) -> Value {
    json!({
        "cpu_share": f.cpu_share,
        "periods": f.periods,
        "wakeup_latency_us": match (f.wakeup_p50_us, f.wakeup_p99_us) {
            (Some(p50), Some(p99)) => json!({"p50": p50, "p99": p99}),
            _ => Value::Null,
        },
    })
}

fn range_json(r: Option<Range>) -> Value {
    r.map_or(
        Value::Null,
        |r| json!({"min": r.min, "median": r.median, "max": r.max}),
    )
}

fn counts_json(c: Counts) -> Value {
    json!({"threads": c.threads, "fixed_bound": c.fixed, "noise_aware": c.noise_aware})
}

fn thread_json(t: &ThreadComparison) -> Value {
    // `live` holds the runs' medians; `live_spread` their ranges and every run.
    json!({
        "name": t.name,
        "live": figures_json(&t.live),
        "live_spread": {
            "cpu_share": range_json(Some(t.spread.cpu_share)),
            "wakeup_p50_us": range_json(t.spread.wakeup_p50_us),
            "wakeup_p99_us": range_json(t.spread.wakeup_p99_us),
            "runs": t.spread.runs.iter().map(figures_json).collect::<Vec<_>>(),
        },
        "sim": figures_json(&t.sim),
        "cpu_share_diff_pp": t.cpu_diff_pp(),
        "cpu_share_within_bound": t.cpu_ok(),
        "cpu_share_within_noise": t.cpu_ok_noise(),
        "wakeup_latency_within_bound": t.latency_ok(),
        "wakeup_latency_within_noise": t.latency_ok_noise(),
    })
}

/// The comparison as JSON.
#[must_use]
pub fn to_json(machine: &Machine, profile: &SimProfile, ws: &[WorkloadComparison]) -> Value {
    to_json_with(&machine.to_string(), profile, ws)
}

/// [`to_json`] with the machine given as the probe's text (a saved collection's).
#[must_use]
pub fn to_json_with(machine: &str, profile: &SimProfile, ws: &[WorkloadComparison]) -> Value {
    let workloads: Vec<Value> = ws
        .iter()
        .map(|w| {
            let (live_totals, sim_total) = w.cpu_totals();
            json!({
                "name": w.name,
                "cpu_total": {"live_runs": live_totals, "sim": sim_total},
                "file": w.path.display().to_string(),
                "duration_s": w.duration_s,
                "runs": w.runs,
                "failed_runs": w.failed_runs,
                "threads": w.threads.iter().map(thread_json).collect::<Vec<_>>(),
            })
        })
        .collect();
    let (cpu, lat) = counts(ws);
    json!({
        "workloads": workloads,
        "runs": ws.first().map_or(0, |w| w.runs),
        "spread": "min-max over the live runs",
        "machine": machine,
        "profile": profile.notes,
        "bounds": {
            "cpu_share_pp": CPU_SHARE_BOUND_PP,
            "wakeup_latency_fraction": LATENCY_BOUND_FRACTION,
            "wakeup_latency_us": LATENCY_BOUND_US,
        },
        "counts": {"cpu_share": counts_json(cpu), "wakeup_latency": counts_json(lat)},
        "within_bounds": {
            "cpu_share": cpu.fixed == cpu.threads,
            "wakeup_latency": lat.fixed == lat.threads,
        },
        "within_noise": {
            "cpu_share": cpu.noise_aware == cpu.threads,
            "wakeup_latency": lat.noise_aware == lat.threads,
        },
    })
}
