//! `lull reproduce`: every experiment that exists, then the list of those still to come.
//!
//! Each experiment is a [`Section`]: a function that runs it and returns its table and JSON.
//! Adding an experiment means adding one entry to [`SECTIONS`] and taking its line out of
//! [`TO_COME`].

use std::process::ExitCode;

use lull_lab::bench::{self, DispatchBenchConfig};
use serde_json::{json, Value};

/// One experiment's printed table and JSON, or why it could not run on this machine.
pub struct Section {
    pub table: String,
    pub json: Value,
}

type Runner = fn() -> Result<Section, String>;

/// The experiments, in the order they run: (key in the JSON report, title, runner).
const SECTIONS: &[(&str, &str, Runner)] = &[
    ("dispatch_bench", "ESM dispatch throughput (measured in process)", dispatch_section),
    (
        "kds_compose",
        "KDS compose + draw of four full-screen 1080p layers vs memcpy (measured in process)",
        kds_compose_section,
    ),
    (
        "kds_figure18",
        "KDS figure 18: a C client composes two layers, every screen pixel checked (measured live)",
        crate::kds::reproduce_section,
    ),
    (
        "live_esm",
        "Live ESM vs pull-16ms, vsync-batched, blocking-middleware: tracking-20s and idle (measured live)",
        crate::live::reproduce_section,
    ),
    (
        "live_apps",
        "Live apps (tracking, messaging, video) under ESM+KDS+guiS vs the three baselines (measured live)",
        crate::live::apps_reproduce_section,
    ),
    (
        "audit",
        "IPSA recorder: validation and throughput perturbation (seed 002 ch. 3, measured live)",
        crate::audit::reproduce_section,
    ),
    (
        "marz_sim",
        "Seed-000 experiments on a modelled Jetson TK1: power, energy, latency (modelled)",
        marz_sim_section,
    ),
    (
        "marz_policies",
        "Seed-000 experiments under the seed's kernel (CFS + ondemand) and today's Linux (EEVDF + schedutil) (modelled)",
        policies_section,
    ),
    (
        "ucsg_sim",
        "UCSG (seed 001) on a modelled Galaxy S4: energy, response, frame rate, completion, footprints (modelled)",
        ucsg_sim_section,
    ),
    (
        "vtcfs_sim",
        "VT-CFS and the interactive boost (seed 003) on a modelled Tegra 250: painting-app response and its decomposition (modelled)",
        vtcfs_sim_section,
    ),
    (
        "validation",
        "The simulator against this machine's kernel on rt-app workloads (measured live and modelled)",
        crate::validate::reproduce_section,
    ),
    (
        "toggling_sim",
        "Seed 004's affinity and toggling schemes on a modelled Odroid-XU3: Blackscholes and Vips, figure 3.9 (modelled)",
        toggling_sim_section,
    ),
    (
        "tlp_table",
        "Seed 004's Table 1.1 on this machine: TLP of real programs (measured live) and of every modelled app (modelled)",
        crate::audit::tlp_reproduce_section,
    ),
    (
        "controller_live",
        "Seed 004's controller interface live: monitoring overhead, and the schemes against a capacity thief (measured live)",
        crate::ctl::reproduce_section,
    ),
];

/// Experiments of the seeds that Lull does not run yet, with the piece that will run them.
const TO_COME: &[(&str, &str)] = &[];

fn marz_sim_section() -> Result<Section, String> {
    let (table, json) = crate::sim::marz_section()?;
    Ok(Section { table, json })
}

fn ucsg_sim_section() -> Result<Section, String> {
    let (table, json) = crate::ucsg::reproduce_section()?;
    Ok(Section { table, json })
}

fn vtcfs_sim_section() -> Result<Section, String> {
    let (table, json) = crate::vtcfs::reproduce_section()?;
    Ok(Section { table, json })
}

fn toggling_sim_section() -> Result<Section, String> {
    let (table, json) = crate::toggling::section()?;
    Ok(Section { table, json })
}

fn policies_section() -> Result<Section, String> {
    let (table, json) = crate::sim::policies_section()?;
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

pub fn run(json_out: bool) -> ExitCode {
    let mut report = serde_json::Map::new();
    let mut failed = false;
    for (i, (key, title, runner)) in SECTIONS.iter().enumerate() {
        if !json_out {
            println!("== {}. {title} ==", i + 1);
        }
        match runner() {
            Ok(section) => {
                if !json_out {
                    println!("{}", section.table);
                }
                report.insert((*key).to_owned(), section.json);
            }
            Err(why) => {
                failed = true;
                eprintln!("lull reproduce: {title}: {why}");
                report.insert((*key).to_owned(), json!({ "error": why }));
            }
        }
    }
    let to_come: Vec<Value> = TO_COME
        .iter()
        .map(|(e, n)| json!({ "experiment": e, "needs": n }))
        .collect();
    if json_out {
        report.insert("to_come".to_owned(), Value::Array(to_come));
        println!("{}", crate::to_json(&report));
    } else {
        if !TO_COME.is_empty() {
            println!("== still to come ==");
            for (experiment, needs) in TO_COME {
                println!("- {experiment} (needs: {needs})");
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
