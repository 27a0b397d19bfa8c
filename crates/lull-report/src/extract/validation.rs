//! The simulator against this machine's kernel on rt-app workloads: each thread's figure
//! simulated against measured.

use serde_json::Value;

use super::{cell, f, no_data};
use crate::view::{Block, Plot, PlotKind, Series, Table};
use crate::Label;

pub(super) fn blocks(data: &Value) -> Vec<Block> {
    let Some(workloads) = data.get("workloads").and_then(Value::as_array) else {
        return vec![no_data(
            "the simulator against the kernel",
            "no `workloads`",
        )];
    };
    let mut share = Vec::new();
    let mut wake = Vec::new();
    let mut rows = Vec::new();
    for w in workloads {
        let wname = w
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned();
        let mut s_pts = Vec::new();
        let mut w_pts = Vec::new();
        for t in w
            .get("threads")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (live, sim) = (t.get("live"), t.get("sim"));
            let cpu = |v: Option<&Value>| v.and_then(|v| f(v, "cpu_share"));
            let p99 = |v: Option<&Value>| {
                v.and_then(|v| v.get("wakeup_latency_us"))
                    .and_then(|l| f(l, "p99"))
            };
            if let (Some(x), Some(y)) = (cpu(live), cpu(sim)) {
                // Shares of one CPU, in percent.
                s_pts.push((x * 100.0, y * 100.0));
            }
            if let (Some(x), Some(y)) = (p99(live), p99(sim)) {
                w_pts.push((x, y));
            }
            rows.push(vec![
                wname.clone(),
                t.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned(),
                cell(cpu(live).map(|c| c * 100.0)),
                cell(cpu(sim).map(|c| c * 100.0)),
                cell(p99(live)),
                cell(p99(sim)),
                match t.get("cpu_share_within_bound").and_then(Value::as_bool) {
                    Some(true) => "yes".to_owned(),
                    Some(false) => "no".to_owned(),
                    None => "–".to_owned(),
                },
            ]);
        }
        if !s_pts.is_empty() {
            share.push(Series {
                name: wname.clone(),
                points: s_pts,
            });
        }
        if !w_pts.is_empty() {
            wake.push(Series {
                name: wname,
                points: w_pts,
            });
        }
    }
    let mut out = Vec::new();
    for (series, title, x, y, log) in [
        (
            share,
            "CPU share per thread: simulator against kernel",
            "measured on this kernel (% of a CPU)",
            "modelled (% of a CPU)",
            false,
        ),
        (
            wake,
            "Wake-up latency p99 per thread: simulator against kernel",
            "measured on this kernel (µs)",
            "modelled (µs)",
            true,
        ),
    ] {
        if series.is_empty() {
            out.push(no_data(title, "no thread has both figures"));
        } else {
            out.push(Block::Plot(Plot {
                title: title.to_owned(),
                label: Label::MeasuredAndModelled,
                kind: PlotKind::Scatter {
                    x_label: x.to_owned(),
                    y_label: y.to_owned(),
                    log,
                    series,
                },
            }));
        }
    }
    out.push(Block::Table(Table {
        title: "Per thread".to_owned(),
        header: [
            "workload",
            "thread",
            "CPU % measured",
            "CPU % modelled",
            "wake-up p99 µs measured",
            "wake-up p99 µs modelled",
            "CPU share within bound",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows,
    }));
    out
}
