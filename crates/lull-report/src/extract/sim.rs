//! The seed-000 experiments on the modelled board: latency distributions, power over time, and
//! our reductions beside the seed's.

use serde_json::Value;

use super::latency::{cdf_block, cdf_series};
use super::{cell, f, no_data, num};
use crate::view::{Block, Plot, PlotKind, Series, Table};
use crate::Label;

/// Width of a bucket of the simulator's power-over-time series (`power_mw_per_100ms`, averaged
/// from its 1 ms meter samples: `lull_sim::POWER_SERIES_BUCKET_MS`), in seconds.
const POWER_BUCKET_S: f64 = 0.1;

/// `marz_sim`: per experiment, latency CDFs and power over time per model, and the table of our
/// figures with the seed's reported change beside them.
pub(super) fn marz(data: &Value, label: Label) -> Vec<Block> {
    let Some(exps) = data.as_object() else {
        return vec![no_data(
            "the seed-000 experiments",
            "the section is not an object",
        )];
    };
    let mut out = Vec::new();
    for (name, exp) in exps {
        out.push(Block::Heading(name.clone()));
        let Some(models) = exp.get("models").and_then(Value::as_object) else {
            out.push(no_data(name, "no `models`"));
            continue;
        };
        let handled = models
            .values()
            .any(|m| m.get("events_handled").and_then(Value::as_u64) > Some(0));
        if handled {
            let series = models
                .iter()
                .filter_map(|(m, r)| cdf_series(m.clone(), r.get("latency_ms")))
                .collect();
            out.push(cdf_block(
                format!("{name}: event latency per model"),
                label,
                "ms",
                series,
            ));
        } else {
            out.push(Block::Note(format!(
                "{name}: no input events, so no latency distribution."
            )));
        }
        let power: Vec<Series> = models
            .iter()
            .filter_map(|(m, r)| {
                let s = r.get("power_mw_per_100ms")?.as_array()?;
                let points: Vec<(f64, f64)> = s
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| Some(((i as f64 + 0.5) * POWER_BUCKET_S, v.as_f64()?)))
                    .collect();
                (!points.is_empty()).then(|| Series {
                    name: m.clone(),
                    points,
                })
            })
            .collect();
        if power.is_empty() {
            out.push(no_data(
                &format!("{name}: power over time"),
                "no `power_mw_per_100ms` series in the results",
            ));
        } else {
            out.push(Block::Plot(Plot {
                title: format!("{name}: board power per model, 100 ms means of 1 ms samples"),
                label,
                kind: PlotKind::TimeSeries {
                    x_label: "time (s)".to_owned(),
                    y_label: "power (mW)".to_owned(),
                    series: power,
                },
            }));
        }
        out.push(Block::Table(figures_table(name, exp, models)));
        if let Some(seed) = exp.get("seed_000_reported_vs_pull").and_then(Value::as_str) {
            out.push(Block::Table(Table {
                title: format!(
                    "{name}: seed 000's figure (measured on its board, ESM+KDS+guiS vs pull)"
                ),
                header: vec!["experiment".to_owned(), "seed 000 reports".to_owned()],
                rows: vec![vec![name.clone(), seed.to_owned()]],
            }));
        }
    }
    out
}

/// Our figures per model, the change of ours against each baseline, and the seed's line.
fn figures_table(name: &str, exp: &Value, models: &serde_json::Map<String, Value>) -> Table {
    // `reduction_of` is {OURS: {BASELINE: {power_reduction_pct, mean_latency_change_ms}}}.
    let reductions = exp
        .get("reduction_of")
        .and_then(Value::as_object)
        .and_then(|m| m.values().next());
    let rows: Vec<Vec<String>> = models
        .iter()
        .map(|(m, r)| {
            let red = reductions.and_then(|x| x.get(m));
            let lat = r.get("latency_ms");
            vec![
                m.clone(),
                cell(f(r, "power_mw_mean")),
                cell(f(r, "energy_mj")),
                cell(lat.and_then(|l| f(l, "mean"))),
                cell(lat.and_then(|l| f(l, "p99"))),
                red.and_then(|x| f(x, "power_reduction_pct"))
                    .map_or_else(|| "–".to_owned(), |p| format!("{} %", num(p))),
                cell(red.and_then(|x| f(x, "mean_latency_change_ms"))),
            ]
        })
        .collect();
    Table {
        title: format!("{name}: ours (modelled)"),
        header: [
            "model",
            "power mW",
            "energy mJ",
            "latency mean ms",
            "latency p99 ms",
            "ours: power saved vs this model",
            "ours: mean latency change ms",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows,
    }
}

/// `marz_policies`: each experiment and model under the seed's kernel and today's Linux.
pub(super) fn policies(data: &Value) -> Vec<Block> {
    let Some(exps) = data.as_object() else {
        return vec![no_data("the policy sets", "the section is not an object")];
    };
    let mut rows = Vec::new();
    for (name, sets) in exps {
        for (set, r) in sets.as_object().into_iter().flatten() {
            for (model, m) in r
                .get("models")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                let lat = m.get("latency_ms");
                rows.push(vec![
                    name.clone(),
                    model.clone(),
                    set.clone(),
                    cell(f(m, "power_mw_mean")),
                    cell(lat.and_then(|l| f(l, "mean"))),
                    cell(lat.and_then(|l| f(l, "p99"))),
                ]);
            }
        }
    }
    vec![Block::Table(Table {
        title: "Per experiment, model and policy set".to_owned(),
        header: [
            "experiment",
            "model",
            "policies",
            "power mW",
            "latency mean ms",
            "latency p99 ms",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows,
    })]
}
