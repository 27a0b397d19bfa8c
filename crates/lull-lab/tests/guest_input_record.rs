//! `lull input record --device` against a real kernel's evdev: a uinput device reports keys
//! and touches, and the recording holds them, in order, timed from the first.
//!
//! Needs `/dev/uinput` and evdev, as root: runs only in the lab guest (`lull lab vm --tests`,
//! which sets `LULL_GUEST`); `#[ignore]`d on the host.
//!
//! Writing to uinput is synchronous: when `emit` returns, evdev has queued the records for every
//! reader, so the recorder (opened before) reads them all; it stops at the count.

use lull_lab::input_io::{DeviceRecorder, RecordEnd, RecordLimits, TraceWriter};
use lull_model::{RawEvent, TouchPhase};
use lull_os::evdev::{EvdevEncoder, InputRecord, ABS_X, ABS_Y, BTN_TOUCH, RECORD_SIZE};
use lull_os::uinput::{UinputCaps, UinputDevice};
use lull_workload::Trace;

const KEY_A: u16 = 30;
const AXIS_MAX: i32 = 4095;

#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn a_uinput_devices_events_are_recorded_as_a_trace() {
    lull_testkit::require_guest();
    let dev = UinputDevice::create(
        "lull guest input record",
        &UinputCaps {
            keys: vec![BTN_TOUCH, KEY_A],
            abs: vec![(ABS_X, 0, AXIS_MAX), (ABS_Y, 0, AXIS_MAX)],
            rel: vec![],
            msc: vec![],
        },
    )
    .expect("create the uinput device");
    let node = dev.event_path().unwrap();
    let mut recorder = DeviceRecorder::open(&node).unwrap();

    let sent = [
        RawEvent::Key {
            code: KEY_A,
            pressed: true,
        },
        RawEvent::Key {
            code: KEY_A,
            pressed: false,
        },
        RawEvent::Touch {
            phase: TouchPhase::Down,
            x: 100,
            y: 200,
        },
        RawEvent::Touch {
            phase: TouchPhase::Move,
            x: 140,
            y: 260,
        },
        RawEvent::Touch {
            phase: TouchPhase::Up,
            x: 140,
            y: 260,
        },
    ];
    let mut enc = EvdevEncoder::new();
    for raw in sent {
        let mut bytes = Vec::new();
        enc.encode(raw, 0, &mut bytes).unwrap();
        let records: Vec<InputRecord> = bytes
            .chunks_exact(RECORD_SIZE)
            .map(|c| InputRecord::from_bytes(c.try_into().unwrap()))
            .collect();
        dev.emit(&records).unwrap();
    }

    let mut writer = TraceWriter::new(Vec::new(), "guest").unwrap();
    let limits = RecordLimits {
        max_events: Some(sent.len() as u64),
        max_ns: None,
    };
    let r = recorder.record(limits, &mut writer, |_| {}).unwrap();
    assert_eq!(r.ended, RecordEnd::Count);
    assert_eq!((r.events, r.dropped, r.reordered), (5, 0, 0));
    let got = Trace::parse(&String::from_utf8(writer.into_inner()).unwrap()).unwrap();
    let raws: Vec<RawEvent> = got.events.iter().map(|e| e.raw).collect();
    assert_eq!(raws, sent);
    // The kernel stamped each packet as it was emitted: from 0, never going back.
    assert_eq!(got.events[0].at_ns, 0);
    assert!(got.events.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));

    // Destroying the device ends the recording as a source gone, with nothing more written.
    drop(dev);
    let mut writer = TraceWriter::new(Vec::new(), "").unwrap();
    let r = recorder
        .record(RecordLimits::default(), &mut writer, |_| {})
        .unwrap();
    assert_eq!((r.ended, r.events), (RecordEnd::SourceGone, 0));
}
