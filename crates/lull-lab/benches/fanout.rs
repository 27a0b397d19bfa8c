//! Criterion benchmark of the daemon's fan-out hot path, end to end through the real pieces: a
//! `lulld` daemon with a UDP source, N client threads blocked in `esm_wait`, and this thread
//! sending bursts of datagrams. One iteration is a burst of `BURST` events, timed until every
//! client has handled every one. This is the daemon's own UDP path; `lull bench fanout` is the
//! paced, accounted bench of the data plane, where a producer writes the clients' rings.

use std::net::UdpSocket;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lull::client::{ClientError, EsmClient};
use lull_esm::EsmConfig;
use lull_model::EventKind;
use lull_os::sys::{Epoll, EventFd};
use lulld::test_support::TestDaemon;

/// Events per timed burst: below the ESM's default queue bound (64), so a client that falls
/// behind by a whole burst still loses nothing, and far below a loopback socket buffer.
const BURST: u64 = 32;

struct Shared {
    handled: AtomicU64,
    target: AtomicU64,
    done: EventFd,
}

fn client(path: std::path::PathBuf, shared: Arc<Shared>, ready: std::sync::mpsc::Sender<()>) {
    let mut c = EsmClient::connect(&path).expect("connect");
    let s = Arc::clone(&shared);
    c.register(EventKind::NetMessage, move |_| {
        let n = s.handled.fetch_add(1, Ordering::AcqRel) + 1;
        if n == s.target.load(Ordering::Acquire) {
            let _ = s.done.signal();
        }
    })
    .expect("register");
    ready.send(()).expect("ready");
    loop {
        match c.wait() {
            Ok(_) => {}
            Err(ClientError::DaemonGone) => return,
            Err(e) => panic!("client: {e}"),
        }
    }
}

fn fanout(c: &mut Criterion) {
    let mut group = c.benchmark_group("fanout_burst");
    group.measurement_time(Duration::from_secs(3));
    for clients in [1u64, 20, 100] {
        let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = udp.local_addr().unwrap();
        let daemon = TestDaemon::start("fanout-bench", EsmConfig::default(), move |d| {
            d.add_net(OwnedFd::from(udp), 1)
        });
        let shared = Arc::new(Shared {
            handled: AtomicU64::new(0),
            target: AtomicU64::new(u64::MAX),
            done: EventFd::new().unwrap(),
        });
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let threads: Vec<_> = (0..clients)
            .map(|_| {
                let (p, s, r) = (daemon.path.clone(), Arc::clone(&shared), ready_tx.clone());
                thread::spawn(move || client(p, s, r))
            })
            .collect();
        for _ in 0..clients {
            ready_rx.recv().unwrap();
        }
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        sender.connect(addr).unwrap();
        let ep = Epoll::new().unwrap();
        ep.add(shared.done.raw(), 0).unwrap();
        let mut ready = Vec::new();
        group.throughput(Throughput::Elements(BURST * clients));
        group.bench_with_input(BenchmarkId::from_parameter(clients), &clients, |b, &n| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let base = shared.handled.load(Ordering::Acquire);
                    shared.target.store(base + BURST * n, Ordering::Release);
                    let t = Instant::now();
                    for _ in 0..BURST {
                        sender.send(&[0u8]).unwrap();
                    }
                    loop {
                        ready.clear();
                        ep.wait_forever(&mut ready).unwrap();
                        if shared.done.take().unwrap() > 0 {
                            break;
                        }
                    }
                    total += t.elapsed();
                }
                total
            });
        });
        let report = daemon.stop();
        report.accounting.unwrap();
        assert_eq!(report.esm.overflow_dropped, 0, "the bench lost deliveries");
        for t in threads {
            t.join().unwrap();
        }
    }
    group.finish();
}

criterion_group!(benches, fanout);
criterion_main!(benches);
