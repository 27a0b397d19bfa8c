//! Seed 004's affinity and toggling schemes, modelled (`toggling_sim`): figure 3.9's speedup per
//! scheme as bars for each program, our runs as a table, each run's threads on the cores over
//! time (figures 3.1–3.8), and what seed 004 states about figure 3.9 and figures 3.1–3.8 beside
//! our figures.

use serde_json::{Map, Value};

use super::{array, bars_or_no_data, cell, cores, f, json_table, no_data, num};
use crate::view::{Bar, Block, Plot, Table};
use crate::Label;

pub(super) fn blocks(data: &Value, label: Label) -> Vec<Block> {
    // One experiment per program: the objects that carry a `models` list.
    let programs: Vec<(&String, &Value)> = data
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, v)| v.get("models").is_some())
        .collect();
    if programs.is_empty() {
        return vec![no_data(
            "the speedup per scheme (seed 004 figure 3.9)",
            "no program with `models` in the results",
        )];
    }
    let mut out = Vec::new();
    let mut seed: Option<&Map<String, Value>> = None;
    for (name, exp) in &programs {
        out.push(Block::Heading((*name).clone()));
        let models = array(exp, "models");
        let bars: Vec<Bar> = models
            .iter()
            .filter_map(|m| {
                Some(Bar {
                    name: m.get("model")?.as_str()?.to_owned(),
                    value: f(m, "speedup_pct")?,
                    range: None,
                })
            })
            .collect();
        out.push(bars_or_no_data(
            format!("{name}: speedup against the baseline per scheme (seed 004 figure 3.9)"),
            label,
            "speedup (%)",
            bars,
            &format!("{name}'s speedup per scheme"),
            "no model with a `speedup_pct`",
        ));
        if !models.is_empty() {
            out.push(json_table(
                format!("{name}: each scheme's run ({label})"),
                models,
                &[
                    ("scheme", |m| super::name_of(m.get("model"))),
                    ("completion s", |m| cell(f(m, "completion_s"))),
                    ("speedup %", |m| cell(f(m, "speedup_pct"))),
                    ("energy mJ", |m| cell(f(m, "energy_mj"))),
                    ("migrations", |m| cell(f(m, "migrations"))),
                    ("end spread s", |m| cell(f(m, "end_spread_s"))),
                ],
            ));
        }
        out.extend(core_plots(name, exp, models, label));
        seed = seed.or_else(|| exp.get("seed_figure_3_9").and_then(Value::as_object));
    }
    match seed {
        Some(seed) => out.extend(seed_tables(seed, &programs, label)),
        None => out.push(Block::Note(
            "The results carry no `seed_figure_3_9`: seed 004's statements are not shown."
                .to_owned(),
        )),
    }
    out
}

/// Why a model of a toggling experiment has no core-over-time SVG.
#[derive(Debug, thiserror::Error)]
pub enum NoCoreSvg {
    /// The results do not let it be drawn (unusable CPU lists, a core outside them); the text
    /// says why, as the report's note does.
    #[error("{0}")]
    NoData(String),
    #[error(transparent)]
    Draw(#[from] crate::plots::PlotError),
    /// The extractor gave a block that is not a plot (a bug).
    #[error("unexpected block {0}")]
    Unexpected(String),
}

/// The core-over-time SVG of every model of one toggling experiment's JSON (the shape of
/// `lull sim run --json` on a toggling spec), for `lull sim run --plot`: the same drawing the
/// report makes. Per model its name and its SVG, or why it has none.
pub fn core_svgs(exp: &Value) -> Vec<(String, Result<String, NoCoreSvg>)> {
    let program = exp.get("experiment").and_then(Value::as_str).unwrap_or("?");
    let models = array(exp, "models");
    let names = models.iter().map(|m| super::name_of(m.get("model")));
    let blocks = match core_plots(program, exp, models, Label::Modelled).pop() {
        Some(Block::Fold { blocks, .. }) => blocks,
        // The experiment's CPU lists are unusable: no model gets a plot.
        Some(Block::NoData(why)) => {
            return names
                .map(|n| (n, Err(NoCoreSvg::NoData(why.clone()))))
                .collect()
        }
        _ => Vec::new(),
    };
    names
        .zip(blocks)
        .map(|(model, block)| {
            let svg = match block {
                Block::Plot(plot) => crate::plots::draw(&plot).map_err(NoCoreSvg::from),
                Block::NoData(why) => Err(NoCoreSvg::NoData(why)),
                other => Err(NoCoreSvg::Unexpected(format!("{other:?}"))),
            };
            (model, svg)
        })
        .collect()
}

/// One core-over-time plot per model of `program` (seed 004 figures 3.1–3.8), each naming the
/// seed's figure of the same program and scheme where the results list one.
fn core_plots(program: &str, exp: &Value, models: &[Value], label: Label) -> Vec<Block> {
    if models.is_empty() {
        return Vec::new();
    }
    let what = format!("{program}'s threads on the cores over time (seed 004 figures 3.1–3.8)");
    let (fast, slow) = match cores::cpus(exp) {
        Ok(sets) => sets,
        Err(e) => return vec![no_data(&what, &e.to_string())],
    };
    let figures = exp
        .get("seed_figure_3_9")
        .and_then(|s| s.get("figures"))
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut out = Vec::with_capacity(models.len());
    for m in models {
        let model = super::name_of(m.get("model"));
        let figure = figures
            .iter()
            .find(|f| {
                f.get("program").and_then(Value::as_str) == Some(program)
                    && f.get("model").and_then(Value::as_str) == Some(model.as_str())
            })
            .and_then(|f| f.get("figure").and_then(Value::as_str))
            .map_or_else(
                || "as seed 004 figures 3.1–3.8".to_owned(),
                |f| format!("seed 004 figure {f}"),
            );
        match cores::kind(m, &fast, &slow) {
            Ok(kind) => out.push(Block::Plot(Plot {
                title: format!("{program} under {model}: threads' cores over time ({figure})"),
                label,
                kind,
            })),
            Err(e) => out.push(no_data(
                &format!("{program} under {model}: threads' cores over time"),
                &e.to_string(),
            )),
        }
    }
    vec![Block::Fold {
        summary: format!(
            "{program}: each thread's core over time under each scheme, {} plots (seed 004 \
             figures 3.1–3.8; a lane per CPU, a dot where a thread ended)",
            models.len()
        ),
        blocks: out,
    }]
}

/// Figure 3.9's statement (best scheme, largest speedup) beside ours per program, and what the
/// seed's text says figures 3.1–3.8 show beside our thread end spread for that scheme.
fn seed_tables(
    seed: &Map<String, Value>,
    programs: &[(&String, &Value)],
    label: Label,
) -> Vec<Block> {
    let seed_best = seed
        .get("best_model")
        .and_then(Value::as_str)
        .unwrap_or("–");
    let seed_max = cell(seed.get("max_speedup_pct").and_then(Value::as_f64));
    let mut rows = Vec::new();
    for (name, exp) in programs {
        let best = exp
            .get("models")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| Some((m.get("model")?.as_str()?, f(m, "speedup_pct")?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        rows.push(vec![
            (*name).clone(),
            best.map_or_else(|| "–".to_owned(), |b| b.0.to_owned()),
            best.map_or_else(|| "–".to_owned(), |b| num(b.1)),
            seed_best.to_owned(),
            seed_max.clone(),
        ]);
    }
    let mut out = vec![Block::Table(Table {
        title: format!(
            "Figure 3.9: the fastest scheme, ours ({label}) beside seed 004's (measured on an \
             Odroid-XU3; the text gives only the best scheme and the largest speedup)"
        ),
        header: [
            "program",
            "fastest, ours",
            "its speedup %, ours",
            "fastest, seed 004",
            "up to %, seed 004",
        ]
        .map(str::to_owned)
        .to_vec(),
        rows,
    })];
    let figures = seed.get("figures").and_then(Value::as_array);
    if let Some(figures) = figures.filter(|f| !f.is_empty()) {
        let ours = |program: &str, model: &str| {
            programs
                .iter()
                .find(|(n, _)| n.as_str() == program)
                .and_then(|(_, e)| e.get("models"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|m| m.get("model").and_then(Value::as_str) == Some(model))
                .and_then(|m| f(m, "end_spread_s"))
        };
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("–").to_owned();
        out.push(Block::Table(Table {
            title: format!(
                "Figures 3.1–3.8: what seed 004's text says each shows, beside how far apart our \
                 threads ended ({label})"
            ),
            header: [
                "figure",
                "program",
                "scheme",
                "seed 004",
                "end spread s, ours",
            ]
            .map(str::to_owned)
            .to_vec(),
            rows: figures
                .iter()
                .map(|fig| {
                    let (program, model) = (text(fig, "program"), text(fig, "model"));
                    vec![
                        text(fig, "figure"),
                        program.clone(),
                        model.clone(),
                        text(fig, "shows"),
                        cell(ours(&program, &model)),
                    ]
                })
                .collect(),
        }));
    }
    out
}
