//! `lull sim run` on seed 004's toggling specs and the `toggling_sim` section of `lull reproduce`:
//! figure 3.9's comparison, modelled, with the seed's statement beside it. Parsing and printing
//! only; the simulation lives in `lull_sim::toggling`.

use std::fmt::Write as _;
use std::path::Path;

use lull_sim::toggling::TogglingResult;
use serde_json::json;

use crate::output::{self, fixed, Col};

/// The columns of a toggling spec's table, one row per model.
const MODEL_COLS: [Col; 6] = [
    Col::Left("model", 14),
    Col::Right("completion s", 12),
    Col::Right("speedup %", 10),
    Col::Right("energy mJ", 10),
    Col::Right("migrations", 10),
    Col::Right("end spread s", 14),
];

/// One spec's table: every model's completion, speedup against the baseline, energy, migrations
/// and how unevenly its threads ended, with figure 3.9's statement under it.
#[must_use]
pub fn table(r: &TogglingResult) -> String {
    let details = format!(
        "seed {}; big CPUs {}, LITTLE CPUs {}",
        r.header.seed,
        cpus(&r.fast_cpus),
        cpus(&r.slow_cpus)
    );
    let mut t = output::modelled_table(
        &r.header,
        &details,
        &MODEL_COLS,
        r.models.iter().map(|m| {
            [
                m.model.clone(),
                fixed(m.completion_s, 3),
                format!("{:+.1}", m.speedup_pct),
                fixed(m.energy_mj, 0),
                m.migrations.to_string(),
                fixed(m.end_spread_s, 3),
            ]
        }),
    );
    let best = r
        .models
        .iter()
        .max_by(|a, b| a.speedup_pct.total_cmp(&b.speedup_pct));
    if let Some(b) = best {
        let _ = writeln!(
            t,
            "best here: {} ({:+.1} %); seed 004 figure 3.9: {} best, up to {:.0} % faster than the baseline",
            b.model,
            b.speedup_pct,
            r.seed_figure_3_9.best_model,
            r.seed_figure_3_9.max_speedup_pct
        );
    }
    t
}

/// Writes one core-over-time SVG per model to `dir/<experiment>-<model>.svg` (the report's
/// drawing, `lull_report::core_svgs`); returns the paths.
///
/// # Errors
/// The directory or a file could not be written, or a model's plot could not be drawn.
pub fn write_plots(dir: &Path, r: &TogglingResult) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for (model, svg) in lull_report::core_svgs(&json!(r)) {
        let svg = svg.map_err(|e| format!("{} under {model}: {e}", r.header.experiment))?;
        let path = dir.join(format!("{}-{model}.svg", r.header.experiment));
        lull_os::fileout::write_file_atomically(&path, svg.as_bytes())
            .map_err(|e| e.to_string())?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

/// `lull reproduce`'s `toggling_sim` section as text: both specs' tables.
pub fn section_table(r: &lull_reproduce::data::Toggling) -> String {
    let tables: Vec<String> = r.results.iter().map(table).collect();
    tables.join("\n")
}

/// A simulated platform's CPU indices as a CPU list (`0-3`).
fn cpus(ids: &[usize]) -> String {
    let ids: Vec<u32> = ids.iter().filter_map(|&c| u32::try_from(c).ok()).collect();
    lull_os::topology::format_cpu_list(&ids)
}
