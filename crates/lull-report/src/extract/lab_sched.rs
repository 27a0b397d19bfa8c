//! lull-scx against EEVDF, scx_lavd and scx_bpfland in the lab guest (`lab_sched`): one table
//! per scenario with each scheduler's response and hogs' figures as ratios to EEVDF's, the
//! schedulers that did not run and why, and the note that TCG's times compare only as ratios.

use serde_json::Value;

use super::{array, cell, f, json_table, no_data};
use crate::view::Block;

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("?").to_owned()
}

pub(super) fn blocks(data: &Value) -> Vec<Block> {
    let mut out = Vec::new();
    if let Some(note) = data.get("note").and_then(Value::as_str) {
        out.push(Block::Note(format!(
            "Kernel {} in the lab guest ({}): {note}.",
            text(data, "kernel"),
            data.get("engine")
                .or_else(|| data.get("accel"))
                .and_then(Value::as_str)
                .unwrap_or("?")
        )));
    }
    let rounds = data
        .get("per_round")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if rounds > 1 {
        out.push(Block::Note(format!(
            "Medians over {rounds} rounds, each running every scheduler in turn; each ratio is \
             the median of the rounds' ratios to EEVDF."
        )));
    }
    let rows = array(data, "rows");
    if rows.is_empty() {
        out.push(no_data(
            "the scheduler comparison",
            "no `rows` in the results",
        ));
    }
    let mut scenarios: Vec<String> = Vec::new();
    for r in rows {
        let s = text(r, "scenario");
        if !scenarios.contains(&s) {
            scenarios.push(s);
        }
    }
    for s in scenarios {
        out.push(json_table(
            format!("{s}: response and hogs, ratios to EEVDF in the same guest run"),
            rows.iter().filter(|r| text(r, "scenario") == s),
            &[
                ("scheduler", |r| text(r, "scheduler")),
                ("mean µs", |r| cell(f(r, "response_mean_us"))),
                ("p99 µs", |r| cell(f(r, "response_p99_us"))),
                ("p99 / EEVDF", |r| cell(f(r, "p99_vs_eevdf"))),
                ("hogs M/s", |r| cell(f(r, "hog_throughput"))),
                ("hogs / EEVDF", |r| cell(f(r, "throughput_vs_eevdf"))),
                ("ZIP s", |r| cell(f(r, "zip_s"))),
                ("FTP s", |r| cell(f(r, "ftp_s"))),
                ("scheduler CPU ms", |r| cell(f(r, "scheduler_cpu_ms"))),
            ],
        ));
    }
    for key in ["skipped", "failed"] {
        for s in data
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let parts: Vec<String> = s
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| p.as_str().map_or_else(|| p.to_string(), str::to_owned))
                .collect();
            out.push(Block::Note(format!("{key}: {}.", parts.join(" — "))));
        }
    }
    out
}
