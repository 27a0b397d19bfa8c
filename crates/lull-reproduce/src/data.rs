//! What each section returns: its typed results, and the JSON of them that the results files
//! and `lull reproduce --json` hold (the command line prints the same data as tables).

use lull_ctl::overhead::OverheadReport;
use lull_lab::audit::experiments::{PerturbationReport, ValidationReport};
use lull_lab::audit::tlp_table::sim::SimTable;
use lull_lab::audit::tlp_table::TlpTable;
use lull_lab::bench::{ComposeBench, DispatchBench};
use lull_lab::experiment::AppsReproduction;
use lull_lab::kds_demo::Figure18Report;
use lull_lab::live::{EsmVsBaseline, LiveReport};
use lull_lab::scx::SchedReport;
use lull_lab::toggling_live::TogglingReport;
use lull_lab::validate::compare::{
    counts, Counts, Range, SimProfile, ThreadComparison, WorkloadComparison, CPU_SHARE_BOUND_PP,
    LATENCY_BOUND_FRACTION, LATENCY_BOUND_US,
};
use lull_lab::validate::{Figures, Machine};
use lull_sim::hackbench::HackbenchResult;
use lull_sim::interbench::InterbenchResult;
use lull_sim::toggling::TogglingResult;
use lull_sim::ucsg::{seed as ucsg_seed, CellComparison, UcsgResult};
use lull_sim::vtcfs::PaintingResult;
use lull_sim::ExperimentResult;
use serde_json::{json, Map, Value};

/// One section's results, by section.
#[derive(Debug)]
pub enum SectionData {
    Dispatch(Box<DispatchBench>),
    Compose(Box<ComposeBench>),
    Figure18(Box<Figure18Report>),
    LiveEsm(Box<LiveEsm>),
    LiveApps(Box<AppsReproduction>),
    Audit(Box<Audit>),
    Marz(Box<Marz>),
    MarzPolicies(Box<MarzPolicies>),
    Ucsg(Box<Ucsg>),
    Vtcfs(Box<Vtcfs>),
    Validation(Box<Validation>),
    Toggling(Box<Toggling>),
    TlpTable(Box<Tlp>),
    Controller(Box<Controller>),
    LabSched(Box<LabSched>),
}

/// `live_esm`: every live model on tracking-20s and idle, and ESM's change against each
/// baseline.
#[derive(Debug)]
pub struct LiveEsm {
    pub tracking_20s: Vec<LiveReport>,
    pub idle: Vec<LiveReport>,
    pub esm_vs_baselines: Vec<EsmVsBaseline>,
}

/// `audit`: the recorder's validation and its throughput perturbation.
#[derive(Debug)]
pub struct Audit {
    pub validation: ValidationReport,
    pub perturbation: PerturbationReport,
}

/// `marz_sim`: every seed-000 spec, in name order.
#[derive(Debug)]
pub struct Marz {
    pub results: Vec<ExperimentResult>,
    /// Wall time of the runs, s (for the simulator's speed; not in the JSON).
    pub wall_s: f64,
}

/// The policy sets `marz_policies` compares: (name, scheduling class, frequency governor) —
/// the seed's kernel and today's Linux.
pub const POLICY_SETS: [(&str, &str, &str); 2] = [
    ("cfs+ondemand", "cfs", "ondemand"),
    ("eevdf+schedutil", "eevdf", "schedutil"),
];

/// `marz_policies`: each seed-000 spec under each of [`POLICY_SETS`].
#[derive(Debug)]
pub struct MarzPolicies {
    /// (experiment, its result under each policy set in [`POLICY_SETS`] order).
    pub experiments: Vec<(String, Vec<(&'static str, ExperimentResult)>)>,
}

/// `ucsg_sim`: every UCSG spec, in name order.
#[derive(Debug)]
pub struct Ucsg {
    pub results: Vec<UcsgResult>,
    /// Wall time of the runs, s (not in the JSON).
    pub wall_s: f64,
}

impl Ucsg {
    /// UCSG against CFS+OD, cell by cell (`lull_sim::ucsg::compare_cells`).
    #[must_use]
    pub fn cells(&self) -> Vec<CellComparison> {
        lull_sim::ucsg::compare_cells(&self.results)
    }

    /// The figure-8 spec's result.
    #[must_use]
    pub fn figure_8(&self) -> Option<&UcsgResult> {
        self.results
            .iter()
            .find(|r| r.header.experiment.starts_with("fig8"))
    }
}

/// `vtcfs_sim`: the painting spec, then the interbench and hackbench specs.
#[derive(Debug)]
pub struct Vtcfs {
    pub painting: PaintingResult,
    /// Wall time of the painting run, s (not in the JSON).
    pub painting_wall_s: f64,
    pub interbench: Vec<InterbenchResult>,
    pub hackbench: Vec<HackbenchResult>,
}

/// `validation`: the simulator against this machine's kernel.
#[derive(Debug)]
pub struct Validation {
    pub machine: Machine,
    pub profile: SimProfile,
    pub workloads: Vec<WorkloadComparison>,
}

/// `toggling_sim`: both toggling specs.
#[derive(Debug)]
pub struct Toggling {
    pub results: Vec<TogglingResult>,
}

/// `tlp_table`: the live table and the modelled one.
#[derive(Debug)]
pub struct Tlp {
    pub live: TlpTable,
    pub modelled: SimTable,
}

/// `controller_live`: the monitoring overhead and the live toggling table.
#[derive(Debug)]
pub struct Controller {
    pub overhead: OverheadReport,
    pub toggling: TogglingReport,
    /// Online CPUs: the CPU-bound program's threads (not in the JSON).
    pub cpus: usize,
}

/// `lab_sched`: the guest's report, how the guest ran and for how long.
#[derive(Debug)]
pub struct LabSched {
    pub report: SchedReport,
    pub accel: lull_vm::Accel,
    /// How TCG ran the guest's CPUs; `None` under KVM.
    pub tcg_threads: Option<lull_vm::TcgThreads>,
    pub guest_wall_ms: u64,
}

impl SectionData {
    /// The section's JSON.
    ///
    /// # Errors
    /// A result that does not serialise (none does; serde's error is passed on).
    pub fn to_json(&self) -> Result<Value, serde_json::Error> {
        Ok(match self {
            SectionData::Dispatch(r) => serde_json::to_value(r)?,
            SectionData::Compose(r) => serde_json::to_value(r)?,
            SectionData::Figure18(r) => serde_json::to_value(r)?,
            SectionData::LiveEsm(r) => json!({
                "tracking_20s": r.tracking_20s,
                "idle": r.idle,
                "esm_vs_baselines": r.esm_vs_baselines,
            }),
            SectionData::LiveApps(r) => serde_json::to_value(r)?,
            SectionData::Audit(r) => {
                json!({"validation": r.validation, "perturbation": r.perturbation})
            }
            SectionData::Marz(r) => Value::Object(
                r.results
                    .iter()
                    .map(|x| (x.header.experiment.clone(), x.to_json()))
                    .collect(),
            ),
            SectionData::MarzPolicies(r) => Value::Object(
                r.experiments
                    .iter()
                    .map(|(name, runs)| {
                        let per_set: Map<String, Value> = runs
                            .iter()
                            .map(|(set, x)| ((*set).to_owned(), x.to_json()))
                            .collect();
                        (name.clone(), Value::Object(per_set))
                    })
                    .collect(),
            ),
            SectionData::Ucsg(r) => ucsg_json(r),
            SectionData::Vtcfs(r) => {
                let mut all = Map::new();
                all.insert("painting".to_owned(), r.painting.to_json());
                all.insert("interbench".to_owned(), json!(r.interbench));
                all.insert("hackbench".to_owned(), json!(r.hackbench));
                Value::Object(all)
            }
            SectionData::Validation(r) => {
                validation_json(&r.machine.to_string(), &r.profile, &r.workloads)
            }
            SectionData::Toggling(r) => Value::Object(
                r.results
                    .iter()
                    .map(|x| (x.header.experiment.clone(), json!(x)))
                    .collect(),
            ),
            SectionData::TlpTable(r) => json!({"live": r.live, "modelled": r.modelled}),
            SectionData::Controller(r) => {
                json!({"overhead": r.overhead, "toggling": r.toggling})
            }
            SectionData::LabSched(r) => {
                let mut json = serde_json::to_value(&r.report)?;
                if let Some(m) = json.as_object_mut() {
                    m.insert("accel".into(), json!(r.accel));
                    m.insert(
                        "engine".into(),
                        json!(lull_vm::boot::engine(r.accel, r.tcg_threads)),
                    );
                    m.insert("guest_wall_ms".into(), json!(r.guest_wall_ms));
                }
                json
            }
        })
    }
}

/// `ucsg_sim`'s JSON: every spec's result, UCSG against CFS+OD per figure-6 cell, and figure
/// 8 over time with the seed's averages (for `lull report`'s footprint plot; only the figure-8
/// spec's samples, to keep the JSON small).
fn ucsg_json(r: &Ucsg) -> Value {
    let all: Map<String, Value> = r
        .results
        .iter()
        .map(|x| (x.header.experiment.clone(), json!(x)))
        .collect();
    let cells: Map<String, Value> = r
        .cells()
        .iter()
        .filter(|c| c.experiment.starts_with("fig6"))
        .map(|c| (c.experiment.clone(), json!(c)))
        .collect();
    let figure_8 = r.figure_8().map(|x| {
        let footprints: Map<String, Value> = x
            .models
            .iter()
            .map(|(name, m)| (name.clone(), json!(m.footprint)))
            .collect();
        json!({
            "experiment": x.header.experiment,
            "footprints": footprints,
            "seed": {
                "cfs-ondemand": {
                    "big_cluster_pct": ucsg_seed::BIG_CLUSTER_PCT.0,
                    "active_cores_mean": ucsg_seed::ACTIVE_CORES.0,
                    "freq_mhz_mean": ucsg_seed::FREQ_MHZ.0,
                },
                "ucsg": {
                    "big_cluster_pct": ucsg_seed::BIG_CLUSTER_PCT.1,
                    "active_cores_mean": ucsg_seed::ACTIVE_CORES.1,
                    "freq_mhz_mean": ucsg_seed::FREQ_MHZ.1,
                },
            },
        })
    });
    json!({ "experiments": all, "ucsg_vs_cfs_ondemand": cells, "figure_8": figure_8 })
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

/// The kernel validation's comparison as JSON: the `validation` section's, and what
/// `lull validate kernel --json` prints. `machine` is the probe's text (a saved collection's, when
/// the live figures were read back).
#[must_use]
pub fn validation_json(machine: &str, profile: &SimProfile, ws: &[WorkloadComparison]) -> Value {
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
