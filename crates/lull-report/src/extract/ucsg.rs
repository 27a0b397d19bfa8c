//! Seed 001's UCSG: the CPU footprint over time (figure 8) and our energy changes beside the
//! seed's (figure 6).

use serde_json::Value;

use super::{cell, f, no_data};
use crate::view::{Block, Footprint, Plot, PlotKind, Table};
use crate::Label;

pub(super) fn blocks(data: &Value, label: Label) -> Vec<Block> {
    let mut out = Vec::new();
    let fig8 = data.get("figure_8").filter(|v| !v.is_null());
    match fig8
        .and_then(|v| v.get("footprints"))
        .and_then(Value::as_object)
    {
        Some(fps) => {
            let models: Vec<Footprint> = fps
                .iter()
                .map(|(model, samples)| Footprint {
                    model: model.clone(),
                    samples: samples
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|s| {
                            Some((
                                f(s, "time_s")?,
                                s.get("big")?.as_bool()?,
                                f(s, "active_cores")?,
                                f(s, "freq_mhz")?,
                            ))
                        })
                        .collect(),
                })
                .filter(|m| !m.samples.is_empty())
                .collect();
            let exp = fig8
                .and_then(|v| v.get("experiment"))
                .and_then(Value::as_str)
                .unwrap_or("figure 8");
            if models.is_empty() {
                out.push(no_data(
                    "the CPU footprint",
                    "the footprints have no samples",
                ));
            } else {
                out.push(Block::Plot(Plot {
                    title: format!("{exp}: CPU footprint per model (seed 001 figure 8)"),
                    label,
                    kind: PlotKind::Footprint(models),
                }));
            }
        }
        None => out.push(no_data(
            "the CPU footprint (seed 001 figure 8)",
            "no `figure_8.footprints` in the results",
        )),
    }
    // Figure 8's averages: ours from the figure-8 experiment, the seed's from the section.
    if let Some(fig8) = fig8 {
        let exp = fig8.get("experiment").and_then(Value::as_str).unwrap_or("");
        let ours = data
            .get("experiments")
            .and_then(|e| e.get(exp))
            .and_then(|e| e.get("models"));
        let mut rows = Vec::new();
        for model in ["cfs-ondemand", "ucsg"] {
            let o = ours.and_then(|m| m.get(model));
            let s = fig8.get("seed").and_then(|s| s.get(model));
            for (what, key) in [
                ("time on the big cluster %", "big_cluster_pct"),
                ("active cores", "active_cores_mean"),
                ("frequency MHz", "freq_mhz_mean"),
            ] {
                rows.push(vec![
                    model.to_owned(),
                    what.to_owned(),
                    cell(o.and_then(|o| f(o, key))),
                    cell(s.and_then(|s| f(s, key))),
                ]);
            }
        }
        out.push(Block::Table(Table {
            title: "Figure 8 averages: ours (modelled) beside seed 001's (measured on a Galaxy S4)"
                .to_owned(),
            header: ["model", "figure", "ours", "seed 001"]
                .map(str::to_owned)
                .to_vec(),
            rows,
        }));
    }
    let cells = data.get("ucsg_vs_cfs_ondemand").and_then(Value::as_object);
    match cells {
        Some(cells) if !cells.is_empty() => {
            let rows = cells
                .iter()
                .map(|(name, c)| {
                    vec![
                        name.clone(),
                        cell(f(c, "energy_change_pct")),
                        cell(f(c, "seed_energy_change_pct")),
                        cell(f(c, "response_change_pct")),
                        cell(f(c, "zip_change_pct")),
                        cell(f(c, "ftp_change_pct")),
                    ]
                })
                .collect();
            out.push(Block::Table(Table {
                title: "Figures 6 and 7: UCSG against CFS+ondemand, change in % (ours modelled; seed 001 measured)".to_owned(),
                header: [
                    "scenario",
                    "energy, ours",
                    "energy, seed 001",
                    "response, ours",
                    "ZIP completion, ours",
                    "FTP completion, ours",
                ]
                .map(str::to_owned)
                .to_vec(),
                rows,
            }));
        }
        _ => out.push(no_data("figure 6", "no `ucsg_vs_cfs_ondemand` cells")),
    }
    out
}
