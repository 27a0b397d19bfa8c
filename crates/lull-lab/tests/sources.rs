//! The daemon's network and timer sources, end to end through a client.

mod common;

use std::os::fd::OwnedFd;

use lull::client::{EsmClient, Handled};
use lull_esm::EsmConfig;
use lull_model::time::NS_PER_MS;
use lull_model::{EventKind, Payload};
use lull_os::sys;
use lulld::test_support::TestDaemon;

#[test]
fn datagrams_from_a_peer_become_net_message_events() {
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = udp.local_addr().unwrap();
    let daemon = TestDaemon::start("net", EsmConfig::default(), move |d| {
        d.add_net(OwnedFd::from(udp), 7)
    });
    let mut app = EsmClient::connect(&daemon.path).unwrap();
    let got = common::record_payloads(&mut app, EventKind::NetMessage);
    assert_eq!(app.stats().unwrap().registrations, 1);
    let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for len in [5usize, 10, 1] {
        peer.send_to(&vec![0u8; len], addr).unwrap();
    }
    for _ in 0..3 {
        assert!(matches!(
            app.wait().unwrap(),
            Handled::Event {
                kind: EventKind::NetMessage,
                ..
            }
        ));
    }
    assert_eq!(
        *got.borrow(),
        vec![
            Payload::Net { channel: 7, len: 5 },
            Payload::Net {
                channel: 7,
                len: 10
            },
            Payload::Net { channel: 7, len: 1 }
        ]
    );
    drop(app);
    daemon.stop().accounting.unwrap();
}

#[test]
fn a_timer_source_injects_timer_events() {
    let daemon = TestDaemon::start("timer", EsmConfig::default(), |d| {
        // Periodic, so the registered app gets one whenever it registers.
        d.add_timer(3, sys::monotonic_ns(), NS_PER_MS)
    });
    let mut app = EsmClient::connect(&daemon.path).unwrap();
    let got = std::rc::Rc::new(std::cell::Cell::new(None));
    let g = std::rc::Rc::clone(&got);
    app.register(EventKind::Timer, move |ev| g.set(Some(ev.payload)))
        .unwrap();
    assert!(matches!(
        app.wait().unwrap(),
        Handled::Event {
            kind: EventKind::Timer,
            ..
        }
    ));
    assert_eq!(got.get(), Some(Payload::Timer { id: 3 }));
    drop(app);
    daemon.stop().accounting.unwrap();
}
