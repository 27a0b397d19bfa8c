//! `lull lab sched`'s figures: one row per scheduler and scenario, ratios to EEVDF within a
//! round, and the medians over rounds. Pure arithmetic on measured rows.

use lull_model::stats::median;
use serde::{Deserialize, Serialize};

use super::Scheduler;

/// One scenario under one scheduler.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SchedRow {
    pub scheduler: Scheduler,
    /// `painting-2-hogs`, `painting-10-hogs`, `filemanager-zip-ftp`.
    pub scenario: String,
    pub response_mean_us: Option<f64>,
    pub response_p99_us: Option<f64>,
    /// Painting: events replayed, and strokes drawn by the app's stop (`responses`).
    #[serde(default)]
    pub events: Option<u64>,
    #[serde(default)]
    pub responses: Option<u64>,
    /// Painting: the p99 over every event, one never drawn counted at the scenario's tail (a
    /// lower bound; `VtcfsLiveReport::response_all_us`).
    #[serde(default)]
    pub response_all_p99_us: Option<f64>,
    /// Painting: the hogs' million loop iterations per second, summed.
    pub hog_throughput: Option<f64>,
    /// Painting: the hogs' CPU time over the replay's wall time × CPUs.
    #[serde(default)]
    pub hog_cpu_share: Option<f64>,
    /// Painting: the app's drawing, ms of CPU (strokes drawn × the handler's mean CPU time per
    /// stroke): work a scheduler that lets every stroke be drawn takes from the hogs.
    #[serde(default)]
    pub drawing_cpu_ms: Option<f64>,
    /// File manager: ZIP's and FTP's completion, s.
    pub zip_s: Option<f64>,
    pub ftp_s: Option<f64>,
    /// The scheduler process's CPU time over the scenario, ms (None for EEVDF).
    pub scheduler_cpu_ms: Option<f64>,
    /// Ratios to EEVDF's figure in the same scenario of the same run.
    pub p99_vs_eevdf: Option<f64>,
    #[serde(default)]
    pub all_p99_vs_eevdf: Option<f64>,
    pub mean_vs_eevdf: Option<f64>,
    pub throughput_vs_eevdf: Option<f64>,
    /// Rounds this row summarises: 1 for one round's row; for the report's rows, the rounds in
    /// which the scenario ran under this scheduler (figures are their medians).
    #[serde(default = "one_round")]
    pub rounds: u32,
}

fn one_round() -> u32 {
    1
}

impl SchedRow {
    /// One round's row of `scenario` under `scheduler` with no figure yet; the ratios to
    /// EEVDF are filled in by the report.
    #[must_use]
    pub fn new(scheduler: Scheduler, scenario: String) -> SchedRow {
        SchedRow {
            scheduler,
            scenario,
            response_mean_us: None,
            response_p99_us: None,
            events: None,
            responses: None,
            response_all_p99_us: None,
            hog_throughput: None,
            hog_cpu_share: None,
            drawing_cpu_ms: None,
            zip_s: None,
            ftp_s: None,
            scheduler_cpu_ms: None,
            p99_vs_eevdf: None,
            all_p99_vs_eevdf: None,
            mean_vs_eevdf: None,
            throughput_vs_eevdf: None,
            rounds: one_round(),
        }
    }
}

/// The comparison's report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SchedReport {
    /// `uname -r` of the kernel it ran on.
    pub kernel: String,
    pub cpus: usize,
    /// One row per scheduler and scenario: with one round, that round's figures; with more,
    /// each figure's median over the rounds, and each ratio the median of the rounds' ratios
    /// (each to EEVDF in the same round, so a host that slows between rounds moves both).
    pub rows: Vec<SchedRow>,
    /// Every round's rows, in the order run (each round runs every scheduler in turn).
    #[serde(default)]
    pub per_round: Vec<Vec<SchedRow>>,
    /// Schedulers that could not run, and why.
    pub skipped: Vec<(Scheduler, String)>,
    /// Scenarios that failed under a scheduler (scheduler, scenario, error); the others ran.
    pub failed: Vec<(Scheduler, String, String)>,
    /// lull-scx's counts over its scenarios (its `--stats-json`), one per configuration and
    /// round: `{"scheduler", "round", "counts"}`.
    #[serde(default)]
    pub lull_scx_stats: Vec<serde_json::Value>,
    pub note: String,
}

/// Fills each row's ratios to EEVDF's row of the same scenario (`rows`: one round's).
pub fn fill_ratios(rows: &mut [SchedRow]) {
    let base: Vec<(String, SchedRow)> = rows
        .iter()
        .filter(|r| r.scheduler == Scheduler::Eevdf)
        .map(|r| (r.scenario.clone(), r.clone()))
        .collect();
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    for r in rows.iter_mut() {
        if let Some((_, b)) = base.iter().find(|(s, _)| *s == r.scenario) {
            r.p99_vs_eevdf = ratio(r.response_p99_us, b.response_p99_us);
            r.all_p99_vs_eevdf = ratio(r.response_all_p99_us, b.response_all_p99_us);
            r.mean_vs_eevdf = ratio(r.response_mean_us, b.response_mean_us);
            r.throughput_vs_eevdf = ratio(r.hog_throughput, b.hog_throughput);
        }
    }
}

/// The report's rows from every round's (each already given its ratios by [`fill_ratios`]):
/// one per scheduler and scenario, in the order first seen.
#[must_use]
pub fn summarise(per_round: &[Vec<SchedRow>]) -> Vec<SchedRow> {
    let mut keys: Vec<(Scheduler, String)> = Vec::new();
    for r in per_round.iter().flatten() {
        if !keys
            .iter()
            .any(|(s, c)| *s == r.scheduler && *c == r.scenario)
        {
            keys.push((r.scheduler, r.scenario.clone()));
        }
    }
    keys.into_iter()
        .map(|(s, scenario)| {
            let runs: Vec<&SchedRow> = per_round
                .iter()
                .flatten()
                .filter(|r| r.scheduler == s && r.scenario == scenario)
                .collect();
            let med = |f: fn(&SchedRow) -> Option<f64>| {
                let v: Vec<f64> = runs.iter().filter_map(|r| f(r)).collect();
                median(&v)
            };
            let med_count = |f: fn(&SchedRow) -> Option<u64>| {
                let v: Vec<f64> = runs.iter().filter_map(|r| f(r)).map(|n| n as f64).collect();
                median(&v).map(|m| m.round() as u64)
            };
            SchedRow {
                scheduler: s,
                scenario,
                response_mean_us: med(|r| r.response_mean_us),
                response_p99_us: med(|r| r.response_p99_us),
                events: runs.iter().find_map(|r| r.events),
                responses: med_count(|r| r.responses),
                response_all_p99_us: med(|r| r.response_all_p99_us),
                hog_throughput: med(|r| r.hog_throughput),
                hog_cpu_share: med(|r| r.hog_cpu_share),
                drawing_cpu_ms: med(|r| r.drawing_cpu_ms),
                zip_s: med(|r| r.zip_s),
                ftp_s: med(|r| r.ftp_s),
                scheduler_cpu_ms: med(|r| r.scheduler_cpu_ms),
                p99_vs_eevdf: med(|r| r.p99_vs_eevdf),
                all_p99_vs_eevdf: med(|r| r.all_p99_vs_eevdf),
                mean_vs_eevdf: med(|r| r.mean_vs_eevdf),
                throughput_vs_eevdf: med(|r| r.throughput_vs_eevdf),
                rounds: u32::try_from(runs.len()).unwrap_or(u32::MAX),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(s: Scheduler, scenario: &str, p99: f64, tput: Option<f64>) -> SchedRow {
        SchedRow {
            response_mean_us: Some(p99 / 2.0),
            response_p99_us: Some(p99),
            hog_throughput: tput,
            ..SchedRow::new(s, scenario.into())
        }
    }

    #[test]
    fn ratios_are_to_eevdf_of_the_same_scenario() {
        let mut rows = vec![
            row(Scheduler::Eevdf, "a", 100.0, Some(10.0)),
            row(Scheduler::Eevdf, "b", 50.0, None),
            row(Scheduler::LullScx, "a", 25.0, Some(9.5)),
            row(Scheduler::LullScx, "b", 100.0, None),
            row(Scheduler::ScxLavd, "c", 1.0, None),
        ];
        fill_ratios(&mut rows);
        assert_eq!(rows[0].p99_vs_eevdf, Some(1.0));
        assert_eq!(rows[2].p99_vs_eevdf, Some(0.25));
        assert_eq!(rows[2].throughput_vs_eevdf, Some(0.95));
        assert_eq!(rows[3].p99_vs_eevdf, Some(2.0));
        assert_eq!(rows[3].throughput_vs_eevdf, None);
        assert_eq!(rows[4].p99_vs_eevdf, None);
    }

    #[test]
    fn rounds_give_medians_and_the_median_of_each_rounds_ratio() {
        // Round 2's host is twice as slow for both: its ratio is the same, and the median of
        // the three rounds' ratios is not the ratio of the medians.
        let mut rounds = vec![
            vec![
                row(Scheduler::Eevdf, "a", 100.0, Some(10.0)),
                row(Scheduler::LullScx, "a", 50.0, Some(10.0)),
            ],
            vec![
                row(Scheduler::Eevdf, "a", 200.0, Some(5.0)),
                row(Scheduler::LullScx, "a", 100.0, Some(4.0)),
            ],
            vec![
                row(Scheduler::Eevdf, "a", 120.0, Some(10.0)),
                row(Scheduler::LullScx, "a", 96.0, Some(11.0)),
            ],
        ];
        for r in &mut rounds {
            fill_ratios(r);
        }
        let rows = summarise(&rounds);
        assert_eq!(rows.len(), 2);
        let lull = &rows[1];
        assert_eq!((lull.scheduler, lull.rounds), (Scheduler::LullScx, 3));
        assert_eq!(lull.response_p99_us, Some(96.0));
        assert_eq!(lull.p99_vs_eevdf, Some(0.5), "median of 0.5, 0.5, 0.8");
        assert_eq!(
            lull.throughput_vs_eevdf,
            Some(1.0),
            "median of 1.0, 0.8, 1.1"
        );
        assert_eq!(rows[0].p99_vs_eevdf, Some(1.0));
        assert_eq!(rows[0].hog_throughput, Some(10.0));
    }

    #[test]
    fn a_round_a_scheduler_missed_is_not_counted() {
        let mut rounds = vec![
            vec![
                row(Scheduler::Eevdf, "a", 100.0, None),
                row(Scheduler::ScxLavd, "a", 30.0, None),
            ],
            vec![row(Scheduler::Eevdf, "a", 100.0, None)],
        ];
        for r in &mut rounds {
            fill_ratios(r);
        }
        let rows = summarise(&rounds);
        assert_eq!((rows[0].rounds, rows[1].rounds), (2, 1));
        assert_eq!(rows[1].p99_vs_eevdf, Some(0.3));
        assert!(summarise(&[]).is_empty());
    }
}
