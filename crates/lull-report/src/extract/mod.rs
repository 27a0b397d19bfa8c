//! From a section's JSON to what the page shows ([`Block`]s). One function per section kind; a
//! section with no extractor of its own gets its top-level figures as a table. Every extractor
//! reads the JSON defensively: a missing or malformed field becomes a note saying which plot has
//! no data, never a panic.

mod controller;
mod cores;
mod lab_sched;
mod latency;
mod sim;
mod tlp;
mod toggling;

pub use toggling::{core_svgs, NoCoreSvg};
mod ucsg;
mod validation;

use serde_json::Value;

use crate::view::{Bar, Block, Plot, PlotKind, Table};
use crate::{Label, ResultFile};

/// Most rows of the generic figures table: enough for every scalar of a benchmark section.
const MAX_GENERIC_ROWS: usize = 40;

/// The blocks of one section that ran (`file.data()` is `Some`); empty for an error section.
#[must_use]
pub fn blocks(file: &ResultFile) -> Vec<Block> {
    let Some(data) = file.data() else {
        return Vec::new();
    };
    let label = file.label;
    match file.section.as_str() {
        "live_esm" => latency::live_esm(data, label),
        "live_apps" => latency::live_apps(data, label),
        "vtcfs_sim" => latency::vtcfs(data, label),
        "marz_sim" => sim::marz(data, label),
        "marz_policies" => sim::policies(data),
        "ucsg_sim" => ucsg::blocks(data, label),
        "validation" => validation::blocks(data),
        "tlp_table" => tlp::blocks(data),
        "toggling_sim" => toggling::blocks(data, label),
        "controller_live" => controller::blocks(data, label),
        "lab_sched" => lab_sched::blocks(data),
        _ => generic(data),
    }
}

/// The section's scalar figures, two levels deep, as a table.
fn generic(data: &Value) -> Vec<Block> {
    let mut rows = Vec::new();
    let mut push = |key: String, v: &Value| {
        if let Some(text) = scalar(v) {
            rows.push(vec![key, text]);
        }
    };
    match data {
        Value::Object(m) => {
            for (k, v) in m {
                match v {
                    Value::Object(inner) => {
                        for (k2, v2) in inner {
                            push(format!("{k}.{k2}"), v2);
                        }
                    }
                    _ => push(k.clone(), v),
                }
            }
        }
        other => push("value".to_owned(), other),
    }
    if rows.is_empty() {
        return vec![Block::Note(
            "No plot for this experiment; its figures are nested below the top level of its JSON (see the results file).".to_owned(),
        )];
    }
    let more = rows.len().saturating_sub(MAX_GENERIC_ROWS);
    rows.truncate(MAX_GENERIC_ROWS);
    let mut out = vec![Block::Table(Table {
        title: "Figures".to_owned(),
        header: vec!["figure".to_owned(), "value".to_owned()],
        rows,
    })];
    if more > 0 {
        out.push(Block::Note(format!(
            "{more} more figures in the results file."
        )));
    }
    out
}

/// A JSON scalar as table text; `None` for arrays and objects.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::Null => Some("–".to_owned()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.as_f64().map_or_else(|| n.to_string(), num)),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// A number for a table: whole units from 100 (and for whole numbers), one decimal from 10, two
/// below.
fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "–".to_owned()
    } else if a >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `v` at `key` as a number, if it is one.
fn f(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// A column of a table made of JSON rows: its header and how its cell is read from a row, side
/// by side so that they cannot drift apart.
type Column = (&'static str, fn(&Value) -> String);

/// A table titled `title` of one line per row of `rows`, its cells read by `columns`.
fn json_table<'a>(
    title: String,
    rows: impl IntoIterator<Item = &'a Value>,
    columns: &[Column],
) -> Block {
    Block::Table(Table {
        title,
        header: columns.iter().map(|(h, _)| (*h).to_owned()).collect(),
        rows: rows
            .into_iter()
            .map(|r| columns.iter().map(|(_, read)| read(r)).collect())
            .collect(),
    })
}

/// A table cell for `v` at `key`: a string as it is, a missing value or null as "–", anything
/// else as its JSON.
fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "–".to_owned(),
        Some(other) => other.to_string(),
    }
}

/// A table cell for an optional number.
fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_owned(), num)
}

/// A note for a plot the JSON has no data for.
fn no_data(plot: &str, why: &str) -> Block {
    Block::NoData(format!("No data for the plot of {plot}: {why}."))
}

/// A bar plot titled `title`, or, without a bar, the [`no_data`] note for the plot of `plot`
/// saying `why`.
fn bars_or_no_data(
    title: String,
    label: Label,
    y_label: &str,
    bars: Vec<Bar>,
    plot: &str,
    why: &str,
) -> Block {
    if bars.is_empty() {
        return no_data(plot, why);
    }
    Block::Plot(Plot {
        title,
        label,
        kind: PlotKind::Bars {
            y_label: y_label.to_owned(),
            bars,
        },
    })
}

/// The array at `key` of `v`; none there, or not an array, is empty.
fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// The name a model or run goes by in the JSON: a string, or an object's `name`.
fn name_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other
            .get("name")
            .and_then(Value::as_str)
            .map_or_else(|| other.to_string(), str::to_owned),
        None => "?".to_owned(),
    }
}

#[cfg(test)]
mod tests;
