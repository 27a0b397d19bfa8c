//! Seed 004's TLP: the modelled apps' TLP over time, and seed 004's Table 1.1 beside this
//! machine's measured programs.

use serde_json::Value;

use super::{cell, f, json_table, no_data, text};
use crate::view::{Block, Plot, PlotKind, Series, Table};
use crate::Label;

/// The modelled experiments whose TLP over time the page plots: seed 004's own (the toggling
/// apps), then one of each other seed's, so the page shows each kind of workload without
/// drawing every one of the table's rows.
const TLP_PLOT_EXPERIMENTS: [&str; 4] = ["blackscholes", "vips", "tracking-20s", "fig8-video-zip"];

pub(super) fn blocks(data: &Value) -> Vec<Block> {
    let mut out = Vec::new();
    let rows = data
        .get("modelled")
        .and_then(|m| m.get("rows"))
        .and_then(Value::as_array);
    match rows {
        Some(rows) => {
            let mut plotted = 0;
            for exp in TLP_PLOT_EXPERIMENTS {
                let series: Vec<Series> = rows
                    .iter()
                    .filter(|r| r.get("experiment").and_then(Value::as_str) == Some(exp))
                    .filter_map(over_time)
                    .collect();
                if series.is_empty() {
                    continue;
                }
                plotted += 1;
                out.push(Block::Plot(Plot {
                    title: format!("{exp}: TLP over time per model"),
                    label: Label::Modelled,
                    kind: PlotKind::TimeSeries {
                        x_label: "time (s)".to_owned(),
                        y_label: "TLP".to_owned(),
                        series,
                    },
                }));
            }
            if plotted == 0 {
                out.push(no_data(
                    "TLP over time",
                    "no modelled row of the plotted experiments has a `tlp_over_time` series",
                ));
            }
            out.push(json_table(
                "Modelled apps (modelled)".to_owned(),
                rows,
                &[
                    ("experiment", |r| text(r, "experiment")),
                    ("model", |r| text(r, "model")),
                    ("TLP", |r| cell(f(r, "tlp"))),
                    ("idle fraction", |r| cell(f(r, "idle_fraction"))),
                    ("cores", |r| cell(f(r, "cores"))),
                ],
            ));
        }
        None => out.push(no_data("TLP over time", "no `modelled.rows`")),
    }
    let live = data.get("live");
    if let Some(programs) = live
        .and_then(|l| l.get("programs"))
        .and_then(Value::as_array)
    {
        out.push(json_table(
            "Programs on this machine (measured)".to_owned(),
            programs,
            &[
                ("program", |p| text(p, "name")),
                ("status", |p| text(p, "status")),
                ("TLP", |p| cell(f(p, "tlp"))),
                ("own TLP", |p| cell(f(p, "own_tlp"))),
                ("seconds", |p| cell(f(p, "seconds"))),
            ],
        ));
    }
    if let Some(seed) = live
        .and_then(|l| l.get("seed_table_1_1"))
        .and_then(Value::as_array)
    {
        let mut rows: Vec<Vec<String>> = seed
            .iter()
            .map(|s| {
                vec![
                    text(s, "category"),
                    text(s, "application"),
                    cell(f(s, "tlp")),
                ]
            })
            .collect();
        if let Some(g) = live.and_then(|l| f(l, "geomean_tlp")) {
            rows.push(vec![
                "this machine".to_owned(),
                "geometric mean of the measured programs".to_owned(),
                cell(Some(g)),
            ]);
        }
        out.push(Block::Table(Table {
            title: "Seed 004's Table 1.1 (measured on a 4+4-core Odroid running Android), and ours"
                .to_owned(),
            header: ["category", "application", "TLP"]
                .map(str::to_owned)
                .to_vec(),
            rows,
        }));
    }
    out
}

/// A row's TLP over time as a series named after its model.
fn over_time(r: &Value) -> Option<Series> {
    let window_s = f(r, "tlp_window_ms")? / 1000.0;
    let points: Vec<(f64, f64)> = r
        .get("tlp_over_time")?
        .as_array()?
        .iter()
        .enumerate()
        .filter_map(|(i, v)| Some(((i as f64 + 0.5) * window_s, v.as_f64()?)))
        .collect();
    (!points.is_empty()).then(|| Series {
        name: text(r, "model"),
        points,
    })
}
