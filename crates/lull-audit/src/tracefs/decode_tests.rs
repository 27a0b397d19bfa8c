//! `format` files and `trace_pipe_raw` pages, each test a hand-built input and the values the
//! kernel's layout gives it (`events/header_page`, `events/header_event`, the `format` files).

use super::tests::{layout, runtime_payload, switch_payload, wakeup_payload, PageBuilder};
use super::*;

fn field(name: &str, offset: usize, size: usize, signed: bool) -> FieldFormat {
    FieldFormat {
        name: name.to_owned(),
        offset,
        size,
        signed,
    }
}

#[test]
fn a_format_file_gives_its_name_id_and_every_field() {
    let f = EventFormat::parse(super::tests::SWITCH_FMT).unwrap();
    assert_eq!((f.name.as_str(), f.id), ("sched_switch", 372));
    assert_eq!(
        f.fields,
        [
            field("common_type", 0, 2, false),
            field("common_flags", 2, 1, false),
            field("common_preempt_count", 3, 1, false),
            field("common_pid", 4, 4, true),
            field("prev_comm", 8, 16, false),
            field("prev_pid", 24, 4, true),
            field("prev_prio", 28, 4, true),
            field("prev_state", 32, 8, true),
            field("next_comm", 40, 16, false),
            field("next_pid", 56, 4, true),
            field("next_prio", 60, 4, true),
        ]
    );
}

#[test]
fn format_errors_name_what_is_wrong() {
    let err = |text: &str| match EventFormat::parse(text) {
        Err(TracefsError::Format(m)) => m,
        other => panic!("{text:?}: {other:?}"),
    };
    assert_eq!(err("ID: 5\n"), "no name line");
    assert_eq!(err("name: x\n"), "no ID line");
    assert_eq!(err("name: x\nID: 7a\n"), "bad ID \"7a\"");
    assert_eq!(err("name: x\nID: 65536\n"), "bad ID \"65536\"");
    let no_offset = "\tfield:int a;\tsize:4;\tsigned:1;";
    assert_eq!(
        err(&format!("name: x\nID: 1\n{no_offset}\n")),
        format!("bad field line {:?}", no_offset.trim())
    );
    for bad in [
        "field:int a;\toffset:x;\tsize:4;",
        "field:int a;\toffset:0;\tsize:-4;",
        "field:int a;\toffset:0;",
        "field:;\toffset:0;\tsize:4;",
        "field:int [4];\toffset:0;\tsize:4;",
    ] {
        assert!(
            err(&format!("name: x\nID: 1\n{bad}\n")).starts_with("bad field line"),
            "{bad}"
        );
    }
    // No `signed:` part: unsigned. An array keeps its name without the brackets.
    let f =
        EventFormat::parse("name: x\nID: 65535\n field:char c[16]; offset:3; size:16;\n").unwrap();
    assert_eq!(
        (f.id, f.fields.clone()),
        (65535, vec![field("c", 3, 16, false)])
    );
}

/// The format texts of `tests::layout`, with a 4-byte `prev_state` (a `long` on a 32-bit
/// kernel) and no `sched_stat_runtime`.
fn old_kernel_layout() -> SchedLayout {
    let switch = super::tests::SWITCH_FMT.replace(
        "field:long prev_state;\toffset:32;\tsize:8;",
        "field:long prev_state;\toffset:32;\tsize:4;",
    );
    let wk = wake_fmt("sched_wakeup", 374);
    let wkn = wake_fmt("sched_wakeup_new", 373);
    SchedLayout::parse(SchedFormatTexts {
        sched_switch: &switch,
        sched_wakeup: &wk,
        sched_wakeup_new: &wkn,
        sched_process_exit: super::tests::EXIT_FMT,
        sched_stat_runtime: None,
    })
    .unwrap()
}

fn wake_fmt(name: &str, id: u16) -> String {
    format!(
        "name: {name}\nID: {id}\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n"
    )
}

fn decode_all(
    l: &SchedLayout,
    page: &[u8],
) -> (Result<PageInfo, TracefsError>, Vec<(u64, SchedEvent)>) {
    let mut got = Vec::new();
    let info = l.decode_page(page, |ts, e| got.push((ts, e)));
    (info, got)
}

#[test]
fn every_event_decodes_with_every_field() {
    let l = layout();
    let mut wakeup_new = wakeup_payload("fresh", 31, 3);
    wakeup_new[0..2].copy_from_slice(&373u16.to_le_bytes());
    wakeup_new[28..32].copy_from_slice(&(-5i32).to_le_bytes());
    let mut switch = switch_payload(("prev", 30), 0x100, ("next", 31));
    switch[28..32].copy_from_slice(&99i32.to_le_bytes());
    switch[60..64].copy_from_slice(&101i32.to_le_bytes());
    let mut exit = vec![0u8; 36];
    exit[0..2].copy_from_slice(&369u16.to_le_bytes());
    exit[8..12].copy_from_slice(b"gone");
    exit[24..28].copy_from_slice(&30u32.to_le_bytes());
    exit[28..32].copy_from_slice(&139i32.to_le_bytes());
    let mut p = PageBuilder::new(500);
    p.event(1, &wakeup_payload("woken", 30, 2));
    p.event(2, &wakeup_new);
    p.event(3, &switch);
    p.event(4, &exit);
    p.event(5, &runtime_payload(31, 1 << 40));
    let (info, got) = decode_all(&l, &p.finish(None));
    let c = Comm::new;
    assert_eq!(
        got,
        [
            (
                501,
                SchedEvent::Wakeup {
                    comm: c("woken"),
                    pid: 30,
                    prio: 120,
                    target_cpu: 2,
                    new: false
                }
            ),
            (
                503,
                SchedEvent::Wakeup {
                    comm: c("fresh"),
                    pid: 31,
                    prio: -5,
                    target_cpu: 3,
                    new: true
                }
            ),
            (
                506,
                SchedEvent::Switch {
                    prev_comm: c("prev"),
                    prev_pid: 30,
                    prev_prio: 99,
                    prev_state: 0x100,
                    next_comm: c("next"),
                    next_pid: 31,
                    next_prio: 101
                }
            ),
            (
                510,
                SchedEvent::Exit {
                    comm: c("gone"),
                    pid: 30,
                    prio: 139
                }
            ),
            (
                515,
                SchedEvent::Runtime {
                    pid: 31,
                    runtime_ns: 1 << 40
                }
            ),
        ]
    );
    assert_eq!(
        info.unwrap(),
        PageInfo {
            loss: PageLoss::default(),
            sched_events: 5,
            other_events: 0
        }
    );
}

#[test]
fn a_four_byte_prev_state_and_no_runtime_event_are_read() {
    let l = old_kernel_layout();
    let mut switch = switch_payload(("a", 1), 0, ("b", 2));
    // A negative int (sign-extended) and a preemption, as a 4-byte field.
    switch[32..36].copy_from_slice(&(-2i32).to_le_bytes());
    switch[36..40].copy_from_slice(&[0xff; 4]);
    let mut p = PageBuilder::new(0);
    p.event(1, &switch);
    // Without sched_stat_runtime its id is some other tracepoint's.
    p.event(1, &runtime_payload(2, 7));
    let (info, got) = decode_all(&l, &p.finish(None));
    assert!(matches!(
        got[..],
        [(
            1,
            SchedEvent::Switch {
                prev_state: -2,
                prev_pid: 1,
                next_pid: 2,
                ..
            }
        )]
    ));
    let info = info.unwrap();
    assert_eq!((info.sched_events, info.other_events), (1, 1));
}

#[test]
fn layouts_refuse_fields_of_the_wrong_size_and_name_them() {
    let wk = wake_fmt("sched_wakeup", 374);
    fn texts<'a>(
        switch: &'a str,
        wakeup: &'a str,
        exit: &'a str,
        runtime: Option<&'a str>,
    ) -> SchedFormatTexts<'a> {
        SchedFormatTexts {
            sched_switch: switch,
            sched_wakeup: wakeup,
            sched_wakeup_new: wakeup,
            sched_process_exit: exit,
            sched_stat_runtime: runtime,
        }
    }
    let sw = super::tests::SWITCH_FMT;
    let ex = super::tests::EXIT_FMT;
    let cases = [
        (
            sw.replace(
                "size:16;\tsigned:0;\n\tfield:pid_t prev_pid",
                "size:8;\tsigned:0;\n\tfield:pid_t prev_pid",
            ),
            wk.clone(),
            ex.to_owned(),
            None,
            ("sched_switch", "prev_comm"),
        ),
        (
            sw.replace("offset:32;\tsize:8;", "offset:32;\tsize:2;"),
            wk.clone(),
            ex.to_owned(),
            None,
            ("sched_switch", "prev_state"),
        ),
        (
            sw.to_owned(),
            wk.replace(
                "target_cpu;\toffset:32;\tsize:4;",
                "target_cpu;\toffset:32;\tsize:8;",
            ),
            ex.to_owned(),
            None,
            ("sched_wakeup", "target_cpu"),
        ),
        (
            sw.to_owned(),
            wk.clone(),
            ex.replace("pid_t pid", "pid_t tid"),
            None,
            ("sched_process_exit", "pid"),
        ),
        (
            sw.to_owned(),
            wk.clone(),
            ex.to_owned(),
            Some(super::tests::RUNTIME_FMT.replace("size:8;", "size:4;")),
            ("sched_stat_runtime", "runtime"),
        ),
    ];
    for (s, w, e, r, (event, field)) in cases {
        assert_eq!(
            SchedLayout::parse(texts(&s, &w, &e, r.as_deref())),
            Err(TracefsError::Field { event, field }),
            "{event}.{field}"
        );
    }
}

/// A page of raw event words: `(type_len | time_delta << 5, array...)` as `header_event` says.
fn raw_page(ts: u64, commit_flags: u64, words: &[u32]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&ts.to_le_bytes());
    p.extend_from_slice(&((words.len() as u64 * 4) | commit_flags).to_le_bytes());
    for w in words {
        p.extend_from_slice(&w.to_le_bytes());
    }
    p
}

fn payload_words(payload: &[u8]) -> Vec<u32> {
    payload
        .chunks(4)
        .map(|c| {
            let mut b = [0u8; 4];
            b[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(b)
        })
        .collect()
}

#[test]
fn padding_time_extends_and_absolute_stamps_move_the_clock() {
    let l = layout();
    let run = payload_words(&runtime_payload(9, 1));
    let ev = |delta: u32| {
        let mut w = vec![(delta << 5) | run.len() as u32];
        w.extend_from_slice(&run);
        w
    };
    let mut words = Vec::new();
    // Padding of 16 bytes (delta non-zero: not the end of the page), skipped: its length word
    // counts itself and what follows.
    words.extend_from_slice(&[(1 << 5) | TYPE_PADDING, 12, 0xdead, 0xbeef]);
    words.extend(ev(3)); // 1_000 + 3
                         // Time extend: delta 5 in the low 27 bits, 2 in the array word: + 2 << 27 | 5.
    words.extend_from_slice(&[(5 << 5) | TYPE_TIME_EXTEND, 2]);
    words.extend(ev(4));
    // Absolute stamp: 59 bits, the page's upper bits kept.
    words.extend_from_slice(&[(7 << 5) | TYPE_TIME_STAMP, 1]);
    words.extend(ev(1));
    // A null event (padding, delta 0): the rest of the page holds nothing.
    words.push(TYPE_PADDING);
    words.extend(ev(1));
    let ts0 = (1u64 << 60) | 1_000;
    let (info, got) = decode_all(&l, &raw_page(ts0, 0, &words));
    let ts: Vec<u64> = got.iter().map(|&(t, _)| t).collect();
    let extended = ts0 + 3 + (2 << 27) + 5 + 4;
    assert_eq!(ts, [ts0 + 3, extended, ((1 << 60) | (1 << 27) | 7) + 1]);
    assert_eq!(info.unwrap().sched_events, 3);
    // Padding to exactly the end of the data, as the kernel fills the rest of a page.
    let mut words = ev(2);
    words.extend_from_slice(&[(1 << 5) | TYPE_PADDING, 8, 0]);
    let (info, got) = decode_all(&l, &raw_page(10, 0, &words));
    assert_eq!((info.unwrap().sched_events, got[0].0), (1, 12));
}

#[test]
fn long_events_carry_their_length_and_are_word_aligned() {
    let l = layout();
    let run = payload_words(&runtime_payload(4, 77));
    let mut words = Vec::new();
    // type_len 0: array[0] is the length of the data plus itself.
    words.push(2 << 5);
    words.push(run.len() as u32 * 4 + 4);
    words.extend_from_slice(&run);
    // A long event of 25 data bytes: 24 + 1, then padding to the next word.
    let mut other = runtime_payload(5, 0);
    other[0..2].copy_from_slice(&999u16.to_le_bytes());
    other.push(0xaa);
    words.push(1 << 5);
    words.push(other.len() as u32 + 4);
    words.extend(payload_words(&other));
    words.push((1 << 5) | run.len() as u32);
    words.extend_from_slice(&run);
    let (info, got) = decode_all(&l, &raw_page(10, 0, &words));
    assert_eq!(
        got,
        [
            (
                12,
                SchedEvent::Runtime {
                    pid: 4,
                    runtime_ns: 77
                }
            ),
            (
                14,
                SchedEvent::Runtime {
                    pid: 4,
                    runtime_ns: 77
                }
            )
        ]
    );
    assert_eq!(
        (
            info.as_ref().unwrap().sched_events,
            info.unwrap().other_events
        ),
        (2, 1)
    );
}

#[test]
fn damaged_events_are_typed_errors_at_their_offset() {
    let l = layout();
    // A long event whose length does not even cover its own length word.
    assert_eq!(
        decode_all(&l, &raw_page(0, 0, &[1 << 5, 3])).0,
        Err(TracefsError::EventShort { offset: 0, len: 3 })
    );
    // Exactly its length word: no data, too short for an event type.
    assert_eq!(
        decode_all(&l, &raw_page(0, 0, &[1 << 5, 4])).0,
        Err(TracefsError::EventShort { offset: 0, len: 0 })
    );
    // Two bytes: an event type and nothing else, some other tracepoint's.
    let info = decode_all(&l, &raw_page(0, 0, &[1 << 5, 6, 999]))
        .0
        .unwrap();
    assert_eq!((info.sched_events, info.other_events), (0, 1));
    // A long event's length running past the committed data.
    assert_eq!(
        decode_all(&l, &raw_page(0, 0, &[1 << 5, 12, 363])).0,
        Err(TracefsError::EventOverrun { offset: 0 })
    );
    // Padding longer than the data, and padding without its length word.
    assert_eq!(
        decode_all(&l, &raw_page(0, 0, &[(1 << 5) | TYPE_PADDING, 8])).0,
        Err(TracefsError::EventOverrun { offset: 12 })
    );
    assert_eq!(
        decode_all(&l, &raw_page(0, 0, &[(1 << 5) | TYPE_PADDING])).0,
        Err(TracefsError::EventOverrun { offset: 0 })
    );
    // The largest padding length: the offset it gives is past the data.
    assert_eq!(
        decode_all(&l, &raw_page(0, 0, &[(1 << 5) | TYPE_PADDING, u32::MAX])).0,
        Err(TracefsError::EventOverrun {
            offset: 4 + u32::MAX as usize
        })
    );
    // A time extend without its array word.
    assert_eq!(
        decode_all(&l, &raw_page(0, 0, &[TYPE_TIME_EXTEND])).0,
        Err(TracefsError::EventOverrun { offset: 0 })
    );
    // A short event of one word of data: its fields do not fit.
    assert_eq!(
        decode_all(&l, &raw_page(0, 0, &[(1 << 5) | 1, 372])).0,
        Err(TracefsError::EventShort { offset: 0, len: 4 })
    );
    // Trailing bytes shorter than an event header are ignored.
    let mut page = raw_page(0, 0, &[]);
    page[8] = 3;
    page.extend_from_slice(&[1, 2, 3]);
    assert_eq!(decode_all(&l, &page).0.unwrap(), PageInfo::default());
}

#[test]
fn the_commit_word_gives_the_data_length_and_the_loss() {
    let l = layout();
    let run = payload_words(&runtime_payload(4, 77));
    let mut words = vec![(1 << 5) | run.len() as u32];
    words.extend_from_slice(&run);
    let n = words.len() * 4;
    let with_count = |flags: u64, count: u64| {
        let mut p = raw_page(0, flags, &words);
        p.extend_from_slice(&count.to_le_bytes());
        p
    };
    let loss = |page: &[u8]| decode_all(&l, page).0.unwrap().loss;
    assert_eq!(loss(&with_count(0, 9)), PageLoss::default());
    assert_eq!(
        loss(&with_count(RB_MISSED_EVENTS, 9)),
        PageLoss {
            missed: true,
            count: None
        }
    );
    assert_eq!(
        loss(&with_count(RB_MISSED_EVENTS | RB_MISSED_STORED, 9)),
        PageLoss {
            missed: true,
            count: Some(9)
        }
    );
    // The stored flag alone says nothing was missed.
    assert_eq!(loss(&with_count(RB_MISSED_STORED, 9)), PageLoss::default());
    // A stored count cut off by the page's end is not invented.
    let mut cut = with_count(RB_MISSED_EVENTS | RB_MISSED_STORED, 9);
    cut.truncate(PAGE_HEADER_SIZE + n + 7);
    assert_eq!(
        loss(&cut),
        PageLoss {
            missed: true,
            count: None
        }
    );
    // Bits above the flags are not part of the length.
    let (info, got) = decode_all(&l, &with_count(1 << 40, 0));
    assert_eq!((info.unwrap().sched_events, got.len()), (1, 1));
    // The commit may end exactly at the page's end, not one byte past it.
    let exact = raw_page(0, 0, &words);
    assert_eq!(decode_all(&l, &exact).0.unwrap().sched_events, 1);
    let mut over = exact.clone();
    over[8..16].copy_from_slice(&(n as u64 + 1).to_le_bytes());
    assert_eq!(
        decode_all(&l, &over).0,
        Err(TracefsError::Commit {
            commit: n as u64 + 1,
            avail: n
        })
    );
    // A page of exactly its header holds nothing; one byte less is refused.
    assert_eq!(
        decode_all(&l, &[0; PAGE_HEADER_SIZE]).0.unwrap(),
        PageInfo::default()
    );
    assert_eq!(
        decode_all(&l, &[0; PAGE_HEADER_SIZE - 1]).0,
        Err(TracefsError::PageShort(PAGE_HEADER_SIZE - 1))
    );
}

#[test]
fn runnable_states_are_running_and_preempted_only() {
    assert!(SchedEvent::state_is_runnable(0));
    assert!(SchedEvent::state_is_runnable(TASK_REPORT_PREEMPTED));
    assert!(!SchedEvent::state_is_runnable(1));
    assert!(!SchedEvent::state_is_runnable(TASK_REPORT_PREEMPTED | 2));
    assert!(!SchedEvent::state_is_runnable(0x10));
}
