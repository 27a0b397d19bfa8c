//! [`RecordBuilder`] on hand-made event streams, each record worked out by hand from the rules
//! its documentation states.

use super::*;
use crate::record::AuditEventKind::{Block, Preempt, SwitchIn, Terminate, Unblock};

type Resolve = fn(u32) -> Option<u32>;

/// Feeds `(ring_cpu, event)` pairs, timestamps 1, 2, …; returns the records.
fn feed(b: &mut RecordBuilder, resolve: Resolve, events: &[(u16, SchedEvent)]) -> Vec<AuditRecord> {
    let mut out = Vec::new();
    for (i, &(ring, ev)) in events.iter().enumerate() {
        b.on_event(ring, i as u64 + 1, ev, &mut |t| resolve(t), &mut |r| {
            out.push(r)
        });
    }
    out
}

fn wakeup(comm: &str, pid: u32, prio: i32, target_cpu: u32, new: bool) -> SchedEvent {
    SchedEvent::Wakeup {
        comm: Comm::new(comm),
        pid,
        prio,
        target_cpu,
        new,
    }
}

fn switch(prev: (&str, u32, i32), prev_state: i64, next: (&str, u32, i32)) -> SchedEvent {
    SchedEvent::Switch {
        prev_comm: Comm::new(prev.0),
        prev_pid: prev.1,
        prev_prio: prev.2,
        prev_state,
        next_comm: Comm::new(next.0),
        next_pid: next.1,
        next_prio: next.2,
    }
}

const IDLE: (&str, u32, i32) = ("swapper", 0, 120);
const SLEEP: i64 = 1;
const ZOMBIE: i64 = 0x20;
const DEAD: i64 = 0x10;

/// (kind, ts, tid, tgid, cpu, ring, rq_len, prio, exec_ns, switches, flags, comm)
type Row = (
    AuditEventKind,
    u64,
    u32,
    u32,
    u16,
    u16,
    u16,
    u8,
    u64,
    u32,
    u8,
    String,
);

fn rows(recs: &[AuditRecord]) -> Vec<Row> {
    recs.iter()
        .map(|r| {
            (
                r.kind,
                r.ts_ns,
                r.tid,
                r.tgid,
                r.cpu,
                r.ring,
                r.rq_len,
                r.prio,
                r.exec_ns,
                r.switches,
                r.flags,
                r.comm.to_string_lossy(),
            )
        })
        .collect()
}

fn stream() -> Vec<(u16, SchedEvent)> {
    vec![
        (0, wakeup("a", 10, -5, 1, false)),
        (0, wakeup("b", 11, 120, 1, true)),
        // Task 10 woken again, onto CPU 0: it moves there.
        (1, wakeup("a", 10, 120, 0, false)),
        (1, wakeup("a", 10, 120, 0, false)),
        (
            0,
            SchedEvent::Runtime {
                pid: 10,
                runtime_ns: 100,
            },
        ),
        (
            0,
            SchedEvent::Runtime {
                pid: 0,
                runtime_ns: 999,
            },
        ),
        (1, switch(IDLE, 0, ("b", 11, 200))),
        // Task 10, renamed, runs on CPU 1: it moves off CPU 0's queue.
        (1, switch(("b", 11, 120), SLEEP, ("a2", 10, 120))),
        (
            0,
            SchedEvent::Runtime {
                pid: 10,
                runtime_ns: 50,
            },
        ),
        (
            1,
            switch(("a2", 10, 120), TASK_REPORT_PREEMPTED, ("u", 13, 120)),
        ),
        (1, switch(("u", 13, 120), ZOMBIE, IDLE)),
        // Recorded on a ring past the CPU count: the last CPU's.
        (
            5,
            SchedEvent::Exit {
                comm: Comm::new("a2"),
                pid: 10,
                prio: 120,
            },
        ),
        // Task 13 was forgotten when it died: a new task of the same id starts afresh.
        (0, wakeup("u", 13, 120, 0, false)),
        // A task first seen switching out (it was running before the recording).
        (0, switch(("x", 14, 120), SLEEP, IDLE)),
        (1, wakeup("idle", 0, 120, 0, false)),
        (
            1,
            SchedEvent::Exit {
                comm: Comm::new("idle"),
                pid: 0,
                prio: 120,
            },
        ),
    ]
}

/// Task 13's process id cannot be resolved; every other task is its own process + 1000.
fn resolve(t: u32) -> Option<u32> {
    (t != 13).then_some(t + 1000)
}

fn expected() -> Vec<Row> {
    let s = |c: &str| c.to_owned();
    vec![
        (Unblock, 1, 10, 1010, 1, 0, 1, 0, 0, 0, 0, s("a")),
        (
            Unblock,
            2,
            11,
            1011,
            1,
            0,
            2,
            120,
            0,
            0,
            FLAG_NEW_TASK,
            s("b"),
        ),
        (Unblock, 3, 10, 1010, 0, 1, 1, 120, 0, 0, 0, s("a")),
        (Unblock, 4, 10, 1010, 0, 1, 1, 120, 0, 0, 0, s("a")),
        (SwitchIn, 7, 11, 1011, 1, 1, 1, 139, 0, 0, 0, s("b")),
        (Block, 8, 11, 1011, 1, 1, 0, 120, 0, 1, 0, s("b")),
        (SwitchIn, 8, 10, 1010, 1, 1, 1, 120, 100, 0, 0, s("a2")),
        (Preempt, 10, 10, 1010, 1, 1, 1, 120, 150, 1, 0, s("a2")),
        (
            SwitchIn,
            10,
            13,
            0,
            1,
            1,
            2,
            120,
            0,
            0,
            FLAG_TGID_UNKNOWN,
            s("u"),
        ),
        (
            Block,
            11,
            13,
            0,
            1,
            1,
            1,
            120,
            0,
            1,
            FLAG_TGID_UNKNOWN | FLAG_EXITING,
            s("u"),
        ),
        (Terminate, 12, 10, 1010, 1, 1, 1, 120, 150, 1, 0, s("a2")),
        (
            Unblock,
            13,
            13,
            0,
            0,
            0,
            1,
            120,
            0,
            0,
            FLAG_TGID_UNKNOWN,
            s("u"),
        ),
        (Block, 14, 14, 1014, 0, 0, 1, 120, 0, 1, 0, s("x")),
    ]
}

#[test]
fn records_carry_run_queue_lengths_execution_time_switches_and_flags() {
    let mut b = RecordBuilder::new(2, CountPolicy::default(), true);
    let recs = feed(&mut b, resolve, &stream());
    assert_eq!(rows(&recs), expected());
    assert_eq!(b.raw_events(), 16);
    assert_eq!(b.counted(), (vec![], 0));
}

#[test]
fn without_switches_only_unblock_block_and_terminate_are_logged() {
    let mut b = RecordBuilder::new(2, CountPolicy::default(), false);
    let recs = feed(&mut b, resolve, &stream());
    let want: Vec<Row> = expected()
        .into_iter()
        .filter(|r| matches!(r.0, Unblock | Block | Terminate))
        .collect();
    assert_eq!(rows(&recs), want);
}

#[test]
fn a_dead_task_is_forgotten_and_a_sleeping_one_is_not() {
    let mut b = RecordBuilder::new(1, CountPolicy::default(), true);
    let recs = feed(
        &mut b,
        resolve,
        &[
            (0, switch(IDLE, 0, ("s", 20, 120))),
            (0, switch(("s", 20, 120), SLEEP, ("d", 21, 120))),
            (0, switch(("d", 21, 120), DEAD, ("s", 20, 120))),
            (0, switch(("s", 20, 120), SLEEP, ("d", 21, 120))),
        ],
    );
    let got: Vec<(AuditEventKind, u32, u32, u8)> = recs
        .iter()
        .map(|r| (r.kind, r.tid, r.switches, r.flags))
        .collect();
    assert_eq!(
        got,
        [
            (SwitchIn, 20, 0, 0),
            (Block, 20, 1, 0),
            (SwitchIn, 21, 0, 0),
            (Block, 21, 1, FLAG_EXITING),
            (SwitchIn, 20, 1, 0),
            (Block, 20, 2, 0),
            // Task 21 died: the id's next task has switched out of nothing yet.
            (SwitchIn, 21, 0, 0),
        ]
    );
}

fn counted_policy() -> CountPolicy {
    CountPolicy {
        own_tgid: Some(50),
        kernel_workers: true,
        ignore_comms: vec!["trace-cmd".to_owned()],
    }
}

/// Threads 60 and 61 are the recorder's (process 50); 70's process is unknown.
fn counted_resolve(t: u32) -> Option<u32> {
    match t {
        60 | 61 => Some(50),
        70 => None,
        _ => Some(t),
    }
}

const COUNTED_COMMS: [(u32, &str); 11] = [
    (60, "rec"),
    (61, "rec-io"),
    (62, "kworker/0:1"),
    (63, "ksoftirqd/1"),
    (64, "rcu_preempt"),
    (65, "rcuc/0"),
    (66, "trace-cmd"),
    (67, "kworkerX"),
    (68, "rcu"),
    (69, "trace-cmd2"),
    (70, "lost"),
];

fn wake_all() -> Vec<(u16, SchedEvent)> {
    COUNTED_COMMS
        .iter()
        .map(|&(pid, comm)| (0, wakeup(comm, pid, 120, 0, false)))
        .collect()
}

fn logged(recs: &[AuditRecord]) -> Vec<u32> {
    recs.iter().map(|r| r.tid).collect()
}

#[test]
fn the_recorder_kernel_workers_and_ignored_names_are_counted_not_logged() {
    let mut b = RecordBuilder::new(1, counted_policy(), true);
    let mut events = wake_all();
    events.push((0, switch(("kworker/0:1", 62, 120), DEAD, IDLE)));
    events.push((0, switch(("trace-cmd", 66, 120), DEAD, IDLE)));
    events.push((
        0,
        SchedEvent::Runtime {
            pid: 63,
            runtime_ns: 40,
        },
    ));
    let recs = feed(&mut b, counted_resolve, &events);
    assert_eq!(logged(&recs), [67, 68, 69, 70]);
    let counted = |tid, tgid, class, comm: &str, events, exec_ns| CountedTask {
        tid,
        tgid,
        class,
        comm: Comm::new(comm),
        events,
        exec_ns,
    };
    use CountedClass::{Ignored, KernelWorker, Recorder};
    assert_eq!(
        b.counted(),
        (
            vec![
                // Exited first, in the order they exited; then the live ones by thread id.
                counted(62, 62, KernelWorker, "kworker/0:1", 2, 0),
                counted(66, 66, Ignored, "trace-cmd", 2, 0),
                counted(60, 50, Recorder, "rec", 1, 0),
                counted(61, 50, Recorder, "rec-io", 1, 0),
                counted(63, 63, KernelWorker, "ksoftirqd/1", 1, 40),
                counted(64, 64, KernelWorker, "rcu_preempt", 1, 0),
                counted(65, 65, KernelWorker, "rcuc/0", 1, 0),
            ],
            0
        )
    );
}

#[test]
fn each_counting_rule_applies_only_when_asked() {
    let tids = |policy| {
        let mut b = RecordBuilder::new(1, policy, true);
        logged(&feed(&mut b, counted_resolve, &wake_all()))
    };
    // Kernel workers logged when not asked for.
    assert_eq!(
        tids(CountPolicy {
            kernel_workers: false,
            ..counted_policy()
        }),
        [62, 63, 64, 65, 67, 68, 69, 70]
    );
    // No recorder: an unknown process is not the recorder's.
    assert_eq!(
        tids(CountPolicy {
            own_tgid: None,
            ..counted_policy()
        }),
        [60, 61, 67, 68, 69, 70]
    );
    assert_eq!(tids(CountPolicy::default()), COUNTED_COMMS.map(|(t, _)| t));
}

#[test]
fn counted_tasks_past_the_list_add_their_events_to_the_overflow() {
    let mut b = RecordBuilder::new(1, counted_policy(), true);
    let dies = |pid| (0, switch(("kworker/0:0", pid, 120), DEAD, IDLE));
    let mut events: Vec<(u16, SchedEvent)> = (1..=MAX_GONE_COUNTED as u32)
        .map(|i| dies(1000 + i))
        .collect();
    // One more with two events (woken, then dying), and one with one.
    events.push((0, wakeup("kworker/0:0", 9001, 120, 0, false)));
    events.push(dies(9001));
    events.push(dies(9002));
    let recs = feed(&mut b, counted_resolve, &events);
    assert!(recs.is_empty());
    let (list, overflow) = b.counted();
    assert_eq!(list.len(), MAX_GONE_COUNTED);
    assert_eq!(
        list.last().map(|c| (c.tid, c.events)),
        Some((1000 + 4096, 1))
    );
    assert_eq!(overflow, 3);
}

#[test]
fn priorities_are_clamped_to_the_kernels_range() {
    assert_eq!(
        [-1, 0, 120, 139, 140, i32::MAX, i32::MIN].map(prio_u8),
        [0, 0, 120, 139, 139, 139, 0]
    );
}
