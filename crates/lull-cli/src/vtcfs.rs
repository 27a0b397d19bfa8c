//! `lull sim run` on seed 003's painting spec and `lull reproduce`'s `vtcfs_sim` section: the
//! modelled figures with seed 003's numbers beside them. Parsing and printing only.

use std::fmt::Write as _;
use std::path::Path;

use lull_sim::vtcfs::seed;
use lull_sim::vtcfs::{run_painting_spec, PaintingModel, PaintingResult, PaintingSpec};
use serde_json::Value;

/// The painting spec `lull reproduce` runs, relative to the working directory.
pub const PAINTING_SPEC: &str = "experiments/vtcfs/painting.toml";

/// A row builder of the `vtcfs_sim` section: its table and its JSON.
pub type RowBuilder = fn() -> Result<(String, Value), String>;

/// The `vtcfs_sim` section's row builders, in the order they print: (key in the JSON, builder).
const ROWS: &[(&str, RowBuilder)] = &[
    ("painting", painting_rows),
    ("interbench", crate::vtcfs_bench::interbench_rows),
    ("hackbench", crate::vtcfs_bench::hackbench_rows),
];

fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
}

/// One painting spec's table: every model's response and its decomposition (means, ms), the
/// boosts it made, the hogs' CPU time, and the seed's figures beside.
#[must_use]
pub fn table(r: &PaintingResult) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} — {} (modelled on {}, seed {}, {} hogs, VT-CFS preemption tick {} ms)",
        r.experiment, r.description, r.platform, r.seed, r.hogs, r.preempt_tick_ms
    );
    let _ = writeln!(
        t,
        "{:<14} {:>8} {:>8} {:>8} | {:>6} {:>6} {:>7} {:>7} {:>7} | {:>6} {:>8} | {:>8} {:>8} {:>7} {:>7}",
        "model",
        "RT mean",
        "RT p99",
        "RT max",
        "L_I",
        "L_S",
        "L_P",
        "C",
        "disp",
        "boosts",
        "hogs s",
        "seed RT",
        "seed L_P",
        "ours Δ",
        "seed Δ"
    );
    let base = r.models.get("cfs").and_then(|m| m.response_ms.mean);
    for m in PaintingModel::ALL {
        let Some(x) = r.models.get(m.name()) else {
            continue;
        };
        let d = &x.decomposition_ms;
        let s = seed::reported(m);
        let reduction = match (base, x.response_ms.mean) {
            (Some(b), Some(v)) if b > 0.0 => Some((b - v) / b * 100.0),
            _ => None,
        };
        let _ = writeln!(
            t,
            "{:<14} {:>8} {:>8} {:>8} | {:>6.2} {:>6.2} {:>7.2} {:>7.2} {:>7.2} | {:>6} {:>8.2} | {:>8} {:>8} {:>7} {:>7}",
            m.name(),
            opt(x.response_ms.mean, 2),
            opt(x.response_ms.p99, 2),
            opt(x.response_ms.max, 2),
            d.interrupt,
            d.scheduling,
            d.preemption,
            d.compute,
            d.display,
            x.boost.map_or_else(|| "-".to_owned(), |b| b.boosted.to_string()),
            x.hog_cpu_ms / 1e3,
            opt(s.map(|s| s.response_ms), 2),
            opt(s.and_then(|s| s.preemption_ms), 2),
            opt(reduction, 1),
            opt(s.map(|s| s.reduction_pct), 1),
        );
    }
    let _ = write!(
        t,
        "RT: touch → frame on the display; L_I/L_S/L_P/C/disp: mean interrupt, scheduling, preemption, compute and posted→shown parts (ms; they sum to RT mean). \
         Δ: reduction of the mean RT against cfs, %. seed: seed 003 §VI-B-1 on its board (legacy {:.1} ms, {:.2} % of it preemption; VT-CFS rows from its −{:.1} / −{:.1} %)",
        seed::LEGACY_RESPONSE_MS,
        seed::LEGACY_PREEMPTION_PCT,
        seed::VTCFS_C3_REDUCTION_PCT,
        seed::VTCFS_C10_REDUCTION_PCT
    );
    t.push('\n');
    t
}

/// The painting rows of `lull reproduce`'s `vtcfs_sim` section.
///
/// # Errors
/// A message when the spec cannot be read or run.
pub fn painting_rows() -> Result<(String, Value), String> {
    let path = Path::new(PAINTING_SPEC);
    let spec: PaintingSpec = crate::spec_file::read_spec_of(path)
        .map_err(|e| format!("{e} (run from the repository root)"))?;
    let started = std::time::Instant::now();
    let r = run_painting_spec(&spec).map_err(|e| format!("{PAINTING_SPEC}: {e}"))?;
    let mut t = table(&r);
    let _ = write!(
        t,
        "{} models in {:.2} s of wall time (`lull sim run {PAINTING_SPEC}`)",
        r.models.len(),
        started.elapsed().as_secs_f64()
    );
    Ok((t, r.to_json()))
}

/// `lull reproduce`'s `vtcfs_sim` section: every row builder's table in turn, and their JSON
/// under their keys.
///
/// # Errors
/// The first row builder's error.
pub fn reproduce_section() -> Result<crate::output::Section, String> {
    let mut text = String::new();
    let mut all = serde_json::Map::new();
    for (key, build) in ROWS {
        let (t, v) = build()?;
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&t);
        all.insert((*key).to_owned(), v);
    }
    Ok(crate::output::Section {
        table: text,
        json: Value::Object(all),
    })
}
