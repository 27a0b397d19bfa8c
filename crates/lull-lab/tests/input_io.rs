//! `lull input inject` into a running daemon, and `lull input record` of what it delivers: the
//! recording holds the injected events, in order, with their spacing.

use lull_esm::EsmConfig;
use lull_lab::input_io::{self, DaemonRecorder, RecordEnd, RecordLimits, TraceWriter};
use lull_model::{EventKind, RawEvent, TouchPhase};
use lull_workload::trace::{TimedEvent, Trace};
use lulld::test_support::TestDaemon;

fn trace() -> Trace {
    let at = |ms: u64, raw| TimedEvent {
        at_ns: ms * 1_000_000,
        raw,
    };
    Trace {
        events: vec![
            at(
                0,
                RawEvent::Touch {
                    phase: TouchPhase::Down,
                    x: 100,
                    y: 200,
                },
            ),
            at(
                10,
                RawEvent::Touch {
                    phase: TouchPhase::Up,
                    x: 100,
                    y: 200,
                },
            ),
            at(
                20,
                RawEvent::Key {
                    code: 30,
                    pressed: true,
                },
            ),
            at(
                30,
                RawEvent::Key {
                    code: 30,
                    pressed: false,
                },
            ),
            // Nobody records timers: pushed to no app, counted as such.
            at(40, RawEvent::Timer { id: 9 }),
        ],
    }
}

#[test]
fn an_injected_trace_is_recorded_back_in_order_and_spacing() {
    let daemon = TestDaemon::start("input-io", EsmConfig::default(), |_| Ok(()));
    let kinds = [
        EventKind::TouchPress,
        EventKind::TouchRelease,
        EventKind::Key,
    ];
    // Registered when connect returns, so the producer below is routed to it from the start.
    let mut recorder = DaemonRecorder::connect(&daemon.path, &kinds).unwrap();
    let path = daemon.path.clone();
    let injector = std::thread::spawn(move || input_io::inject(&path, &trace(), |_| {}));
    let mut writer = TraceWriter::new(Vec::new(), "test").unwrap();
    let limits = RecordLimits {
        max_events: Some(4),
        max_ns: None,
    };
    let rec = recorder.record(limits, &mut writer, |_| {}).unwrap();
    let inj = injector.join().unwrap().unwrap();
    assert_eq!(rec.ended, RecordEnd::Count);
    assert_eq!((rec.events, rec.dropped, rec.reordered), (4, 0, 0));
    assert_eq!(
        (inj.events, inj.queued, inj.unrouted, inj.apps),
        (5, 4, 1, 1)
    );
    assert_eq!(inj.dropped, 0);

    let got = Trace::parse(&String::from_utf8(writer.into_inner()).unwrap()).unwrap();
    let sent = trace();
    let raws = |t: &Trace| t.events.iter().map(|e| e.raw).collect::<Vec<_>>();
    assert_eq!(raws(&got), raws(&sent)[..4]);
    // Each event was stamped when pushed, no earlier than its time from the injection's start
    // and at most the injection's worst lateness after it; the recording starts at the first.
    let first_late = got.events[0].at_ns;
    assert_eq!(first_late, 0);
    for (g, s) in got.events.iter().zip(&sent.events).skip(1) {
        assert!(
            g.at_ns + inj.late_max_ns >= s.at_ns && g.at_ns <= s.at_ns + inj.late_max_ns,
            "recorded at {} ns, sent at {} ns, at most {} ns late",
            g.at_ns,
            s.at_ns,
            inj.late_max_ns
        );
    }
    drop(recorder);
    daemon.stop().accounting.unwrap();
}

#[test]
fn a_recording_ends_whole_when_the_daemon_goes() {
    let daemon = TestDaemon::start("input-io-gone", EsmConfig::default(), |_| Ok(()));
    let mut recorder = DaemonRecorder::connect(&daemon.path, &[EventKind::Key]).unwrap();
    let path = daemon.path.clone();
    let one = Trace {
        events: vec![TimedEvent {
            at_ns: 0,
            raw: RawEvent::Key {
                code: 2,
                pressed: true,
            },
        }],
    };
    let inj = input_io::inject(&path, &one, |_| {}).unwrap();
    assert_eq!(inj.queued, 1);
    let mut writer = TraceWriter::new(Vec::new(), "").unwrap();
    let first = RecordLimits {
        max_events: Some(1),
        max_ns: None,
    };
    recorder.record(first, &mut writer, |_| {}).unwrap();
    daemon.stop();
    let rec = recorder
        .record(RecordLimits::default(), &mut writer, |_| {})
        .unwrap();
    assert_eq!((rec.ended, rec.events), (RecordEnd::SourceGone, 1));
    let got = Trace::parse(&String::from_utf8(writer.into_inner()).unwrap()).unwrap();
    assert_eq!(got.events.len(), 1);
}

#[test]
fn injecting_without_a_daemon_says_so() {
    let scratch = lull_os::fileout::ScratchDir::new("lull-input-io").unwrap();
    let err = input_io::inject(&scratch.path().join("esm.sock"), &trace(), |_| {}).unwrap_err();
    assert!(err.to_string().contains("is lulld running"), "{err}");
}
