//! Seed 003's benchmarks in the simulator — interbench (figure 7) and hackbench (table IV):
//! the tables of `lull sim run` and of `lull reproduce`'s `vtcfs_sim` rows. Parsing and printing only; the models live in
//! `lull_sim::interbench` and `lull_sim::hackbench`.

use std::fmt::Write as _;

use lull_sim::hackbench::HackbenchResult;
use lull_sim::interbench::InterbenchResult;

use crate::output::{self, figure, fixed, Col};

/// The columns of an interbench spec's table, one row per model and load.
const INTERBENCH_COLS: [Col; 8] = [
    Col::Left("model", 11),
    Col::Left("load", 8),
    Col::Right("lat mean", 9),
    Col::Right("lat max", 9),
    Col::Right("samples", 8),
    Col::Right("% CPU", 9),
    Col::Right("% met", 10),
    Col::Right("swap MiB", 9),
];

/// The columns of a hackbench spec's table, one row per model, transport and pair count.
const HACKBENCH_COLS: [Col; 7] = [
    Col::Left("model", 11),
    Col::Left("via", 7),
    Col::Right("pairs", 6),
    Col::Right("groups", 7),
    Col::Right("elapsed s", 10),
    Col::Right("messages", 10),
    Col::Right("switches", 10),
];

/// The table of one interbench spec: latency mean and max per model and load, then each model's
/// largest maximum beside the seed's where its text states one.
#[must_use]
pub fn interbench_table(r: &InterbenchResult) -> String {
    let details = format!("{} s × {}, seed {}", r.duration_s, r.repeats, r.header.seed);
    let mut t = output::modelled_table(
        &r.header,
        &details,
        &INTERBENCH_COLS,
        r.cells.iter().map(|c| {
            [
                c.model.clone(),
                c.load.clone(),
                fixed(c.latency_ms.mean, 3),
                fixed(c.latency_ms.max, 3),
                c.samples.to_string(),
                fixed(c.desired_cpu_pct, 1),
                figure(c.deadlines_met_pct, 1),
                c.swap_mib
                    .map_or_else(|| "-".to_owned(), |(o, i)| format!("{o}/{i}")),
            ]
        }),
    );
    let _ = writeln!(
        t,
        "largest max over the loads, ms (modelled | seed 003 fig. 7 where its text states it):"
    );
    for s in &r.seed_figure_7 {
        let _ = writeln!(
            t,
            "  {:<11} {:>9.3} | {}",
            s.model,
            s.modelled_max_ms,
            figure(s.seed_max_ms, 2)
        );
    }
    if !r.seed_panel_numbers_ms.is_empty() {
        let nums: Vec<String> = r
            .seed_panel_numbers_ms
            .iter()
            .map(ToString::to_string)
            .collect();
        let _ = writeln!(
            t,
            "  seed panel's printed maxima, bars unreadable (uncertain): {}",
            nums.join(" ")
        );
    }
    t
}

/// The table of one hackbench spec: each model's elapsed time, messages and switches per
/// transport and pair count, with the seed's overheads beside.
#[must_use]
pub fn hackbench_table(r: &HackbenchResult) -> String {
    let details = format!(
        "{} loops × {} fds × {} B, seed {}",
        r.loops, r.fds, r.datasize, r.header.seed
    );
    let mut t = output::modelled_table(
        &r.header,
        &details,
        &HACKBENCH_COLS,
        r.runs.iter().map(|x| {
            [
                x.model.clone(),
                x.transport.name().to_owned(),
                x.pairs.to_string(),
                x.groups.to_string(),
                fixed(x.elapsed_s, 4),
                x.messages.to_string(),
                x.context_switches.to_string(),
            ]
        }),
    );
    if !r.overheads.is_empty() {
        let _ = writeln!(
            t,
            "overhead over the first model (modelled | seed 003 table IV: CFS -> VT-CFS T=5 ms, s, %):"
        );
        for o in &r.overheads {
            let seed = o.seed.map_or_else(
                || "-".to_owned(),
                |s| {
                    format!(
                        "{:.3} -> {:.3} s ({:+.2} %)",
                        s.cfs_s,
                        s.vtcfs_s,
                        s.overhead_pct()
                    )
                },
            );
            let _ = writeln!(
                t,
                "  {:<11} vs {:<6} {:<7} {:>4} pairs {:>+7.2} % (switches {:>+7.1} %) | {seed}",
                o.model,
                o.baseline,
                o.transport.name(),
                o.pairs,
                o.overhead_pct,
                o.switches_change_pct
            );
        }
        for m in &r.mean_overheads {
            let _ = writeln!(
                t,
                "  mean {:<11} {:<7} {:>+7.2} % | seed {:.2} %",
                m.model,
                m.transport.name(),
                m.overhead_pct,
                m.seed_pct
            );
        }
    }
    t
}
