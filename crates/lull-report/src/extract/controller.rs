//! Seed 004's controller on this machine (`controller_live`): the live toggling table's
//! completion time per policy as bars, the table itself, and the monitoring's cost beside the
//! seed's ≈ 3 %.

use serde_json::Value;

use super::{array, bars_or_no_data, cell, f, json_table, no_data, text};
use crate::view::{Bar, Block, Table};
use crate::Label;

pub(super) fn blocks(data: &Value, label: Label) -> Vec<Block> {
    let mut out = Vec::new();
    let toggling = data.get("toggling").filter(|v| v.is_object());
    let workloads = toggling
        .and_then(|t| t.get("workloads"))
        .and_then(Value::as_array);
    match workloads {
        Some(ws) if !ws.is_empty() => {
            let reps = toggling.and_then(|t| f(t, "reps"));
            for w in ws {
                out.extend(workload(w, reps, label));
            }
        }
        _ => out.push(no_data(
            "the live completion time per policy",
            "no `toggling.workloads` in the results",
        )),
    }
    for s in toggling
        .and_then(|t| t.get("skipped"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.push(Block::Note(format!(
            "Workload {} not run: {}.",
            text(s, "workload"),
            text(s, "why")
        )));
    }
    out.push(overhead_table(
        data,
        workloads.map_or(&[][..], Vec::as_slice),
    ));
    out
}

/// A row's completion time figure `k` (`median`, `min`, `max`), s.
fn completion(r: &Value, k: &str) -> Option<f64> {
    r.get("completion_s").and_then(|c| f(c, k))
}

/// One workload's bars (median completion per policy, whiskers from the fastest to the slowest
/// run) and its table.
fn workload(w: &Value, reps: Option<f64>, label: Label) -> Vec<Block> {
    let name = text(w, "name");
    let rows = array(w, "rows");
    let bars: Vec<Bar> = rows
        .iter()
        .filter_map(|r| {
            let range = completion(r, "min").zip(completion(r, "max"));
            Some(Bar {
                name: r.get("policy")?.as_str()?.to_owned(),
                value: completion(r, "median")?,
                // One run has no spread to show.
                range: range.filter(|(lo, hi)| lo < hi),
            })
        })
        .collect();
    let mut out = vec![Block::Heading(name.clone())];
    let runs = match reps {
        Some(1.0) => ", one run per policy".to_owned(),
        Some(r) => format!(", median of {} runs", cell(Some(r))),
        None => String::new(),
    };
    out.push(bars_or_no_data(
        format!("{name}: completion time per policy{runs}"),
        label,
        "completion (s)",
        bars,
        &format!("{name}'s completion time per policy"),
        "no row with a `completion_s.median`",
    ));
    if !rows.is_empty() {
        out.push(json_table(
            format!("{name}: each policy's runs ({label})"),
            rows,
            &[
                ("policy", |r| text(r, "policy")),
                ("median s", |r| cell(completion(r, "median"))),
                ("min s", |r| cell(completion(r, "min"))),
                ("max s", |r| cell(completion(r, "max"))),
                ("speedup %", |r| cell(f(r, "speedup_pct"))),
                ("thread spread s", |r| cell(f(r, "thread_spread_s"))),
                ("masks", |r| cell(f(r, "masks"))),
            ],
        ));
    }
    out
}

/// The monitoring's cost, ours (measured) beside seed 004's statement where the JSON carries it.
fn overhead_table(data: &Value, workloads: &[Value]) -> Block {
    let o = data.get("overhead").filter(|v| v.is_object());
    let seed = o.and_then(|o| f(o, "seed_overhead_pct"));
    let mut rows = Vec::new();
    if let Some(o) = o {
        rows.push(vec![
            format!(
                "CPU-bound program watched every {} ms against plain, slowdown %",
                cell(f(o, "interval_ns").map(|ns| ns / 1e6))
            ),
            cell(f(o, "slowdown_pct")),
            cell(seed),
        ]);
        rows.push(vec![
            "one thread's sample, ns".to_owned(),
            cell(f(o, "sample_ns_per_thread")),
            "–".to_owned(),
        ]);
    }
    for w in workloads {
        if let Some(pct) = f(w, "monitoring_overhead_pct") {
            rows.push(vec![
                format!(
                    "{}: baseline (monitoring only) against no controller, %",
                    text(w, "name")
                ),
                cell(Some(pct)),
                cell(seed),
            ]);
        }
    }
    if rows.is_empty() {
        return no_data("the monitoring overhead", "no `overhead` in the results");
    }
    Block::Table(Table {
        title: "The monitoring's cost: ours (measured) beside seed 004's (about, measured on an Odroid-XU3)"
            .to_owned(),
        header: ["figure", "ours", "seed 004"].map(str::to_owned).to_vec(),
        rows,
    })
}
