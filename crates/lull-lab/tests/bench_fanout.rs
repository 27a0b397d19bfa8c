//! The fan-out bench's accounting on the data plane: a small fan-out delivers every event to
//! every client exactly once, in order, and the identity holds from the producer's side, the
//! clients' side and the daemon's reading of the rings — with client threads and with separate
//! C programs. The events fit in one ring, so no scheduling delay can make a ring overflow: the
//! outcome is the same on any machine. No throughput is asserted.

use lull_lab::bench_fanout::{run, ClientMode, FanoutConfig, FanoutReport};
use lull_lab::c_client::STATIC_LIB;
use lull_model::time::NS_PER_MS;
use lull_testkit::c_build;

const CLIENTS: usize = 4;
/// 100 events per 1 ms tick for 40 ms.
const RATE_PER_S: u64 = 100_000;
const DURATION_NS: u64 = 40 * NS_PER_MS;
const EVENTS: u64 = 4_000;
// The test relies on every event fitting in one ring.
const _: () = assert!(EVENTS <= lulld::daemon::RING_CAPACITY);

fn check_exactly_once(r: &FanoutReport) {
    assert_eq!(r.events_pushed, EVENTS, "{r:#?}");
    assert_eq!(r.clients_failed, 0, "{r:#?}");
    assert_eq!(r.deliveries_expected, EVENTS * CLIENTS as u64);
    // The clients' side: every expected delivery handled, none twice, in order.
    assert_eq!(r.delivered, r.deliveries_expected, "{r:#?}");
    assert_eq!(
        (
            r.dropped_counted,
            r.lost_uncounted,
            r.excess,
            r.out_of_order
        ),
        (0, 0, 0, 0),
        "{r:#?}"
    );
    // The producer's side: written into the rings exactly what the clients handled.
    assert_eq!(r.ring_written, r.delivered, "{r:#?}");
    assert_eq!((r.ring_dropped, r.ring_markers, r.ring_unmarked), (0, 0, 0));
    assert!(r.ring_high_water <= EVENTS);
    assert_eq!(r.ring_unread, 0, "every ring read to the end");
    // And the daemon's reading of the rings agrees with both.
    assert!(r.sides_agree, "{r:#?}");
    assert!(r.accounted());
    assert!(r.bursts >= 1 && r.bursts <= EVENTS);
}

#[test]
fn a_small_fanout_to_threads_delivers_every_event_once() {
    let r = run(&FanoutConfig {
        clients: CLIENTS,
        rate_per_s: RATE_PER_S,
        duration_ns: DURATION_NS,
        mode: ClientMode::Threads,
    })
    .unwrap();
    assert_eq!(r.mode, "threads");
    check_exactly_once(&r);
}

#[test]
fn a_small_fanout_to_c_programs_delivers_every_event_once() {
    if !c_build::have_cc() {
        eprintln!("no C compiler on this machine; the C clients' run is skipped");
        return;
    }
    let lib = c_build::built_artefact(STATIC_LIB).expect("liblull.a beside the test binary");
    let lib_dir = lib.parent().unwrap().to_path_buf();
    let r = run(&FanoutConfig {
        clients: CLIENTS,
        rate_per_s: RATE_PER_S,
        duration_ns: DURATION_NS,
        mode: ClientMode::Processes {
            lib_dir,
            cc: "cc".into(),
        },
    })
    .unwrap();
    assert_eq!(r.mode, "processes");
    check_exactly_once(&r);
}

#[test]
fn a_missing_static_library_is_named() {
    let err = run(&FanoutConfig {
        clients: 1,
        rate_per_s: 1000,
        duration_ns: NS_PER_MS,
        mode: ClientMode::Processes {
            lib_dir: "/nonexistent".into(),
            cc: "cc".into(),
        },
    })
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("liblull.a not found in /nonexistent"),
        "{err}"
    );
}
