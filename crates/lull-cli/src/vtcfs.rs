//! `lull sim run` on seed 003's painting spec and `lull reproduce`'s `vtcfs_sim` section: the
//! modelled figures with seed 003's numbers beside them. Parsing and printing only.

use std::fmt::Write as _;

use lull_sim::vtcfs::seed;
use lull_sim::vtcfs::{PaintingModel, PaintingResult};

use crate::output::{self, figure, fixed, Col};

/// The columns of the painting spec's table, one row per model: the response, its parts, the
/// boost and the hogs, then the seed's figures.
const MODEL_COLS: [Col; 18] = [
    Col::Left("model", 14),
    Col::Right("RT mean", 8),
    Col::Right("RT p99", 8),
    Col::Right("RT max", 8),
    Col::Bar,
    Col::Right("L_I", 6),
    Col::Right("L_S", 6),
    Col::Right("L_P", 7),
    Col::Right("C", 7),
    Col::Right("disp", 7),
    Col::Bar,
    Col::Right("boosts", 6),
    Col::Right("hogs s", 8),
    Col::Bar,
    Col::Right("seed RT", 8),
    Col::Right("seed L_P", 8),
    Col::Right("ours Δ", 7),
    Col::Right("seed Δ", 7),
];

/// One painting spec's table: every model's response and its decomposition (means, ms), the
/// boosts it made, the hogs' CPU time, and the seed's figures beside.
#[must_use]
pub fn table(r: &PaintingResult) -> String {
    let details = format!(
        "seed {}, {} hogs, VT-CFS preemption tick {} ms",
        r.header.seed, r.hogs, r.preempt_tick_ms
    );
    let base = r.models.get("cfs").and_then(|m| m.response_ms.mean);
    let rows = PaintingModel::ALL.into_iter().filter_map(|m| {
        let x = r.models.get(m.name())?;
        let d = &x.decomposition_ms;
        let s = seed::reported(m);
        let reduction = match (base, x.response_ms.mean) {
            (Some(b), Some(v)) if b > 0.0 => Some((b - v) / b * 100.0),
            _ => None,
        };
        Some([
            m.name().to_owned(),
            figure(x.response_ms.mean, 2),
            figure(x.response_ms.p99, 2),
            figure(x.response_ms.max, 2),
            fixed(d.interrupt, 2),
            fixed(d.scheduling, 2),
            fixed(d.preemption, 2),
            fixed(d.compute, 2),
            fixed(d.display, 2),
            x.boost
                .map_or_else(|| "-".to_owned(), |b| b.boosted.to_string()),
            fixed(x.hog_cpu_ms / 1e3, 2),
            figure(s.map(|s| s.response_ms), 2),
            figure(s.and_then(|s| s.preemption_ms), 2),
            figure(reduction, 1),
            figure(s.map(|s| s.reduction_pct), 1),
        ])
    });
    let mut t = output::modelled_table(&r.header, &details, &MODEL_COLS, rows);
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

/// `lull reproduce`'s `vtcfs_sim` section as text: the painting spec's table, then the
/// interbench and hackbench specs'.
pub fn section_table(r: &lull_reproduce::data::Vtcfs) -> String {
    let mut t = table(&r.painting);
    let _ = write!(
        t,
        "{} models in {:.2} s of wall time (`lull sim run {}`)",
        r.painting.models.len(),
        r.painting_wall_s,
        lull_reproduce::sections::modelled::PAINTING_SPEC
    );
    let mut rows = |tables: Vec<String>| {
        t.push_str("\n\n");
        for x in tables {
            t.push_str(&x);
            t.push('\n');
        }
    };
    rows(
        r.interbench
            .iter()
            .map(crate::vtcfs_bench::interbench_table)
            .collect(),
    );
    rows(
        r.hackbench
            .iter()
            .map(crate::vtcfs_bench::hackbench_table)
            .collect(),
    );
    t
}
