//! Live: the recorder's log of a scheduler-heavy child decodes, explains every sequence gap,
//! holds the child's events with its execution time, counts the recorder's own threads rather
//! than logging them, and exports to a Perfetto trace whose ftrace text reads back.

use std::time::Duration;

use lull_audit::log::CountedClass;
use lull_audit::record::AuditEventKind;
use lull_audit::tlp::{analyze, TaskFilter};
use lull_lab::audit::recorder::{Extraction, Recorder, RecorderConfig};
use lull_lab::audit::workload::{run_all, Matrices, Workload};

mod common;

#[test]
fn recorded_log_is_complete_and_consistent() {
    if !common::recorder_can_run() {
        return;
    }
    let cfg = RecorderConfig {
        extraction: Extraction::Every(Duration::from_millis(100)),
        ..RecorderConfig::default()
    };
    let rec = Recorder::start(cfg, Vec::new()).expect("recorder starts");
    let mut m = Matrices::default();
    let (runs, _) = run_all(
        &[
            (Workload::PingPong { rounds: 2000 }, Some(0)),
            (Workload::MatMul { reps: 50 }, None),
        ],
        &mut m,
        None,
    )
    .expect("children run");
    let (bytes, summary) = rec.stop().expect("recorder stops");
    let log = lull_audit::log::decode(&bytes).expect("the recorder writes valid logs");
    let st = lull_audit::log::stats(&log);
    assert_eq!(st.records, summary.records);
    assert_eq!(
        st.unexplained_gap_records, 0,
        "every sequence gap is a counted loss"
    );
    // The ping-pong child: two wakeups and two switches per round, logged.
    let pp = runs[0].pid;
    let pp_in = log
        .records
        .iter()
        .filter(|r| r.tid == pp && r.kind == AuditEventKind::SwitchIn)
        .count();
    assert!(pp_in >= 1000, "ping-pong child switched in {pp_in} times");
    let mm = runs[1].pid;
    let exec = log
        .records
        .iter()
        .filter(|r| r.tid == mm)
        .map(|r| r.exec_ns)
        .max()
        .unwrap_or(0);
    let ru = runs[1].utime_ns + runs[1].stime_ns;
    assert!(
        exec > 0 && (exec as f64 - ru as f64).abs() <= ru as f64 * 0.02,
        "log exec {exec} ns vs getrusage {ru} ns"
    );
    // The recorder's own threads are counted, never logged.
    let me = std::process::id();
    assert!(
        log.records.iter().all(|r| r.tgid != me),
        "a recorder thread was logged"
    );
    assert!(log
        .summary
        .counted
        .iter()
        .any(|c| c.class == CountedClass::Recorder && c.tgid == me));
    // Export and read back.
    let tlp = analyze(
        &log.records,
        log.header.rings,
        &TaskFilter::all(),
        10_000_000,
        st.gap_records,
    );
    let v = lull_audit::perfetto::export(&log.records, log.header.rings, &tlp);
    let text = v["systemTraceEvents"].as_str().expect("ftrace text");
    let (back, counts) =
        lull_audit::ftrace_text::read(text, &[]).expect("exported text reads back");
    assert!(counts.sched_lines > 0);
    assert_eq!(back.header.rings, log.header.rings);
}

/// Live: rings far smaller than one extraction interval's events overwrite their oldest entries,
/// and the log still accounts for every lost sequence number.
#[test]
fn tiny_rings_overwrite_and_every_gap_is_counted() {
    if !common::recorder_can_run() {
        return;
    }
    let cfg = RecorderConfig {
        ring_entries: 16,
        extraction: Extraction::Every(Duration::from_secs(10)),
        ..RecorderConfig::default()
    };
    let rec = Recorder::start(cfg, Vec::new()).expect("recorder starts");
    let mut m = Matrices::default();
    run_all(
        &[(Workload::PingPong { rounds: 500 }, Some(0))],
        &mut m,
        None,
    )
    .expect("child runs");
    let (bytes, summary) = rec.stop().expect("recorder stops");
    let log = lull_audit::log::decode(&bytes).expect("valid log");
    let st = lull_audit::log::stats(&log);
    assert!(
        summary.overwritten > 0,
        "500 ping-pong rounds overflow 16-entry rings"
    );
    assert!(log.records.len() <= 16 * usize::from(log.header.rings) * 2);
    assert_eq!(st.overwritten, summary.overwritten);
    assert_eq!(st.unexplained_gap_records, 0);
    assert!(st.gap_records >= st.overwritten);
}
