//! The scoreboard the report opens with: every seed claim, the seed's figure, ours from this
//! run's results, the verdict and a link to the section (docs/seed-verdicts.md).
//!
//! The seeds' figures, tolerances and causes come from the evidence file that
//! `python -m lull.verdicts` writes (`experiments/verdicts/evidence.json`, copied next to the
//! results as [`EVIDENCE_FILE`]); our figure comes from the section's own JSON, so the verdict
//! changes when the run's figures do. The rule is [`verdict`].

use std::collections::BTreeMap;
use std::path::Path;

use lull_model::stats::change_pct;
use lull_model::DeliveryModel;
use serde::Deserialize;
use serde_json::Value;

use crate::{Outcome, ResultFile};

/// The evidence file's name next to `DIR/results/`.
pub const EVIDENCE_FILE: &str = "seed-verdicts.json";
/// The evidence format this reader knows (`EVIDENCE_VERSION` of `lull.verdicts`).
pub const EVIDENCE_VERSION: u32 = 1;

/// Which of our figures a claim compares, computed from a section's JSON the way
/// `lull.verdicts`' figure of the same name computes it from a run.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Figure {
    /// UCSG's energy against CFS+OD's, % change.
    UcsgEnergyChange,
    /// A UCSG model's share of time on the big cluster, %.
    BigShare(&'static str),
    /// The painting app's mean response under CFS, ms.
    PaintingCfsMean,
    /// A painting model's mean response against CFS's, % change.
    PaintingChange(&'static str),
    /// A model's maximum Gaming latency under Burn, ms.
    InterbenchBurnMax(&'static str),
    /// ESM+KDS+guiS's mean power against the pull model's, % change.
    MarzPowerChange,
    /// The toggling period of the fastest toggling model, s.
    BestTogglePeriod,
}

/// A seed claim: where our figure is and how it is computed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Claim {
    /// The claim's id in the evidence file.
    pub id: &'static str,
    /// The `lull reproduce` section whose JSON holds our figure.
    pub section: &'static str,
    /// The experiment (spec) inside the section.
    pub experiment: &'static str,
    pub figure: Figure,
}

/// Every claim of the scoreboard, in the order the report lists them.
pub const CLAIMS: &[Claim] = &[
    claim(
        "ucsg_energy_fm_none",
        "ucsg_sim",
        "fig6-fm-none",
        Figure::UcsgEnergyChange,
    ),
    claim(
        "ucsg_energy_fm_ftp",
        "ucsg_sim",
        "fig6-fm-ftp",
        Figure::UcsgEnergyChange,
    ),
    claim(
        "ucsg_big_share_video_zip",
        "ucsg_sim",
        "fig8-video-zip",
        Figure::BigShare("ucsg"),
    ),
    claim(
        "cfs_od_big_share_video_zip",
        "ucsg_sim",
        "fig8-video-zip",
        Figure::BigShare("cfs-ondemand"),
    ),
    claim(
        "vtcfs_painting_cfs",
        "vtcfs_sim",
        "painting",
        Figure::PaintingCfsMean,
    ),
    claim(
        "vtcfs_painting_c3",
        "vtcfs_sim",
        "painting",
        Figure::PaintingChange("vtcfs-c3"),
    ),
    claim(
        "vtcfs_painting_c10",
        "vtcfs_sim",
        "painting",
        Figure::PaintingChange("vtcfs-c10"),
    ),
    claim(
        "interbench_gaming_burn_cfs",
        "vtcfs_sim",
        "interbench-gaming",
        Figure::InterbenchBurnMax("cfs"),
    ),
    claim(
        "interbench_gaming_burn_vtcfs",
        "vtcfs_sim",
        "interbench-gaming",
        Figure::InterbenchBurnMax("vtcfs-3ms"),
    ),
    claim(
        "marz_power_tracking_10s",
        "marz_sim",
        "tracking-10s",
        Figure::MarzPowerChange,
    ),
    claim(
        "marz_power_tracking_20s",
        "marz_sim",
        "tracking-20s",
        Figure::MarzPowerChange,
    ),
    claim(
        "marz_power_tracking_60s",
        "marz_sim",
        "tracking-60s",
        Figure::MarzPowerChange,
    ),
    claim(
        "toggling_best_period",
        "toggling_sim",
        "blackscholes",
        Figure::BestTogglePeriod,
    ),
];

const fn claim(
    id: &'static str,
    section: &'static str,
    experiment: &'static str,
    figure: Figure,
) -> Claim {
    Claim {
        id,
        section,
        experiment,
        figure,
    }
}

/// The evidence file (`lull.verdicts`' output), as far as the scoreboard reads it.
#[derive(Clone, Debug, Deserialize)]
pub struct Evidence {
    pub version: u32,
    pub command: String,
    pub date: String,
    #[serde(default)]
    pub elapsed_s: f64,
    #[serde(default)]
    pub runs: u64,
    pub claims: BTreeMap<String, ClaimEvidence>,
}

/// One claim's evidence.
#[derive(Clone, Debug, Deserialize)]
pub struct ClaimEvidence {
    pub title: String,
    pub seed: f64,
    pub seed_source: String,
    pub unit: String,
    pub tolerance: f64,
    /// A change: reproduced only with the seed's sign.
    pub signed: bool,
    /// Our figure at the sweep's defaults (the run of the shipped spec).
    pub ours_at_defaults: f64,
    /// The swept values at which the seed's figure holds, per key; `None`: at no point.
    pub region: Option<BTreeMap<String, Value>>,
    pub plausible_holding_points: u64,
    /// The cause in words, built by the sweep from its figures.
    pub cause: String,
}

/// Why the evidence file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum EvidenceError {
    #[error(transparent)]
    Read(#[from] lull_os::input_file::ReadError),
    #[error("{path}: not a seed-verdicts evidence file: {why}", path = .path.display())]
    Format {
        path: std::path::PathBuf,
        why: EvidenceFormatError,
    },
}

/// Why a text is not an evidence file this reader knows.
#[derive(Debug, thiserror::Error)]
pub enum EvidenceFormatError {
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("version {0} (this reader knows {EVIDENCE_VERSION})")]
    Version(u32),
}

impl Evidence {
    /// Parses an evidence file's text.
    ///
    /// # Errors
    /// [`EvidenceFormatError`]: not JSON of the evidence's shape, or another version.
    pub fn parse(text: &str) -> Result<Evidence, EvidenceFormatError> {
        let e: Evidence = serde_json::from_str(text)?;
        if e.version != EVIDENCE_VERSION {
            return Err(EvidenceFormatError::Version(e.version));
        }
        Ok(e)
    }

    /// `DIR/seed-verdicts.json`, or `None` when there is none.
    ///
    /// # Errors
    /// [`EvidenceError`] for a file that cannot be read or is not evidence.
    pub fn load(dir: &Path) -> Result<Option<Evidence>, EvidenceError> {
        let path = dir.join(EVIDENCE_FILE);
        // Bounded and regular files only, as the results files are read.
        let text = match lull_os::input_file::read_bounded_text(
            &path,
            lull_os::input_file::RESULTS_JSON,
        ) {
            Ok(t) => t,
            Err(lull_os::input_file::ReadError::Open { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                return Ok(None)
            }
            Err(e) => return Err(e.into()),
        };
        Evidence::parse(&text)
            .map(Some)
            .map_err(|why| EvidenceError::Format { path, why })
    }
}

/// A claim's verdict.
#[derive(Clone, PartialEq, Debug)]
pub enum Verdict {
    Reproduced,
    /// Ours differs and the sweep found where the seed's figure holds: the cause.
    Differs {
        cause: String,
    },
    /// No figure of ours, no evidence, or no swept point gives the seed's figure: why.
    NotReproducible {
        why: String,
    },
}

impl Verdict {
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Reproduced => "reproduced",
            Verdict::Differs { .. } => "differs",
            Verdict::NotReproducible { .. } => "not reproducible here",
        }
    }
}

/// Whether `ours` reproduces `seed`: within `tolerance` of it and, for a `signed` figure (a
/// change), of the same sign (a zero counts as neither sign's match for a nonzero seed).
#[must_use]
pub fn within(ours: f64, seed: f64, tolerance: f64, signed: bool) -> bool {
    if !ours.is_finite() {
        return false;
    }
    if signed && (ours < 0.0) != (seed < 0.0) {
        return false;
    }
    (ours - seed).abs() <= tolerance + 1e-9
}

/// The verdict rule: reproduced when our figure is [`within`] the evidence's tolerance of the
/// seed's; otherwise differs when the sweep found a region where the seed's figure holds (its
/// cause shown), and not reproducible here when it found none (its cause says what was swept)
/// or when there is no figure of ours or no evidence.
#[must_use]
pub fn verdict(ours: &Result<f64, NoFigure>, evidence: Option<&ClaimEvidence>) -> Verdict {
    let ours = match ours {
        Ok(v) => *v,
        Err(why) => {
            return Verdict::NotReproducible {
                why: why.to_string(),
            }
        }
    };
    let Some(e) = evidence else {
        return Verdict::NotReproducible {
            why: "no sweep evidence for this claim (`python -m lull.verdicts` writes it)".into(),
        };
    };
    if within(ours, e.seed, e.tolerance, e.signed) {
        Verdict::Reproduced
    } else if e.region.is_some() {
        Verdict::Differs {
            cause: e.cause.clone(),
        }
    } else {
        Verdict::NotReproducible {
            why: e.cause.clone(),
        }
    }
}

/// One row of the scoreboard.
#[derive(Clone, PartialEq, Debug)]
pub struct Row {
    pub claim: Claim,
    pub title: String,
    /// The seed's figure with its unit and source, when the evidence gives it.
    pub seed: Option<(f64, String, String)>,
    pub ours: Result<f64, NoFigure>,
    /// The sweep's figure at its defaults, which should equal ours for an unchanged model.
    pub sweep_default: Option<f64>,
    pub verdict: Verdict,
}

/// The scoreboard of `files` with `evidence`.
#[must_use]
pub fn rows(files: &[ResultFile], evidence: Option<&Evidence>) -> Vec<Row> {
    CLAIMS
        .iter()
        .map(|c| {
            let e = evidence.and_then(|ev| ev.claims.get(c.id));
            let ours = ours_of(files, c);
            Row {
                claim: *c,
                title: e.map_or_else(|| c.id.replace('_', " "), |e| e.title.clone()),
                seed: e.map(|e| (e.seed, e.unit.clone(), e.seed_source.clone())),
                sweep_default: e.map(|e| e.ours_at_defaults),
                verdict: verdict(&ours, e),
                ours,
            }
        })
        .collect()
}

/// Why a claim has no figure of ours.
#[derive(Clone, PartialEq, Debug, thiserror::Error)]
pub enum NoFigure {
    #[error("section `{0}` was not run")]
    NotRun(&'static str),
    #[error("section `{section}` failed: {why}")]
    Failed { section: &'static str, why: String },
    #[error("section `{section}` holds no experiment `{experiment}`")]
    NoExperiment {
        section: &'static str,
        experiment: &'static str,
    },
    #[error("experiment `{experiment}` lacks the figures of {figure:?}")]
    NoFigures {
        experiment: &'static str,
        figure: Figure,
    },
}

/// Our figure for `c` from its section's results file.
fn ours_of(files: &[ResultFile], c: &Claim) -> Result<f64, NoFigure> {
    let file = files
        .iter()
        .find(|f| f.section == c.section)
        .ok_or(NoFigure::NotRun(c.section))?;
    let data = match &file.outcome {
        Outcome::Data(v) => v,
        Outcome::Error(why) => {
            return Err(NoFigure::Failed {
                section: c.section,
                why: why.clone(),
            })
        }
    };
    let run = find_experiment(data, c.experiment).ok_or(NoFigure::NoExperiment {
        section: c.section,
        experiment: c.experiment,
    })?;
    figure(run, c.figure).ok_or(NoFigure::NoFigures {
        experiment: c.experiment,
        figure: c.figure,
    })
}

/// The object for `experiment` (with `models` or `cells`) anywhere in a section's JSON.
fn find_experiment<'a>(v: &'a Value, experiment: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => {
            if m.get("experiment").and_then(Value::as_str) == Some(experiment)
                && (m.contains_key("models") || m.contains_key("cells"))
            {
                return Some(v);
            }
            m.values().find_map(|x| find_experiment(x, experiment))
        }
        Value::Array(a) => a.iter().find_map(|x| find_experiment(x, experiment)),
        _ => None,
    }
}

/// `run`'s figure: the same arithmetic as `lull.verdicts`' function of the figure's name.
fn figure(run: &Value, f: Figure) -> Option<f64> {
    let model = |name: &str| run.get("models")?.get(name);
    let num = |v: Option<&Value>| v.and_then(Value::as_f64);
    match f {
        Figure::UcsgEnergyChange => change_pct(
            num(model("cfs-ondemand")?.get("energy_mj"))?,
            num(model("ucsg")?.get("energy_mj"))?,
        ),
        Figure::BigShare(m) => num(model(m)?.get("big_cluster_pct")),
        Figure::PaintingCfsMean => num(model("cfs")?.pointer("/response_ms/mean")),
        Figure::PaintingChange(m) => change_pct(
            num(model("cfs")?.pointer("/response_ms/mean"))?,
            num(model(m)?.pointer("/response_ms/mean"))?,
        ),
        Figure::InterbenchBurnMax(m) => run
            .get("cells")?
            .as_array()?
            .iter()
            .find(|c| {
                c.get("model").and_then(Value::as_str) == Some(m)
                    && c.get("load").and_then(Value::as_str) == Some("burn")
            })
            .and_then(|c| num(c.pointer("/latency_ms/max"))),
        Figure::MarzPowerChange => change_pct(
            num(model(DeliveryModel::Pull16ms.name())?.get("power_mw_mean"))?,
            num(model(DeliveryModel::EsmKdsGuis.name())?.get("power_mw_mean"))?,
        ),
        Figure::BestTogglePeriod => {
            let mut best: Option<(f64, f64)> = None;
            for m in run.get("models")?.as_array()? {
                let name = m.get("model").and_then(Value::as_str)?;
                let Some(period) = name.strip_prefix("toggle-") else {
                    continue;
                };
                let period: f64 = period.strip_suffix('s')?.parse().ok()?;
                let speedup = num(m.get("speedup_pct"))?;
                // The first of equal speedups wins, as Python's max() keeps the first.
                if best.is_none_or(|(s, _)| speedup > s) {
                    best = Some((speedup, period));
                }
            }
            best.map(|(_, p)| p)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{Label, Provenance};

    fn ev(seed: f64, tol: f64, signed: bool, region: bool) -> ClaimEvidence {
        ClaimEvidence {
            title: "t".into(),
            seed,
            seed_source: "seed".into(),
            unit: "%".into(),
            tolerance: tol,
            signed,
            ours_at_defaults: 0.0,
            region: region.then(BTreeMap::new),
            plausible_holding_points: 0,
            cause: "because".into(),
        }
    }

    #[test]
    fn the_rule_needs_the_tolerance_and_the_sign() {
        let e = ev(-12.6, 5.0, true, true);
        assert_eq!(verdict(&Ok(-10.0), Some(&e)), Verdict::Reproduced);
        assert_eq!(verdict(&Ok(-17.6), Some(&e)), Verdict::Reproduced);
        assert_eq!(
            verdict(&Ok(-17.7), Some(&e)),
            Verdict::Differs {
                cause: "because".into()
            }
        );
        // Within the tolerance in size but of the other sign: a change in the other direction.
        let small = ev(-2.0, 5.0, true, false);
        assert!(matches!(
            verdict(&Ok(1.0), Some(&small)),
            Verdict::NotReproducible { why } if why == "because"
        ));
        // Unsigned figures (a level, a time) only need the tolerance.
        assert!(within(90.0, 94.3, 14.1, false));
        assert!(!within(172.8, 94.3, 14.1, false));
        assert!(!within(f64::NAN, 0.0, 1.0, false));
        // An exact figure (a period) with a zero tolerance.
        assert!(within(0.25, 0.25, 0.0, false) && !within(0.1, 0.25, 0.0, false));
    }

    #[test]
    fn no_figure_or_no_evidence_is_not_reproducible_with_the_reason() {
        let e = ev(1.0, 1.0, false, true);
        assert_eq!(
            verdict(&Err(NoFigure::NotRun("x")), Some(&e)),
            Verdict::NotReproducible {
                why: "section `x` was not run".into()
            }
        );
        assert!(
            matches!(verdict(&Ok(1.0), None), Verdict::NotReproducible { why } if why.contains("lull.verdicts"))
        );
    }

    fn file(section: &str, data: Value) -> ResultFile {
        let provenance = Provenance::fixture();
        ResultFile::new(
            section,
            1,
            "T",
            Label::Modelled,
            provenance,
            0.1,
            Outcome::Data(data),
        )
    }

    #[test]
    fn figures_come_from_the_sections_json() {
        let marz = json!({"tracking-10s": {"experiment": "tracking-10s", "models": {
            "pull-16ms": {"power_mw_mean": 1000.0}, "esm-kds-guis": {"power_mw_mean": 950.0}}}});
        let toggling = json!({"blackscholes": {"experiment": "blackscholes", "models": [
            {"model": "baseline", "speedup_pct": 0.0},
            {"model": "toggle-0.1s", "speedup_pct": 5.0},
            {"model": "toggle-0.25s", "speedup_pct": 7.0},
            {"model": "toggle-0.5s", "speedup_pct": 7.0}]}});
        let bench = json!({"interbench": {"gaming": {"experiment": "interbench-gaming", "cells": [
            {"model": "cfs", "load": "none", "latency_ms": {"max": 1.0}},
            {"model": "cfs", "load": "burn", "latency_ms": {"max": 99.0}}]}}});
        let files = [
            file("marz_sim", marz),
            file("toggling_sim", toggling),
            file("vtcfs_sim", bench),
        ];
        let get = |id: &str| ours_of(&files, CLAIMS.iter().find(|c| c.id == id).unwrap());
        assert!((get("marz_power_tracking_10s").unwrap() + 5.0).abs() < 1e-9);
        assert_eq!(get("toggling_best_period").unwrap(), 0.25);
        assert_eq!(get("interbench_gaming_burn_cfs").unwrap(), 99.0);
        assert!(get("marz_power_tracking_20s")
            .unwrap_err()
            .to_string()
            .contains("no experiment `tracking-20s`"));
        assert!(get("ucsg_energy_fm_none")
            .unwrap_err()
            .to_string()
            .contains("`ucsg_sim` was not run"));
    }

    #[test]
    fn evidence_of_another_version_is_refused() {
        let text = json!({"version": 2, "command": "c", "date": "d", "claims": {}}).to_string();
        assert!(Evidence::parse(&text)
            .unwrap_err()
            .to_string()
            .contains("version 2"));
        assert!(Evidence::parse("{").is_err());
    }
}
