//! `lull reproduce`: every experiment that exists, then the list of those still to come.

use std::process::ExitCode;

use lull_linux::bench::{self, DispatchBenchConfig};
use serde::Serialize;

/// Experiments of the seeds that Lull does not run yet, with the piece that will run them.
const TO_COME: &[(&str, &str)] = &[
    ("live ESM latency and idle wakeups vs pull-16ms, vsync-batched, blocking-middleware", "lulld, client library and event sources"),
    ("KDS figure-18 composition and compositor throughput", "KDS display server"),
    ("tracking, messaging and video apps under ESM+KDS+guiS and the baselines, live", "guiS live"),
    ("seed-000 experiments on a modelled Jetson TK1: power, energy, latency", "simulator"),
    ("IPSA recorder validation and perturbation; TLP and latency analyses", "scheduler audit"),
    ("UCSG on a modelled big.LITTLE phone; VT-CFS interactive boost", "scheduler policies"),
];

#[derive(Serialize)]
struct Report {
    dispatch_bench: bench::DispatchBench,
    to_come: Vec<ToCome>,
}

#[derive(Serialize)]
struct ToCome {
    experiment: &'static str,
    needs: &'static str,
}

pub fn run(json: bool) -> ExitCode {
    if !json {
        println!("== 1. ESM dispatch throughput (measured) ==");
    }
    let dispatch = bench::dispatch(&DispatchBenchConfig::default());
    if json {
        let report = Report {
            dispatch_bench: dispatch,
            to_come: TO_COME.iter().map(|&(experiment, needs)| ToCome { experiment, needs }).collect(),
        };
        println!("{}", crate::to_json(&report));
        return ExitCode::SUCCESS;
    }
    crate::print_dispatch(&dispatch);
    println!();
    println!("== still to come ==");
    for (experiment, needs) in TO_COME {
        println!("- {experiment} (needs: {needs})");
    }
    ExitCode::SUCCESS
}
