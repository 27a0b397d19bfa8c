//! The daemon's network and timer sources, end to end through a client.

use std::os::fd::OwnedFd;
use std::thread;

use lull_linux::client::{EsmClient, Handled};
use lull_linux::daemon::{Daemon, DaemonConfig};
use lull_linux::sys;
use lull_model::time::NS_PER_MS;
use lull_model::{EventKind, Payload};

fn path(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("lull-src-{tag}-{}.sock", std::process::id()))
}

#[test]
fn datagrams_from_a_peer_become_net_message_events() {
    let p = path("net");
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = udp.local_addr().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let dp = p.clone();
    let daemon = thread::spawn(move || {
        let mut d = Daemon::bind(&DaemonConfig {
            socket_path: dp,
            ..DaemonConfig::default()
        })
        .unwrap();
        d.add_net(OwnedFd::from(udp), 7).unwrap();
        tx.send(d.stopper()).unwrap();
        d.run().unwrap()
    });
    let stopper = rx.recv().unwrap();
    let mut app = EsmClient::connect(&p).unwrap();
    let got = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let g = std::rc::Rc::clone(&got);
    app.register(EventKind::NetMessage, move |ev| {
        g.borrow_mut().push(ev.payload)
    })
    .unwrap();
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
    stopper.stop();
    daemon.join().unwrap().accounting.unwrap();
}

#[test]
fn a_timer_source_injects_timer_events() {
    let p = path("timer");
    let (tx, rx) = std::sync::mpsc::channel();
    let dp = p.clone();
    let daemon = thread::spawn(move || {
        let mut d = Daemon::bind(&DaemonConfig {
            socket_path: dp,
            ..DaemonConfig::default()
        })
        .unwrap();
        // Periodic, so the registered app gets one whenever it registers.
        d.add_timer(3, sys::monotonic_ns(), NS_PER_MS).unwrap();
        tx.send(d.stopper()).unwrap();
        d.run().unwrap()
    });
    let stopper = rx.recv().unwrap();
    let mut app = EsmClient::connect(&p).unwrap();
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
    stopper.stop();
    daemon.join().unwrap().accounting.unwrap();
}
