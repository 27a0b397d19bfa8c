//! Seed 003's benchmarks in the simulator — interbench (figure 7) and hackbench (table IV):
//! the tables of `lull sim run` and of `lull reproduce`'s `vtcfs_sim` rows. Parsing and printing only; the models live in
//! `lull_sim::interbench` and `lull_sim::hackbench`.

use std::fmt::Write as _;

use lull_sim::hackbench::HackbenchResult;
use lull_sim::interbench::InterbenchResult;

use crate::output::figure;

/// The table of one interbench spec: latency mean and max per model and load, then each model's
/// largest maximum beside the seed's where its text states one.
#[must_use]
pub fn interbench_table(r: &InterbenchResult) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} — {} (modelled on {}, {} s × {}, seed {})",
        r.experiment, r.description, r.platform, r.duration_s, r.repeats, r.seed
    );
    let _ = writeln!(
        t,
        "{:<11} {:<8} {:>9} {:>9} {:>8} {:>9} {:>10} {:>9}",
        "model", "load", "lat mean", "lat max", "samples", "% CPU", "% met", "swap MiB"
    );
    for c in &r.cells {
        let _ = writeln!(
            t,
            "{:<11} {:<8} {:>9.3} {:>9.3} {:>8} {:>9.1} {:>10} {:>9}",
            c.model,
            c.load,
            c.latency_ms.mean,
            c.latency_ms.max,
            c.samples,
            c.desired_cpu_pct,
            figure(c.deadlines_met_pct, 1),
            c.swap_mib
                .map_or_else(|| "-".to_owned(), |(o, i)| format!("{o}/{i}"))
        );
    }
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
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} — {} (modelled on {}, {} loops × {} fds × {} B, seed {})",
        r.experiment, r.description, r.platform, r.loops, r.fds, r.datasize, r.seed
    );
    let _ = writeln!(
        t,
        "{:<11} {:<7} {:>6} {:>7} {:>10} {:>10} {:>10}",
        "model", "via", "pairs", "groups", "elapsed s", "messages", "switches"
    );
    for x in &r.runs {
        let _ = writeln!(
            t,
            "{:<11} {:<7} {:>6} {:>7} {:>10.4} {:>10} {:>10}",
            x.model,
            x.transport.name(),
            x.pairs,
            x.groups,
            x.elapsed_s,
            x.messages,
            x.context_switches
        );
    }
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
