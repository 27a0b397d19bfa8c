//! UCSG against the seed's baseline, cell by cell of figures 6 and 7: the changes from
//! `cfs-ondemand` to `ucsg` (and to `eevdf-schedutil` for energy) beside seed 001's.

use serde::Serialize;

use super::seed::energy_change_pct;
use super::UcsgResult;
use lull_model::stats::change_pct;

/// One cell of figures 6 and 7 (a front app with something behind it), in percent of CFS+OD's
/// figure; `None` where a figure does not apply.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct CellComparison {
    pub experiment: String,
    pub foreground: String,
    pub background: String,
    pub energy_change_pct: Option<f64>,
    /// §4.3's figure for the cell.
    pub seed_energy_change_pct: Option<f64>,
    pub response_change_pct: Option<f64>,
    pub zip_change_pct: Option<f64>,
    pub ftp_change_pct: Option<f64>,
    pub ucsg_fps: Option<f64>,
    pub cfs_fps: Option<f64>,
    pub eevdf_schedutil_energy_change_pct: Option<f64>,
    pub ucsg_energy_mj: f64,
}

/// The cells of `results` that ran both `cfs-ondemand` and `ucsg`, in the order given.
#[must_use]
pub fn compare_cells(results: &[UcsgResult]) -> Vec<CellComparison> {
    results
        .iter()
        .filter_map(|r| {
            let base = r.models.get("cfs-ondemand")?;
            let ours = r.models.get("ucsg")?;
            let resp = match (&base.response_ms, &ours.response_ms) {
                (Some(b), Some(o)) => change_pct(b.mean, o.mean),
                _ => None,
            };
            let comp = |f: fn(&super::CompletionS) -> Option<f64>| match (
                base.completion_s.as_ref().and_then(f),
                ours.completion_s.as_ref().and_then(f),
            ) {
                (Some(b), Some(o)) => change_pct(b, o),
                _ => None,
            };
            Some(CellComparison {
                experiment: r.header.experiment.clone(),
                foreground: r.foreground.clone(),
                background: r.background.clone(),
                energy_change_pct: change_pct(base.energy_mj, ours.energy_mj),
                seed_energy_change_pct: energy_change_pct(&r.foreground, &r.background),
                response_change_pct: resp,
                zip_change_pct: comp(|c| c.zip),
                ftp_change_pct: comp(|c| c.ftp),
                ucsg_fps: ours.fps,
                cfs_fps: base.fps,
                eevdf_schedutil_energy_change_pct: r
                    .models
                    .get("eevdf-schedutil")
                    .and_then(|e| change_pct(base.energy_mj, e.energy_mj)),
                ucsg_energy_mj: ours.energy_mj,
            })
        })
        .collect()
}
