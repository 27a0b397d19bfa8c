//! Live: `lull audit tlp-table --only idle,gzip,tracking` recorded through tracefs. Checks the
//! JSON shape, that shares lie in [0, 1] and sum to 1, that TLP lies in [1, CPUs], that gzip
//! (one thread) has an own TLP of 1, and that a program that cannot run here (the tracking app,
//! without a lull executable) is a skipped row with its reason. Skips, saying why, where the
//! recorder cannot run (not root, no tracefs).

use lull_lab::audit::tlp_table::programs::Program;
use lull_lab::audit::tlp_table::{measure, run_table, RowStatus, TableConfig};

mod common;

#[test]
fn a_short_table_has_the_issue_shape_and_sane_figures() {
    if !common::recorder_can_run() {
        return;
    }
    let cfg = TableConfig {
        seconds: 1,
        only: vec!["idle".into(), "gzip".into(), "tracking".into()],
        lull: None,
        ..TableConfig::default()
    };
    let mut lines = Vec::new();
    let t = run_table(&cfg, &mut |l| lines.push(l.to_owned())).expect("the table runs");
    assert!(!lines.is_empty(), "progress is reported");
    let v = serde_json::to_value(&t).expect("serialises");
    let programs = v["programs"].as_array().expect("programs");
    let names: Vec<&str> = programs.iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names, ["idle", "gzip", "tracking"]);
    let cpus = f64::from(t.cpus);
    for p in programs {
        for key in [
            "name",
            "tlp",
            "busy_cpus_fraction",
            "seconds",
            "own_tlp",
            "dropped_events",
            "command",
        ] {
            assert!(p.get(key).is_some(), "{key} missing in {p}");
        }
    }
    for r in &t.programs {
        if r.status == RowStatus::Skipped {
            continue;
        }
        for shares in [&r.busy_cpus_fraction, &r.own_busy_cpus_fraction] {
            if shares.is_empty() {
                continue;
            }
            assert!(
                shares.values().all(|f| (0.0..=1.0).contains(f)),
                "{shares:?}"
            );
            let sum: f64 = shares.values().sum();
            assert!((sum - 1.0).abs() < 1e-9, "{} sums to {sum}", r.name);
        }
        for tlp in [r.tlp, r.own_tlp].into_iter().flatten() {
            assert!((1.0..=cpus).contains(&tlp), "{}: TLP {tlp}", r.name);
        }
        assert!(r.seconds > 0.0);
    }
    let gzip = &t.programs[1];
    assert_eq!(gzip.status, RowStatus::Measured, "{:?}", gzip.reason);
    assert_eq!(gzip.exit_code, Some(0));
    assert!(gzip.own_tasks >= 1);
    // gzip is one thread: its own TLP is 1 (it cannot run on two CPUs at once).
    let own = gzip.own_tlp.expect("gzip ran");
    assert!((own - 1.0).abs() < 0.01, "gzip own TLP {own}");
    assert!(gzip.tlp.is_some());
    let idle = &t.programs[0];
    assert_eq!(idle.own_tlp, None);
    assert!((idle.seconds - 1.0).abs() < 0.5, "{}", idle.seconds);
    let tracking = &t.programs[2];
    assert_eq!(tracking.status, RowStatus::Skipped);
    assert!(tracking
        .reason
        .as_deref()
        .is_some_and(|r| r.contains("lull executable")));
    assert_eq!(tracking.tlp, None);
}

#[test]
fn an_unknown_program_is_an_error_not_a_row() {
    if !common::recorder_can_run() {
        return;
    }
    let cfg = TableConfig {
        only: vec!["chrome".into()],
        ..TableConfig::default()
    };
    let e = run_table(&cfg, &mut |_| {}).expect_err("unknown");
    assert!(e.to_string().contains("chrome"), "{e}");
}

#[test]
fn a_failing_program_is_a_failed_row_with_its_last_error_line() {
    if !common::recorder_can_run() {
        return;
    }
    let scratch = lull_os::fileout::ScratchDir::new("lull-tlp-fail").expect("scratch");
    let dir = scratch.path();
    let p = Program {
        name: "failing",
        argv: vec![
            "sh".into(),
            "-c".into(),
            "echo first >&2; echo it broke >&2; exit 3".into(),
        ],
        needs: Vec::new(),
        idle_s: 0,
        unavailable: None,
    };
    let row = measure(&p, dir, &TableConfig::default()).expect("recorded");
    assert_eq!(row.status, RowStatus::Failed);
    assert_eq!(row.exit_code, Some(3));
    let reason = row.reason.expect("a reason");
    assert!(reason.contains("it broke"), "{reason}");
    assert!(row.own_tasks >= 1);
}
