//! Export to the JSON trace format ui.perfetto.dev opens: `systemTraceEvents` holds ftrace text
//! (`sched_switch` and `sched_wakeup` lines, which give one track per CPU and per thread) and
//! `traceEvents` holds counter events (`"ph":"C"`) for the busy-CPU count and the windowed TLP.
//!
//! Switches are rebuilt from the records: a preempt/block record followed by a switch-in on the
//! same CPU at the same time is one switch; a switch-out alone switches to idle (`swapper/N`), a
//! switch-in alone switches from idle. Whitespace in command names becomes `_` so the text stays
//! parseable.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::log::AuditLog;
use crate::record::{AuditEventKind, AuditRecord, Comm};
use crate::tlp::{TaskFilter, TlpReport};

fn comm_text(c: &Comm) -> String {
    c.to_string_lossy()
        .chars()
        .map(|ch| {
            if ch.is_whitespace() || ch.is_control() {
                '_'
            } else {
                ch
            }
        })
        .collect()
}

fn ts_text(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1_000)
}

fn state_text(kind: AuditEventKind) -> &'static str {
    if kind == AuditEventKind::Preempt {
        "R+"
    } else {
        "S"
    }
}

/// The ftrace text of the records (header plus one line per switch and wakeup).
pub fn ftrace_text(records: &[AuditRecord], cpus: u16) -> String {
    let recs = crate::time_ordered(records);
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# tracer: nop\n#\n# entries-in-buffer/entries-written: {n}/{n}   #P:{cpus}\n#",
        n = recs.len()
    );
    let mut i = 0;
    while i < recs.len() {
        let r = &recs[i];
        let cpu = r.cpu;
        let idle = format!("swapper/{cpu}");
        match r.kind {
            AuditEventKind::Preempt | AuditEventKind::Block => {
                let next = recs.get(i + 1).filter(|n| {
                    n.kind == AuditEventKind::SwitchIn && n.cpu == cpu && n.ts_ns == r.ts_ns
                });
                let (nc, np, npr) = match next {
                    Some(n) => (comm_text(&n.comm), n.tid, n.prio),
                    None => (idle.clone(), 0, 120),
                };
                let _ = writeln!(
                    t,
                    "{:>16}-{:<7} [{:03}] d..2. {}: sched_switch: prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} next_pid={} next_prio={}",
                    comm_text(&r.comm), r.tid, cpu, ts_text(r.ts_ns), comm_text(&r.comm), r.tid, r.prio, state_text(r.kind), nc, np, npr
                );
                i += if next.is_some() { 2 } else { 1 };
                continue;
            }
            AuditEventKind::SwitchIn => {
                let _ = writeln!(
                    t,
                    "{:>16}-{:<7} [{:03}] d..2. {}: sched_switch: prev_comm={idle} prev_pid=0 prev_prio=120 prev_state=R ==> next_comm={} next_pid={} next_prio={}",
                    "<idle>", 0, cpu, ts_text(r.ts_ns), comm_text(&r.comm), r.tid, r.prio
                );
            }
            AuditEventKind::Unblock => {
                let ev = if r.flags & crate::record::FLAG_NEW_TASK != 0 {
                    "sched_wakeup_new"
                } else {
                    "sched_wakeup"
                };
                let _ =
                    writeln!(
                    t,
                    "{:>16}-{:<7} [{:03}] d..2. {}: {ev}: comm={} pid={} prio={} target_cpu={:03}",
                    "<...>", 0, r.ring, ts_text(r.ts_ns), comm_text(&r.comm), r.tid, r.prio, cpu
                );
            }
            AuditEventKind::Terminate => {
                let _ = writeln!(
                    t,
                    "{:>16}-{:<7} [{:03}] d..2. {}: sched_process_exit: comm={} pid={} prio={}",
                    comm_text(&r.comm),
                    r.tid,
                    cpu,
                    ts_text(r.ts_ns),
                    comm_text(&r.comm),
                    r.tid,
                    r.prio
                );
            }
        }
        i += 1;
    }
    t
}

/// The whole JSON trace of a log: every task, TLP counters over `window_ns` windows.
pub fn export_log(log: &AuditLog, window_ns: u64) -> Value {
    let cpus = log.header.rings;
    let tlp = crate::tlp::analyze(&log.records, cpus, &TaskFilter::all(), window_ns, 0);
    export(&log.records, cpus, &tlp)
}

/// The whole JSON trace.
pub fn export(records: &[AuditRecord], cpus: u16, tlp: &TlpReport) -> Value {
    let mut counters = Vec::new();
    for &(ts, busy) in &tlp.steps {
        counters.push(json!({"name": "busy CPUs", "ph": "C", "ts": ts as f64 / 1e3, "pid": 0, "tid": 0, "args": {"busy_cpus": busy}}));
    }
    // A counter holds its value until the next sample: only changes are written.
    let mut last = None;
    for w in &tlp.windows {
        let v = w.tlp.unwrap_or(0.0);
        if last != Some(v) {
            counters.push(json!({"name": "TLP", "ph": "C", "ts": w.start_ns as f64 / 1e3, "pid": 0, "tid": 0, "args": {"tlp": v}}));
            last = Some(v);
        }
    }
    json!({
        "displayTimeUnit": "ns",
        "systemTraceEvents": ftrace_text(records, cpus),
        "traceEvents": counters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlp::analyze;
    use crate::tracefs::tests::{layout, switch_payload, wakeup_payload, PageBuilder};
    use proptest::prelude::*;

    #[test]
    fn export_round_trips_through_the_ftrace_reader() {
        // A small live-like stream decoded from pages, exported, and read back as text.
        let l = layout();
        let mut p0 = PageBuilder::new(1_000_000_000);
        p0.event(1000, &wakeup_payload("a b", 10, 0));
        p0.event(1000, &switch_payload(("swapper/0", 0), 0, ("a b", 10)));
        p0.event(500_000, &switch_payload(("a b", 10), 0x100, ("c", 11)));
        p0.event(500_000, &switch_payload(("c", 11), 1, ("swapper/0", 0)));
        let mut p1 = PageBuilder::new(1_000_100_000);
        p1.event(1000, &switch_payload(("swapper/1", 0), 0, ("d", 12)));
        p1.event(900_000, &switch_payload(("d", 12), 1, ("swapper/1", 0)));
        let mut b = crate::tracefs::RecordBuilder::new(2, Default::default(), true);
        let mut recs = Vec::new();
        for (cpu, page) in [(0u16, p0.finish(None)), (1, p1.finish(None))] {
            l.decode_page(&page, |ts, e| {
                b.on_event(cpu, ts, e, &mut |t| Some(t), &mut |r| recs.push(r))
            })
            .unwrap();
        }
        let tlp = analyze(&recs, 2, &TaskFilter::all(), 100_000, 0);
        let v = export(&recs, 2, &tlp);
        let text = v["systemTraceEvents"].as_str().unwrap();
        assert!(text.contains("sched_switch: prev_comm=a_b prev_pid=10 prev_prio=120 prev_state=R+ ==> next_comm=c next_pid=11"));
        let (back, _) = crate::ftrace_text::read(text, &[]).unwrap();
        let tlp_back = analyze(&back.records, 2, &TaskFilter::all(), 100_000, 0);
        assert_eq!(tlp_back.busy_cpus_fraction, tlp.busy_cpus_fraction);
        assert_eq!(tlp_back.tlp, tlp.tlp);
        assert!(v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["ph"] == "C"));
    }

    /// Every kind of line, written out by hand in the kernel's `trace` layout.
    #[test]
    fn ftrace_text_of_a_hand_made_stream() {
        use crate::record::FLAG_NEW_TASK;
        use AuditEventKind::*;
        let rec = |ts_ns, ring, seq, cpu, tid, comm, prio, kind| AuditRecord {
            seq,
            ring,
            comm: Comm::new(comm),
            prio,
            ..AuditRecord::synthetic(ts_ns, cpu, tid, kind)
        };
        let mut woken_new = rec(1_000_002_000, 1, 0, 0, 10, "a b", 120, Unblock);
        woken_new.flags = FLAG_NEW_TASK;
        let recs = [
            woken_new,
            rec(1_000_005_000, 0, 0, 0, 10, "a b", 120, SwitchIn),
            // A preemption with a wakeup between it and the next switch-in: not one switch.
            rec(1_000_009_000, 0, 1, 0, 10, "a b", 110, Preempt),
            rec(1_000_009_000, 0, 2, 0, 11, "c", 120, Unblock),
            rec(1_000_009_000, 0, 3, 0, 12, "d", 100, SwitchIn),
            // A block and a switch-in on the same CPU at the same time: one switch.
            rec(2_000_000_999, 0, 4, 0, 12, "d", 100, Block),
            rec(2_000_000_999, 0, 5, 0, 11, "c", 120, SwitchIn),
            // A switch-in at the same time on another CPU: two switches, each with idle.
            rec(2_500_000_000, 0, 6, 0, 11, "c", 120, Block),
            rec(2_500_000_000, 1, 1, 1, 13, "e\tf", 120, SwitchIn),
            rec(3_000_000_000, 1, 2, 1, 13, "e\tf", 120, Terminate),
        ];
        let want = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 10/10   #P:2
#
           <...>-0       [001] d..2. 1.000002: sched_wakeup_new: comm=a_b pid=10 prio=120 target_cpu=000
          <idle>-0       [000] d..2. 1.000005: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a_b next_pid=10 next_prio=120
             a_b-10      [000] d..2. 1.000009: sched_switch: prev_comm=a_b prev_pid=10 prev_prio=110 prev_state=R+ ==> next_comm=swapper/0 next_pid=0 next_prio=120
           <...>-0       [000] d..2. 1.000009: sched_wakeup: comm=c pid=11 prio=120 target_cpu=000
          <idle>-0       [000] d..2. 1.000009: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=d next_pid=12 next_prio=100
               d-12      [000] d..2. 2.000000: sched_switch: prev_comm=d prev_pid=12 prev_prio=100 prev_state=S ==> next_comm=c next_pid=11 next_prio=120
               c-11      [000] d..2. 2.500000: sched_switch: prev_comm=c prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
          <idle>-0       [001] d..2. 2.500000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=e_f next_pid=13 next_prio=120
             e_f-13      [001] d..2. 3.000000: sched_process_exit: comm=e_f pid=13 prio=120
";
        // Given in any order: the text is in time order.
        let mut shuffled = recs.to_vec();
        shuffled.reverse();
        assert_eq!(ftrace_text(&shuffled, 2), want);
    }

    /// The counter tracks: every busy-CPU step, and the TLP only where it changes (a counter
    /// holds its value), a window without target tasks as 0.
    #[test]
    fn counters_are_the_steps_and_the_tlp_changes() {
        let window = |start_ns: u64, tlp| crate::tlp::TlpWindow {
            start_ns,
            end_ns: start_ns + 1000,
            tlp,
            busy_cpus_fraction: vec![],
        };
        let report = TlpReport {
            tlp: Some(1.5),
            busy_cpus_fraction: Default::default(),
            dropped_events: 0,
            lost_records: 0,
            cpus: 2,
            span_ns: 6000,
            busy_ns: 4000,
            window_ns: 1000,
            windows: vec![
                window(0, Some(2.0)),
                window(1000, Some(1.0)),
                window(2000, Some(1.0)),
                window(3000, None),
                window(4000, None),
                window(5000, Some(1.0)),
            ],
            steps: vec![(0, 2), (1500, 1), (3000, 0), (5000, 1)],
        };
        let v = export(&[], 2, &report);
        let busy = |ts: f64, n: u16| json!({"name": "busy CPUs", "ph": "C", "ts": ts, "pid": 0, "tid": 0, "args": {"busy_cpus": n}});
        let tlp = |ts: f64, t: f64| json!({"name": "TLP", "ph": "C", "ts": ts, "pid": 0, "tid": 0, "args": {"tlp": t}});
        assert_eq!(
            v["traceEvents"],
            json!([
                busy(0.0, 2),
                busy(1.5, 1),
                busy(3.0, 0),
                busy(5.0, 1),
                tlp(0.0, 2.0),
                tlp(1.0, 1.0),
                tlp(3.0, 0.0),
                tlp(5.0, 1.0),
            ])
        );
        assert_eq!(v["displayTimeUnit"], "ns");
        assert_eq!(v["systemTraceEvents"], ftrace_text(&[], 2));
    }

    /// A log's export is that of its records over its rings, with the TLP of every task.
    #[test]
    fn a_log_exports_its_records_over_its_rings() {
        use AuditEventKind::{Block, SwitchIn};
        let r = AuditRecord::synthetic;
        let records = vec![
            r(0, 0, 1, SwitchIn),
            r(0, 2, 2, SwitchIn),
            r(2_000, 2, 2, Block),
            r(4_000, 0, 1, Block),
        ];
        let log = AuditLog {
            header: crate::log::LogHeader {
                rings: 3,
                ring_capacity: 16,
                start_ns: 0,
            },
            records: records.clone(),
            summary: Default::default(),
        };
        let v = export_log(&log, 1_000);
        let tlp = analyze(&records, 3, &TaskFilter::all(), 1_000, 0);
        assert_eq!(tlp.windows.len(), 4);
        assert_eq!(v, export(&records, 3, &tlp));
        assert!(v["systemTraceEvents"]
            .as_str()
            .unwrap()
            .contains("entries-written: 4/4   #P:3\n"));
        // Two CPUs busy in the first two windows, one in the next two.
        let tlps: Vec<f64> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "TLP")
            .map(|e| e["args"]["tlp"].as_f64().unwrap())
            .collect();
        assert_eq!(tlps, [2.0, 1.0]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Any record stream exports to text that the ftrace reader accepts with the same
        /// busy-CPU fractions (microsecond rounding aside: timestamps here are whole µs).
        #[test]
        fn export_is_readable(ev in prop::collection::vec((0u64..1000, 0u16..2, 1u32..5, 0u8..5), 1..100)) {
            let recs: Vec<_> = ev.iter().enumerate().map(|(i, &(t, c, tid, k))| {
                let mut r = crate::tlp::tests::r(t * 1000, c, tid, AuditEventKind::ALL[k as usize]);
                r.seq = i as u64;
                r
            }).collect();
            let text = ftrace_text(&recs, 2);
            let parsed = crate::ftrace_text::read(&text, &[]);
            prop_assert!(parsed.is_ok() || matches!(parsed, Err(crate::ftrace_text::FtraceError::Empty)), "{:?}", parsed.err());
        }
    }
}
