//! Latency distributions: the live ESM section, the live apps and seed 003's painting app.

use lull_model::stats::CDF_PERCENTS;
use serde_json::Value;

use super::{cell, f, name_of, no_data};
use crate::view::{Block, Plot, PlotKind, Series, Table};
use crate::Label;

/// A CDF series from a `cdf` array (values at [`CDF_PERCENTS`]); `None` when it is missing,
/// empty or not of that length.
pub(super) fn cdf_series(name: String, stats: Option<&Value>) -> Option<Series> {
    let cdf = stats?.get("cdf")?.as_array()?;
    if cdf.len() != CDF_PERCENTS.len() {
        return None;
    }
    let points = cdf
        .iter()
        .zip(CDF_PERCENTS)
        .map(|(v, p)| Some((v.as_f64()?, f64::from(p))))
        .collect::<Option<Vec<_>>>()?;
    Some(Series { name, points })
}

/// A CDF plot of `series`, or a note when none has a distribution.
pub(super) fn cdf_block(title: String, label: Label, unit: &str, series: Vec<Series>) -> Block {
    if series.is_empty() {
        return no_data(
            &title,
            "no latency distribution (`cdf`) in the results; they predate it or no event was handled",
        );
    }
    Block::Plot(Plot {
        title,
        label,
        kind: PlotKind::Cdf {
            unit: unit.to_owned(),
            series,
        },
    })
}

/// `live_esm`: tracking-20s latency per model, and the idle runs' wake-ups.
pub(super) fn live_esm(data: &Value, label: Label) -> Vec<Block> {
    let runs = data.get("tracking_20s").and_then(Value::as_array);
    let Some(runs) = runs else {
        return vec![no_data("latency per model", "no `tracking_20s` runs")];
    };
    let series = runs
        .iter()
        .filter_map(|r| cdf_series(name_of(r.get("model")), r.get("latency_us")))
        .collect();
    let mut rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let l = r.get("latency_us");
            let at = |k| l.and_then(|l| f(l, k));
            vec![
                name_of(r.get("model")),
                name_of(r.get("workload")),
                cell(at("mean")),
                cell(at("p50")),
                cell(at("p99")),
                cell(at("max")),
                cell(f(r, "wakeups_per_s")),
                cell(f(r, "cpu_ms")),
            ]
        })
        .collect();
    for r in data
        .get("idle")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        rows.push(vec![
            name_of(r.get("model")),
            name_of(r.get("workload")),
            "–".into(),
            "–".into(),
            "–".into(),
            "–".into(),
            cell(f(r, "wakeups_per_s")),
            cell(f(r, "cpu_ms")),
        ]);
    }
    vec![
        cdf_block(
            "Event latency per model, tracking-20s".to_owned(),
            label,
            "µs",
            series,
        ),
        Block::Table(Table {
            title: "Per model".to_owned(),
            header: [
                "model",
                "workload",
                "mean µs",
                "p50 µs",
                "p99 µs",
                "max µs",
                "wake-ups/s",
                "CPU ms",
            ]
            .map(str::to_owned)
            .to_vec(),
            rows,
        }),
    ]
}

/// `live_apps`: each app's latency per model.
pub(super) fn live_apps(data: &Value, label: Label) -> Vec<Block> {
    let Some(apps) = data.get("apps").and_then(Value::as_array) else {
        return vec![no_data("latency per app", "no `apps`")];
    };
    let mut out = Vec::new();
    let mut rows = Vec::new();
    for a in apps {
        let app = name_of(a.get("app"));
        out.push(Block::Heading(app.clone()));
        let runs = a.get("runs").and_then(Value::as_array);
        let series = runs
            .into_iter()
            .flatten()
            .filter_map(|r| cdf_series(name_of(r.get("model")), r.get("latency_us")))
            .collect();
        let handled = runs.into_iter().flatten().any(|r| {
            r.get("latency_us")
                .and_then(|l| l.get("count"))
                .and_then(Value::as_u64)
                != Some(0)
        });
        if handled {
            out.push(cdf_block(
                format!("{app}: event latency per model"),
                label,
                "µs",
                series,
            ));
        } else {
            out.push(Block::Note(format!(
                "{app}: no input events, so no latency distribution."
            )));
        }
        for r in runs.into_iter().flatten() {
            let l = r.get("latency_us");
            let at = |k| l.and_then(|l| f(l, k));
            rows.push(vec![
                app.clone(),
                name_of(r.get("model")),
                cell(at("mean")),
                cell(at("p99")),
                cell(f(r, "wakeups_per_s")),
                cell(r.get("frames_drawn").and_then(Value::as_f64)),
            ]);
        }
    }
    out.push(Block::Table(Table {
        title: "Per app and model".to_owned(),
        header: ["app", "model", "mean µs", "p99 µs", "wake-ups/s", "frames"]
            .map(str::to_owned)
            .to_vec(),
        rows,
    }));
    out
}

/// `vtcfs_sim`: the painting app's response time per model (seed 003).
pub(super) fn vtcfs(data: &Value, label: Label) -> Vec<Block> {
    // The painting result's models, wherever the section nests them.
    let models = data
        .get("painting")
        .and_then(|p| p.get("models"))
        .or_else(|| data.get("models"))
        .and_then(Value::as_object);
    let Some(models) = models else {
        return vec![no_data(
            "the painting app's response time",
            "no painting models",
        )];
    };
    let series = models
        .iter()
        .filter_map(|(name, m)| cdf_series(name.clone(), m.get("response_ms")))
        .collect();
    let rows = models
        .iter()
        .map(|(name, m)| {
            let r = m.get("response_ms");
            let at = |k| r.and_then(|r| f(r, k));
            vec![
                name.clone(),
                cell(at("mean")),
                cell(at("p99")),
                cell(at("max")),
            ]
        })
        .collect();
    vec![
        cdf_block(
            "Painting app: response time per model".to_owned(),
            label,
            "ms",
            series,
        ),
        Block::Table(Table {
            title: "Response time per model".to_owned(),
            header: ["model", "mean ms", "p99 ms", "max ms"]
                .map(str::to_owned)
                .to_vec(),
            rows,
        }),
    ]
}
