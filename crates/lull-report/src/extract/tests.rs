//! Each extractor against JSON shaped like its section's, and against JSON that lacks what a plot
//! needs.

use serde_json::{json, Value};

use super::*;
use crate::view::{Plot, PlotKind, Table};
use crate::{Label, Outcome, Provenance};

fn file(section: &str, label: Label, data: Value) -> ResultFile {
    ResultFile::new(
        section,
        1,
        "t",
        label,
        Provenance::fixture(),
        1.0,
        Outcome::Data(data),
    )
}

/// What `pick` finds in each block that holds it, in order.
fn picked<'a, T: ?Sized>(
    blocks: &'a [Block],
    pick: impl Fn(&'a Block) -> Option<&'a T>,
) -> Vec<&'a T> {
    blocks.iter().filter_map(pick).collect()
}

fn plots(blocks: &[Block]) -> Vec<&Plot> {
    picked(blocks, |b| match b {
        Block::Plot(p) => Some(p),
        _ => None,
    })
}

fn tables(blocks: &[Block]) -> Vec<&Table> {
    picked(blocks, |b| match b {
        Block::Table(t) => Some(t),
        _ => None,
    })
}

fn notes(blocks: &[Block]) -> Vec<&str> {
    picked(blocks, |b| match b {
        Block::Note(n) | Block::NoData(n) => Some(n.as_str()),
        _ => None,
    })
}

fn cdf(scale: f64) -> Value {
    json!(lull_model::stats::CDF_PERCENTS
        .iter()
        .map(|&p| (f64::from(p) + 1.0) * scale)
        .collect::<Vec<_>>())
}

fn sim_model(handled: u64) -> Value {
    json!({
        "power_mw_mean": 900.5, "energy_mj": 9000.0, "events_handled": handled,
        "latency_ms": {"mean": 1.5, "p99": 4.0, "max": 9.0, "cdf": if handled > 0 { cdf(0.01) } else { json!([]) }},
        "power_mw_per_100ms": [880.0, 910.2, 905.0],
    })
}

#[test]
fn marz_latency_cdf_power_series_and_seed_line() {
    let data = json!({
        "tracking-20s": {
            "models": {"esm-kds-guis": sim_model(10), "pull-16ms": sim_model(10)},
            "reduction_of": {"esm-kds-guis": {"pull-16ms": {"power_reduction_pct": 3.2, "mean_latency_change_ms": -0.4}}},
            "seed_000_reported_vs_pull": "seed: -117.9 mW (15.3 %), latency -1.9 ms",
        },
        "video": {"models": {"esm-kds-guis": sim_model(0)}},
    });
    let b = blocks(&file("marz_sim", Label::Modelled, data));
    let p = plots(&b);
    // tracking: CDF + power; video: power only (no events).
    assert_eq!(p.len(), 3);
    match &p[0].kind {
        PlotKind::Cdf { series, unit } => {
            assert_eq!(unit, "ms");
            assert_eq!(series.len(), 2);
            assert_eq!(series[0].points.first(), Some(&(0.01, 0.0)));
            assert_eq!(series[0].points.last(), Some(&(1.01, 100.0)));
        }
        k => panic!("{k:?}"),
    }
    match &p[1].kind {
        PlotKind::TimeSeries { series, .. } => {
            assert_eq!(series[0].points.len(), 3);
            assert!((series[0].points[1].0 - 0.15).abs() < 1e-9);
            assert_eq!(series[0].points[1].1, 910.2);
        }
        k => panic!("{k:?}"),
    }
    assert!(p.iter().all(|p| p.label == Label::Modelled));
    let tables = tables(&b);
    assert!(tables
        .iter()
        .any(|t| t.rows.iter().any(|r| r[1].contains("117.9 mW"))));
    assert!(tables[0].rows.iter().any(|r| r[5] == "3.20 %"));
    assert!(notes(&b)
        .iter()
        .any(|n| n.contains("video: no input events")));
}

#[test]
fn live_sections_plot_each_models_distribution() {
    let run = |model: &str| {
        json!({"model": model, "workload": "tracking-20s", "wakeups_per_s": 261.4, "cpu_ms": 191.3,
               "latency_us": {"mean": 71.7, "p50": 61.0, "p99": 155.7, "max": 3603.9, "cdf": cdf(10.0)}})
    };
    let data = json!({"tracking_20s": [run("esm"), run("pull-16ms")], "idle": [{"model": "esm", "workload": "idle-5s", "wakeups_per_s": 0.2, "cpu_ms": 0.1, "latency_us": {"mean": null}}]});
    let b = blocks(&file("live_esm", Label::Measured, data));
    let p = plots(&b);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].label, Label::Measured);
    assert!(
        matches!(&p[0].kind, PlotKind::Cdf { series, .. } if series.len() == 2 && series[1].name == "pull-16ms")
    );

    let app = json!({"apps": [{"app": "messaging", "runs": [{"model": "esm-kds-guis", "latency_us": {"mean": 80.0, "p99": 300.0, "cdf": cdf(5.0), "count": 10}, "wakeups_per_s": 3.0, "frames_drawn": 12}]}]});
    let b = blocks(&file("live_apps", Label::Measured, app));
    assert_eq!(plots(&b).len(), 1);
    // The video handles no input: a note, not a missing plot.
    let video = json!({"apps": [{"app": "video", "runs": [{"model": "esm-kds-guis", "latency_us": {"mean": null, "cdf": null, "count": 0}}]}]});
    let b = blocks(&file("live_apps", Label::Measured, video));
    assert!(
        matches!(&b[1], Block::Note(n) if n.contains("no input events")),
        "{b:?}"
    );
}

#[test]
fn ucsg_footprint_and_seed_figures() {
    let fp = json!([{"time_s": 0.0, "big": true, "active_cores": 4, "freq_mhz": 1600},
                    {"time_s": 0.1, "big": false, "active_cores": 2, "freq_mhz": 500}]);
    let data = json!({
        "experiments": {"fig8-video-zip": {"models": {"ucsg": {"big_cluster_pct": 10.0, "active_cores_mean": 2.5, "freq_mhz_mean": 480.0}}}},
        "ucsg_vs_cfs_ondemand": {"fig6-fm-zip": {"energy_change_pct": -20.0, "seed_energy_change_pct": -26.2}},
        "figure_8": {"experiment": "fig8-video-zip", "footprints": {"cfs-ondemand": fp, "ucsg": fp},
                     "seed": {"ucsg": {"big_cluster_pct": 14.3, "active_cores_mean": 2.2, "freq_mhz_mean": 470.0}}},
    });
    let b = blocks(&file("ucsg_sim", Label::Modelled, data));
    let p = plots(&b);
    assert_eq!(p.len(), 1);
    assert!(
        matches!(&p[0].kind, PlotKind::Footprint(m) if m.len() == 2 && m[0].samples[1] == (0.1, false, 2.0, 500.0))
    );
    let text = format!("{b:?}");
    assert!(
        text.contains("\"14.3\"") && text.contains("\"-26.2\""),
        "{text}"
    );
}

#[test]
fn validation_scatters_and_tlp_over_time() {
    let data = json!({"workloads": [{"name": "periodic", "threads": [
        {"name": "t0", "live": {"cpu_share": 0.25, "wakeup_latency_us": {"p50": 50, "p99": 80}},
         "sim": {"cpu_share": 0.24, "wakeup_latency_us": {"p50": 20, "p99": 30}}, "cpu_share_within_bound": true}]}]});
    let b = blocks(&file("validation", Label::MeasuredAndModelled, data));
    let p = plots(&b);
    assert_eq!(p.len(), 2);
    assert!(
        matches!(&p[0].kind, PlotKind::Scatter { series, log: false, .. } if series[0].points == vec![(25.0, 24.0)])
    );

    let data = json!({
        "modelled": {"rows": [{"experiment": "vips", "model": "toggling", "tlp": 1.5, "tlp_window_ms": 100.0, "tlp_over_time": [1.0, null, 2.0]}]},
        "live": {"programs": [{"name": "idle", "status": "measured", "tlp": 1.01}], "seed_table_1_1": [{"category": "System", "application": "None", "tlp": 1.02}], "geomean_tlp": 1.2},
    });
    let b = blocks(&file("tlp_table", Label::MeasuredAndModelled, data));
    let p = plots(&b);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].label, Label::Modelled);
    assert!(
        matches!(&p[0].kind, PlotKind::TimeSeries { series, .. } if series[0].points == vec![(0.05, 1.0), (0.25, 2.0)])
    );
    assert!(format!("{b:?}").contains("\"1.02\""));
}

#[test]
fn toggling_speedup_bars_and_seed_statements() {
    let model = |name: &str, speedup: f64, spread: f64| {
        json!({"model": name, "completion_s": 2.2, "speedup_pct": speedup, "energy_mj": 12854.2,
               "migrations": 4, "end_spread_s": spread, "threads": [{"cpu_s": 1.5, "end_s": 1.5}]})
    };
    let seed = json!({"best_model": "toggle-0.25s", "max_speedup_pct": 14.0, "figures": [
        {"figure": "3.7", "program": "blackscholes", "model": "toggle-0.25s", "shows": "faster"}]});
    let data = json!({
        "blackscholes": {"experiment": "blackscholes", "seed_figure_3_9": seed,
            "models": [model("baseline", 0.0, 0.95), model("affinity-1", -39.2, 2.5), model("toggle-0.25s", 6.87, 0.16)]},
        "vips": {"experiment": "vips", "seed_figure_3_9": seed, "models": [{"model": "baseline"}]},
    });
    let b = blocks(&file("toggling_sim", Label::Modelled, data));
    let p = plots(&b);
    // vips has no speedup: its plot is a note, blackscholes' is drawn.
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].label, Label::Modelled);
    match &p[0].kind {
        PlotKind::Bars { bars, .. } => {
            let got: Vec<(&str, f64)> = bars.iter().map(|b| (b.name.as_str(), b.value)).collect();
            assert_eq!(
                got,
                vec![
                    ("baseline", 0.0),
                    ("affinity-1", -39.2),
                    ("toggle-0.25s", 6.87)
                ]
            );
        }
        k => panic!("{k:?}"),
    }
    assert!(notes(&b).iter().any(|n| n.contains("vips's speedup")));
    let tables = tables(&b);
    let fig39 = tables
        .iter()
        .find(|t| t.title.starts_with("Figure 3.9"))
        .unwrap();
    assert_eq!(
        fig39.rows[0],
        ["blackscholes", "toggle-0.25s", "6.87", "toggle-0.25s", "14"]
    );
    let figs = tables
        .iter()
        .find(|t| t.title.starts_with("Figures 3.1"))
        .unwrap();
    // The seed's statement beside our end spread for that program and scheme.
    assert_eq!(
        figs.rows[0],
        ["3.7", "blackscholes", "toggle-0.25s", "faster", "0.16"]
    );
    // Without `fast_cpus` and `slow_cpus` the core-over-time plots have no data: said so.
    assert!(notes(&b)
        .iter()
        .any(|n| n.contains("figures 3.1–3.8") && n.contains("`fast_cpus`")));
}

/// The blocks of the folded groups in `blocks`.
fn folded(blocks: &[Block]) -> Vec<&Block> {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::Fold { blocks, .. } => Some(blocks),
            _ => None,
        })
        .flatten()
        .collect()
}

#[test]
fn toggling_core_plots_per_scheme_with_notes_for_what_does_not_fit() {
    let model = |name: &str, cores: Option<Value>| {
        let mut t = json!({"cpu_s": 1.5, "end_s": 1.5});
        if let Some(c) = cores {
            t["cores"] = c;
        }
        json!({"model": name, "completion_s": 2.0, "speedup_pct": 0.0, "threads": [t]})
    };
    let seed = json!({"best_model": "toggle-0.25s", "max_speedup_pct": 14.0, "figures": [
        {"figure": "3.1", "program": "blackscholes", "model": "baseline", "shows": "x"}]});
    let data = json!({
        "blackscholes": {"experiment": "blackscholes", "seed_figure_3_9": seed,
            "fast_cpus": [4, 5, 6, 7], "slow_cpus": [0, 1, 2, 3],
            "models": [
                model("baseline", Some(json!([[0.0005, 4], [1.0, 0]]))),
                // Written before the core trace was kept.
                model("affinity-1", None),
                // A core the platform does not have.
                model("equalise", Some(json!([[0.0005, 4], [0.5, 8]]))),
            ]},
    });
    let b = blocks(&file("toggling_sim", Label::Modelled, data));
    let inner: Vec<Block> = folded(&b).into_iter().cloned().collect();
    let p = plots(&inner);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].label, Label::Modelled);
    assert!(p[0].title.contains("baseline") && p[0].title.contains("figure 3.1"));
    match &p[0].kind {
        PlotKind::Cores {
            fast_cpus,
            slow_cpus,
            threads,
            ..
        } => {
            assert_eq!((fast_cpus.len(), slow_cpus.len()), (4, 4));
            assert_eq!(threads[0].steps, vec![(0.0005, 4), (1.0, 0)]);
        }
        k => panic!("{k:?}"),
    }
    let n = notes(&inner);
    assert_eq!(n.len(), 2, "{n:?}");
    assert!(n[0].contains("affinity-1") && n[0].contains("no thread carries `cores`"));
    assert!(
        n[1].contains("equalise") && n[1].contains("core 8"),
        "{}",
        n[1]
    );
    assert!(inner
        .iter()
        .all(|b| matches!(b, Block::Plot(_) | Block::NoData(_))));
}

#[test]
fn core_svgs_give_every_model_its_svg_or_its_reason() {
    let model = |name: &str, core: u64| {
        json!({"model": name, "completion_s": 2.0, "threads": [
            {"cpu_s": 1.5, "end_s": 1.5, "cores": [[0.0005, 4], [1.0, core]]}]})
    };
    let exp = json!({"experiment": "blackscholes", "fast_cpus": [4, 5, 6, 7],
        "slow_cpus": [0, 1, 2, 3], "models": [model("baseline", 0), model("equalise", 9)]});
    let svgs = super::core_svgs(&exp);
    assert_eq!(svgs.len(), 2);
    assert_eq!(svgs[0].0, "baseline");
    assert!(svgs[0].1.as_ref().unwrap().starts_with("<svg"));
    assert_eq!(svgs[1].0, "equalise");
    assert!(svgs[1]
        .1
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("core 9"));
    // Without CPU lists no model can be drawn, and each says why.
    let bare = json!({"experiment": "vips", "models": [model("baseline", 0), model("x", 1)]});
    let svgs = super::core_svgs(&bare);
    assert_eq!(svgs.len(), 2);
    assert!(svgs.iter().all(|(_, s)| s.is_err()));
}

#[test]
fn controller_completion_bars_and_overhead_beside_the_seed() {
    let row = |policy: &str, median: f64, min: f64, max: f64| {
        json!({"policy": policy, "completion_s": {"median": median, "min": min, "max": max},
               "runs_s": [median], "speedup_pct": null, "thread_spread_s": 0.02, "masks": null})
    };
    let data = json!({
        "overhead": {"sample_ns_per_thread": 2100, "interval_ns": 100_000_000, "slowdown_pct": 0.41, "seed_overhead_pct": 3.0},
        "toggling": {"reps": 1, "workloads": [{"name": "equal", "rows": [
            row("uncontrolled", 4.1, 4.1, 4.1), row("baseline", 4.2, 4.0, 4.5)],
            "monitoring_overhead_pct": 2.4}],
            "skipped": [{"workload": "vips", "why": "no vips binary"}]},
    });
    let b = blocks(&file("controller_live", Label::Measured, data));
    let p = plots(&b);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].label, Label::Measured);
    match &p[0].kind {
        PlotKind::Bars { bars, .. } => {
            assert_eq!(bars.len(), 2);
            // One run (min = max) has no whisker; several do.
            assert_eq!((bars[0].value, bars[0].range), (4.1, None));
            assert_eq!(bars[1].range, Some((4.0, 4.5)));
        }
        k => panic!("{k:?}"),
    }
    assert!(notes(&b).iter().any(|n| n.contains("vips not run")));
    let overhead = b
        .iter()
        .find_map(|b| match b {
            Block::Table(t) if t.title.starts_with("The monitoring") => Some(t),
            _ => None,
        })
        .unwrap();
    assert_eq!(overhead.rows[0][1..], ["0.41", "3"]);
    assert!(overhead.rows[0][0].contains("every 100 ms"));
    assert_eq!(overhead.rows[2][1..], ["2.40", "3"]);
    // Without the live table: a note, and the overhead still shown.
    let b = blocks(&file(
        "controller_live",
        Label::Measured,
        json!({"overhead": {"slowdown_pct": 1.0}}),
    ));
    assert!(matches!(&b[0], Block::NoData(_)), "{b:?}");
    assert!(
        matches!(&b[1], Block::Table(t) if t.rows[0][2] == "–"),
        "{b:?}"
    );
}

#[test]
fn missing_fields_become_notes_never_panics() {
    let odd = [
        json!(null),
        json!([]),
        json!({"tracking_20s": [{"model": 3}]}),
        json!({"apps": "x"}),
        json!({"x": {"models": {"m": {"latency_ms": {"cdf": [1, 2]}}}}}),
        json!({"figure_8": null}),
        json!({"workloads": [{"threads": [{}]}]}),
        json!({"modelled": {"rows": [{"experiment": "vips", "tlp_over_time": "?"}]}}),
        json!({"vips": {"models": "x", "seed_figure_3_9": {"figures": [{}]}}}),
        json!({"toggling": {"workloads": [{"rows": [{"completion_s": 1}]}]}, "overhead": 2}),
    ];
    for section in [
        "live_esm",
        "live_apps",
        "vtcfs_sim",
        "marz_sim",
        "marz_policies",
        "ucsg_sim",
        "validation",
        "tlp_table",
        "toggling_sim",
        "controller_live",
        "dispatch_bench",
    ] {
        for data in &odd {
            let b = blocks(&file(section, Label::Modelled, data.clone()));
            assert!(!b.is_empty(), "{section} {data}");
        }
    }
    // Old results without distributions: the plot is a note, the table stays.
    let old = json!({"tracking_20s": [{"model": "esm", "latency_us": {"mean": 71.7}}]});
    let b = blocks(&file("live_esm", Label::Measured, old));
    assert!(plots(&b).is_empty());
    assert!(
        matches!(&b[0], Block::NoData(n) if n.starts_with("No data for the plot of")),
        "{b:?}"
    );
}

#[test]
fn an_error_section_has_no_blocks_and_others_get_their_figures() {
    let mut f = file("audit", Label::Measured, json!(null));
    f.outcome = Outcome::Error("needs root".into());
    assert!(blocks(&f).is_empty());
    let b = blocks(&file(
        "dispatch_bench",
        Label::Measured,
        json!({"events": 1000, "ns_per_event": 41.26, "nested": {"a": true}, "list": [1]}),
    ));
    match &b[0] {
        Block::Table(t) => {
            assert_eq!(t.rows.len(), 3);
            assert!(t
                .rows
                .contains(&vec!["ns_per_event".to_owned(), "41.3".to_owned()]));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn lab_sched_has_a_table_per_scenario_and_notes_for_what_did_not_run() {
    let data = serde_json::json!({
        "kernel": "7.3.4", "accel": "tcg", "cpus": 2, "note": "ratios only",
        "rows": [
            {"scheduler": "eevdf", "scenario": "painting-2-hogs", "response_p99_us": 100.0, "p99_vs_eevdf": 1.0},
            {"scheduler": "lull-scx", "scenario": "painting-2-hogs", "response_p99_us": 50.0, "p99_vs_eevdf": 0.5},
            {"scheduler": "eevdf", "scenario": "filemanager-zip-ftp", "zip_s": 3.0}
        ],
        "skipped": [["scx-lavd", "scx_lavd is not installed: scripts/scx-schedulers.sh builds it"]],
        "failed": []
    });
    let b = blocks(&file("lab_sched", Label::Measured, data));
    let tables = tables(&b);
    assert_eq!(tables.len(), 2);
    assert_eq!(tables[0].rows.len(), 2);
    assert_eq!(tables[0].rows[1][3], "0.50");
    assert!(b
        .iter()
        .any(|x| matches!(x, Block::Note(n) if n.contains("scx-schedulers.sh"))));
    assert!(b
        .iter()
        .any(|x| matches!(x, Block::Note(n) if n.contains("(tcg)"))));
    assert!(!b
        .iter()
        .any(|x| matches!(x, Block::Note(n) if n.contains("rounds"))));
}

/// With rounds, the report says its figures are medians, and names the engine the guest ran on.
#[test]
fn lab_sched_over_rounds_says_so_and_names_the_engine() {
    let data = serde_json::json!({
        "kernel": "7.3.4", "accel": "tcg", "engine": "tcg, single-threaded", "cpus": 2,
        "note": "ratios only",
        "rows": [{"scheduler": "eevdf", "scenario": "painting-2-hogs", "response_p99_us": 100.0}],
        "per_round": [[], [], []],
        "skipped": [], "failed": []
    });
    let b = blocks(&file("lab_sched", Label::Measured, data));
    let notes: Vec<&String> = b
        .iter()
        .filter_map(|x| match x {
            Block::Note(n) => Some(n),
            _ => None,
        })
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("(tcg, single-threaded)")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.contains("Medians over 3 rounds")),
        "{notes:?}"
    );
}
