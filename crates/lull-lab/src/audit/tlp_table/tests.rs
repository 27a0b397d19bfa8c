use std::collections::HashSet;

use lull_audit::{AuditEventKind, AuditRecord};

use super::programs::Program;
use super::*;

const S: u64 = 1_000_000_000;

fn rec(ts: u64, cpu: u16, tid: u32, kind: AuditEventKind) -> AuditRecord {
    AuditRecord::synthetic(ts, cpu, tid, kind)
}

fn program() -> Program {
    Program {
        name: "make",
        argv: vec!["make".into(), "-j2".into()],
        needs: Vec::new(),
        idle_s: 0,
        unavailable: None,
    }
}

use AuditEventKind::{Block, SwitchIn};

/// Program tasks 10 and 11 and a system task 99 on two CPUs, from 1 s to 5 s; records before
/// and after the run are left out.
fn records() -> Vec<AuditRecord> {
    vec![
        rec(0, 0, 99, SwitchIn),
        rec(S / 2, 0, 99, Block),
        // The run: 10 on CPU0 for 1..5 s, 11 on CPU1 for 1..2 s, 99 on CPU1 for 3..4 s.
        rec(S, 0, 10, SwitchIn),
        rec(S, 1, 11, SwitchIn),
        rec(2 * S, 1, 11, Block),
        rec(3 * S, 1, 99, SwitchIn),
        rec(4 * S, 1, 99, Block),
        rec(5 * S, 0, 10, Block),
        rec(6 * S, 1, 99, SwitchIn),
        rec(7 * S, 1, 99, Block),
    ]
}

#[test]
fn a_row_counts_the_machine_and_the_program_within_its_run() {
    let recs = records();
    let own: HashSet<u32> = [10, 11].into();
    let row = row_of(
        &program(),
        &RunRecord {
            records: &recs,
            cpus: 2,
            lost_records: 3,
            start_ns: S,
            end_ns: 5 * S,
            own_tids: Some(&own),
        },
    );
    assert_eq!(row.status, RowStatus::Measured);
    assert_eq!(row.command, "make -j2");
    assert!((row.seconds - 4.0).abs() < 1e-12);
    assert_eq!(row.records_outside, 4);
    assert_eq!(row.lost_records, 3);
    assert_eq!(row.own_tasks, 2);
    // Machine: 2 busy for 2 s (1..2, 3..4), 1 busy for 2 s: TLP 1.5.
    assert!((row.tlp.expect("busy") - 1.5).abs() < 1e-12);
    assert!((row.busy_cpus_fraction["1"] - 0.5).abs() < 1e-12);
    assert!((row.busy_cpus_fraction["2"] - 0.5).abs() < 1e-12);
    assert_eq!(row.idle_fraction, Some(0.0));
    // Program: 2 busy for 1 s, 1 busy for 3 s: TLP 1.25.
    assert!((row.own_tlp.expect("ran") - 1.25).abs() < 1e-12);
    assert!((row.own_busy_cpus_fraction["1"] - 0.75).abs() < 1e-12);
    assert!((row.own_busy_cpus_fraction["2"] - 0.25).abs() < 1e-12);
    assert_eq!(row.dropped_events, 0);
}

#[test]
fn the_idle_row_has_no_own_column_and_a_silent_window_no_tlp() {
    let recs = records();
    let idle = row_of(
        &Program {
            argv: Vec::new(),
            idle_s: 5,
            name: "idle",
            ..program()
        },
        &RunRecord {
            records: &recs,
            cpus: 2,
            lost_records: 0,
            start_ns: 0,
            end_ns: 8 * S,
            own_tids: None,
        },
    );
    assert_eq!(idle.command, "(nothing started, 5 s)");
    assert_eq!(idle.own_tlp, None);
    assert!(idle.own_busy_cpus_fraction.is_empty());
    assert_eq!(idle.records_outside, 0);
    let sum: f64 = idle.busy_cpus_fraction.values().sum();
    assert!((sum - 1.0).abs() < 1e-12);
    // A window with no records at all: no TLP, no shares, nothing invented.
    let empty = row_of(
        &program(),
        &RunRecord {
            records: &recs,
            cpus: 2,
            lost_records: 0,
            start_ns: 8 * S,
            end_ns: 9 * S,
            own_tids: Some(&HashSet::from([10])),
        },
    );
    assert_eq!(empty.tlp, None);
    assert!(empty.busy_cpus_fraction.is_empty());
    assert_eq!(empty.records_outside, recs.len() as u64);
}

#[test]
fn a_skipped_row_keeps_its_reason_and_serialises_the_issue_shape() {
    let row = ProgramRow::skipped(&program(), "make not found (package make)".into());
    let v = serde_json::to_value(&row).expect("serialises");
    assert_eq!(v["status"], "skipped");
    assert_eq!(v["reason"], "make not found (package make)");
    for key in [
        "name",
        "tlp",
        "busy_cpus_fraction",
        "seconds",
        "own_tlp",
        "dropped_events",
        "command",
    ] {
        assert!(v.get(key).is_some(), "{key} missing");
    }
}

#[test]
fn the_seed_average_is_the_geometric_mean_of_its_rows() {
    // The seed's 1.26 is the geometric mean of the nine rows above it, the idle system included
    // (of the eight apps alone it would be 1.30).
    // The report's average (`geomean_tlp`), given the seed's nine rows as measured rows, is the
    // seed's: the same rule as the seed's table.
    let rows: Vec<ProgramRow> = SEED_TABLE_1_1[..9]
        .iter()
        .map(|seed| {
            let mut row = ProgramRow::skipped(&program(), "as the seed".into());
            row.tlp = Some(seed.tlp);
            row
        })
        .collect();
    let geo = geomean_tlp(&rows).expect("nine rows");
    assert!((geo - SEED_TABLE_1_1[9].tlp).abs() < 0.005, "{geo}");
    // An arithmetic mean would not be: 1.30.
    let mean = SEED_TABLE_1_1[..9].iter().map(|r| r.tlp).sum::<f64>() / 9.0;
    assert!((mean - SEED_TABLE_1_1[9].tlp).abs() > 0.03, "{mean}");
}

#[test]
fn the_geometric_mean_takes_the_rows_with_a_tlp() {
    let mut a = ProgramRow::skipped(&program(), "x".into());
    assert_eq!(geomean_tlp(std::slice::from_ref(&a)), None);
    a.tlp = Some(1.0);
    let mut b = a.clone();
    b.tlp = Some(4.0);
    let c = ProgramRow::skipped(&program(), "y".into());
    assert!((geomean_tlp(&[a, b, c]).expect("two rows") - 2.0).abs() < 1e-12);
}
