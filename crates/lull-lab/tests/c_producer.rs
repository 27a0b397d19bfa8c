//! The producer's C ABI (`esm_producer_*` of `include/lull.h`): `apps/esm-c/producer.c`, built
//! against this crate's static library with warnings as errors, run as its own process against
//! a real daemon, pushes events singly and in bursts into the ring of an app on this process's
//! thread. The app must get every event once, in order, with the payloads the program wrote, and
//! the program's counters must match (nothing dropped: it never lets more than a window of
//! records wait, far below a ring's capacity).

use std::process::Command;
use std::sync::mpsc;
use std::thread;

use lull::client::{Delivery, EsmClient};
use lull_esm::EsmConfig;
use lull_lab::c_client::{C_LINK_LIBS, STATIC_LIB};
use lull_model::{EventKind, Payload};
use lull_testkit::c_build;
use lulld::test_support::TestDaemon;

const N: u64 = 3_000;
/// Records the program lets wait unread before it pushes more: well below a ring's capacity.
const WINDOW: u64 = 256;

#[test]
fn a_c_producer_writes_every_event_into_the_apps_ring() {
    if !c_build::have_cc() {
        eprintln!("no C compiler on this machine; the C producer's run is skipped");
        return;
    }
    let scratch = lull_os::fileout::ScratchDir::new("lull-c-producer").unwrap();
    let lib = c_build::built_artefact(STATIC_LIB).expect("liblull.a beside the test binary");
    let bin = c_build::build(
        &c_build::workspace_root().join("apps/esm-c/producer.c"),
        &lib,
        &C_LINK_LIBS,
        &scratch.path().join("producer"),
    );
    let daemon = TestDaemon::start("c-producer", EsmConfig::default(), |_| Ok(()));
    let (tx, rx) = mpsc::channel();
    let path = daemon.path.clone();
    let app = thread::spawn(move || {
        let mut c = EsmClient::connect(&path).unwrap();
        c.register(EventKind::NetMessage, |_| {}).unwrap();
        c.register(EventKind::Key, |_| {}).unwrap();
        tx.send(()).unwrap();
        let mut got = Vec::new();
        // wait_delivery hands back the event itself, to check its payload.
        while (got.len() as u64) < N {
            match c.wait_delivery().unwrap() {
                Delivery::Event { event, .. } => got.push(event),
                Delivery::Overflow { dropped, .. } => {
                    panic!("{dropped} dropped within the window")
                }
            }
        }
        (got, c.counters())
    });
    rx.recv().unwrap();
    let out = Command::new(&bin)
        .arg(&daemon.path)
        .arg(N.to_string())
        .arg(WINDOW.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "producer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let counters: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(counters["events"], N);
    assert_eq!(counters["queued"], N, "one app, every event queued once");
    assert_eq!(counters["dropped"], 0);
    assert_eq!(counters["unrouted"], 0);
    assert_eq!(counters["rings"], 1);
    assert_eq!(counters["markers"], 0);

    let (got, client) = app.join().unwrap();
    assert_eq!(client.rings, 1);
    assert_eq!(client.batches, 0, "nothing came through the daemon");
    for (i, ev) in got.iter().enumerate() {
        let i = i as u64;
        assert_eq!(ev.seq.0, i, "in order, none twice");
        if i % 10 == 9 {
            assert_eq!(ev.kind, EventKind::Key);
            assert_eq!(
                ev.payload,
                Payload::Key {
                    code: (i % 200) as u16,
                    pressed: true
                }
            );
        } else {
            assert_eq!(ev.kind, EventKind::NetMessage);
            assert_eq!(
                ev.payload,
                Payload::Net {
                    channel: 7,
                    len: i as u32
                }
            );
        }
        assert!(ev.injected_ns > 0, "stamped now when the program gave 0");
    }
    let report = daemon.stop();
    assert_eq!(
        report.esm.raw_injected, 0,
        "no event went through the daemon's ESM"
    );
    let ring = report
        .rings
        .iter()
        .map(|r| r.ring.counters)
        .fold(0, |n, c| {
            assert_eq!(c.produced, c.delivered + c.dropped);
            n + c.delivered
        });
    assert_eq!(ring, N, "the daemon's reading of the ring agrees");
}
