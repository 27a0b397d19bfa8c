use super::*;
use crate::sys::poll_readable;
use proptest::prelude::*;

fn ring(capacity: u64) -> (RingProducer, RingConsumer) {
    let (p, fds) = RingProducer::create(capacity).unwrap();
    let c = RingConsumer::from_fds(fds.memfd, fds.eventfd).unwrap();
    (p, c)
}

fn ev(seq: u64) -> RingRecord {
    RingRecord::new(seq, 7, &seq.to_ne_bytes(), 1000 + seq)
}

/// Checks the stream read so far: events in order, markers covering exactly the gaps.
#[derive(Default)]
struct Reader {
    next_seq: u64,
    events: u64,
    dropped_seen: u64,
}

impl Reader {
    fn take(&mut self, r: &RingRecord) {
        if let Some(m) = r.overflow() {
            assert_eq!(
                m.first_seq, self.next_seq,
                "marker starts where events stopped"
            );
            assert!(m.last_seq >= m.first_seq);
            assert_eq!(m.dropped, m.last_seq - m.first_seq + 1);
            self.dropped_seen += m.dropped;
            self.next_seq = m.last_seq + 1;
        } else {
            assert_eq!(r.seq, self.next_seq, "FIFO order");
            assert_eq!(r.payload[..8], r.seq.to_ne_bytes());
            self.events += 1;
            self.next_seq += 1;
        }
    }
}

#[test]
fn push_pop_in_order_with_counts() {
    let (mut p, mut c) = ring(8);
    assert_eq!(c.pop(), None);
    for s in 0..5 {
        assert_eq!(p.push(&ev(s)), PushOutcome::Queued);
    }
    for s in 0..5 {
        assert_eq!(c.pop(), Some(ev(s)));
    }
    assert_eq!(c.pop(), None);
    // Wrap around the ring a few times.
    for s in 5..100 {
        assert_eq!(p.push(&ev(s)), PushOutcome::Queued);
        assert_eq!(c.pop(), Some(ev(s)));
    }
    let k = c.counters();
    assert_eq!(k, p.counters());
    assert_eq!(
        (k.produced, k.delivered, k.dropped, k.markers),
        (100, 100, 0, 0)
    );
    assert_eq!(k.wakes, 0, "a consumer that never waits is never woken");
    assert_eq!(c.popped(), 100);
}

#[test]
fn overflow_writes_exactly_one_marker() {
    let (mut p, mut c) = ring(4);
    for s in 0..4 {
        assert_eq!(p.push(&ev(s)), PushOutcome::Queued);
    }
    for s in 4..10 {
        assert_eq!(p.push(&ev(s)), PushOutcome::Dropped);
    }
    assert_eq!(p.pending_dropped(), 6);
    // One slot free is not enough for marker + event: the run grows.
    assert_eq!(c.pop(), Some(ev(0)));
    assert_eq!(p.push(&ev(10)), PushOutcome::Dropped);
    for s in 1..4 {
        assert_eq!(c.pop(), Some(ev(s)));
    }
    assert_eq!(
        p.push(&ev(11)),
        PushOutcome::QueuedAfterMarker { dropped: 7 }
    );
    let m = c.pop().unwrap();
    assert_eq!(
        m.overflow(),
        Some(OverflowMarker {
            dropped: 7,
            first_seq: 4,
            last_seq: 10
        })
    );
    assert_eq!(m.seq, 10);
    assert_eq!(c.pop(), Some(ev(11)));
    assert_eq!(c.pop(), None);
    let k = c.counters();
    assert_eq!(
        (k.produced, k.delivered, k.dropped, k.markers),
        (12, 5, 7, 1)
    );
    assert_eq!(k.produced, k.delivered + k.dropped);
}

#[test]
fn flush_reports_drops_of_an_idle_producer() {
    let (mut p, mut c) = ring(2);
    for s in 0..5 {
        p.push(&ev(s));
    }
    assert!(!p.flush(), "no room yet");
    let mut r = Reader::default();
    while let Some(x) = c.pop() {
        r.take(&x);
    }
    assert!(p.flush());
    while let Some(x) = c.pop() {
        r.take(&x);
    }
    assert_eq!((r.events, r.dropped_seen, r.next_seq), (2, 3, 5));
}

#[derive(Clone, Debug)]
enum Op {
    Push(u8),
    Pop(u8),
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1u8..20).prop_map(Op::Push),
        (1u8..20).prop_map(Op::Pop),
        Just(Op::Flush),
    ]
}

proptest! {
    #[test]
    fn random_interleavings_keep_order_and_accounts(
        cap_log2 in 1u32..5,
        ops in proptest::collection::vec(op(), 0..60),
    ) {
        let (mut p, mut c) = ring(1 << cap_log2);
        let mut r = Reader::default();
        let mut seq = 0u64;
        for o in ops {
            match o {
                Op::Push(n) => for _ in 0..n { p.push(&ev(seq)); seq += 1; },
                Op::Pop(n) => for _ in 0..n { if let Some(x) = c.pop() { r.take(&x) } },
                Op::Flush => { p.flush(); }
            }
            let k = p.counters();
            prop_assert_eq!(k.produced, k.delivered + k.dropped);
            prop_assert_eq!(k.produced, seq);
        }
        // Drain, flush, drain: every dropped event is now covered by a marker.
        while let Some(x) = c.pop() { r.take(&x) }
        prop_assert!(p.flush());
        while let Some(x) = c.pop() { r.take(&x) }
        let k = p.counters();
        prop_assert_eq!(r.next_seq, seq);
        prop_assert_eq!(r.events, k.delivered);
        prop_assert_eq!(r.dropped_seen, k.dropped);
        prop_assert_eq!(p.pending_dropped(), 0);
    }

    /// A burst pushed with one publication leaves the ring exactly as the same events pushed
    /// one by one: same records read, same counters but the wake-ups.
    #[test]
    fn a_burst_is_its_events_pushed_one_by_one(
        cap_log2 in 1u32..5,
        ops in proptest::collection::vec(op(), 0..60),
    ) {
        let (mut one, mut c_one) = ring(1 << cap_log2);
        let (mut all, mut c_all) = ring(1 << cap_log2);
        let mut seq = 0u64;
        for o in ops {
            match o {
                Op::Push(n) => {
                    let recs: Vec<_> = (seq..seq + u64::from(n)).map(ev).collect();
                    for r in &recs { one.push(r); }
                    let b = all.push_all(&recs);
                    prop_assert_eq!(b.queued + b.dropped, u64::from(n));
                    seq += u64::from(n);
                }
                Op::Pop(n) => for _ in 0..n { prop_assert_eq!(c_one.pop(), c_all.pop()); },
                Op::Flush => { prop_assert_eq!(one.flush(), all.flush()); }
            }
            let (a, b) = (one.counters(), all.counters());
            prop_assert_eq!(
                (a.produced, a.delivered, a.dropped, a.markers),
                (b.produced, b.delivered, b.dropped, b.markers)
            );
            prop_assert_eq!(one.unread(), all.unread());
        }
        prop_assert_eq!(one.high_water(), all.high_water());
    }
}

#[test]
fn a_burst_wakes_a_waiting_consumer_once_and_unread_counts_down() {
    let (mut p, mut c) = ring(64);
    assert!(c.prepare_wait(), "empty ring: the consumer may block");
    let recs: Vec<_> = (0..10).map(ev).collect();
    let b = p.push_all(&recs);
    assert_eq!((b.queued, b.dropped, b.woke), (10, 0, true));
    assert_eq!(p.counters().wakes, 1, "one eventfd write for ten events");
    assert_eq!(p.unread(), Some(10));
    c.drain_wake().unwrap();
    for s in 0..10 {
        assert_eq!(c.pop(), Some(ev(s)));
    }
    assert_eq!(p.unread(), Some(0));
    assert_eq!(p.high_water(), 10);
    let b = p.push_all(&recs);
    assert!(!b.woke, "a consumer that did not say it waits is not woken");
    p.push(&ev(10));
    assert_eq!(p.high_water(), 11);
    c.scribble_tail(u64::MAX);
    assert_eq!(p.unread(), None, "an impossible index is not a count");
    let before = p.counters().hostile_tails;
    let b = p.push_all(&recs);
    assert_eq!((b.queued, b.dropped), (0, 10));
    assert_eq!(
        p.counters().hostile_tails - before,
        10,
        "one look per event, as push"
    );
}

#[test]
fn seals_are_set_and_resizing_fails() {
    let (_p, fds) = RingProducer::create(16).unwrap();
    use rustix::fs::{fcntl_add_seals, fcntl_get_seals, ftruncate, SealFlags};
    let fd = &fds.memfd;
    let seals = fcntl_get_seals(fd).unwrap();
    assert!(seals.contains(SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL));
    for len in [0, 4096, 1 << 30] {
        assert!(ftruncate(fd, len).is_err(), "ftruncate to {len} must fail");
    }
    assert!(
        fcntl_add_seals(fd, SealFlags::WRITE).is_err(),
        "F_SEAL_SEAL forbids new seals"
    );
}

#[test]
fn hostile_tail_cannot_panic_or_stall_the_producer() {
    let (mut p, c) = ring(8);
    for s in 0..3 {
        p.push(&ev(s));
    }
    let mut seq = 3;
    for garbage in [
        u64::MAX,
        1 << 63,
        4,
        1000,
        u64::MAX - 5,
        0xdead_beef_dead_beef,
    ] {
        c.scribble_tail(garbage);
        for _ in 0..100 {
            assert_eq!(p.push(&ev(seq)), PushOutcome::Dropped);
            seq += 1;
        }
        assert!(!p.flush());
    }
    let k = p.counters();
    assert_eq!(k.produced, seq);
    assert_eq!(k.produced, k.delivered + k.dropped);
    assert_eq!(k.hostile_tails, 600 + 6);
    // A tail claiming everything consumed is believable: the producer carries on.
    c.scribble_tail(3);
    assert_eq!(
        p.push(&ev(seq)),
        PushOutcome::QueuedAfterMarker { dropped: 600 }
    );
}

#[test]
fn bad_headers_are_typed_errors() {
    let (_p, fds) = RingProducer::create(4).unwrap();
    // A memfd that is not a ring: unsealed.
    let other = rustix::fs::memfd_create(c"not-a-ring", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    let ev2 = fds.eventfd.try_clone().unwrap();
    assert!(matches!(
        RingConsumer::from_fds(other, ev2),
        Err(RingError::NotSealed(_))
    ));
    // The memfd in place of the eventfd.
    let m2 = fds.memfd.try_clone().unwrap();
    assert!(matches!(
        RingConsumer::from_fds(m2, fds.memfd.try_clone().unwrap()),
        Err(RingError::NotEventFd)
    ));
    // A sealed memfd of the right size with a zero header.
    let page = page_bytes();
    let bytes = ring_bytes(4, page);
    let zero = vec![0u8; bytes as usize];
    let sealed = crate::sys::sealed_memfd("zero-ring", &zero).unwrap();
    assert!(matches!(
        RingConsumer::from_fds(sealed, fds.eventfd),
        Err(RingError::BadMagic(0))
    ));
}

/// The permissions of the mapping that starts at `addr`, from /proc/self/maps.
fn perms_at(addr: *const u8) -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let want = format!("{:x}-", addr as usize);
    let line = maps
        .lines()
        .find(|l| l.starts_with(&want))
        .unwrap_or_else(|| panic!("no mapping at {want}"));
    line.split_whitespace().nth(1).unwrap().to_owned()
}

#[test]
fn consumer_sees_header_and_records_read_only() {
    let (_p, c) = ring(64);
    assert_eq!(perms_at(c.header), "r--s");
    assert_eq!(perms_at(c.records), "r--s");
    assert_eq!(perms_at(c.ctl), "rw-s");
}

#[test]
fn two_threads_account_for_every_record() {
    const N: u64 = 100_000;
    let (mut p, fds) = RingProducer::create(256).unwrap();
    let consumer = std::thread::spawn(move || {
        let mut c = RingConsumer::from_fds(fds.memfd, fds.eventfd).unwrap();
        let mut r = Reader::default();
        while r.events + r.dropped_seen < N {
            while let Some(x) = c.pop() {
                r.take(&x);
            }
            if r.events + r.dropped_seen < N {
                c.wait().unwrap();
            }
        }
        (r.events, r.dropped_seen, r.next_seq)
    });
    for s in 0..N {
        p.push(&ev(s));
    }
    // Report the last drops once the consumer makes room (it is running, so this ends).
    while !p.flush() {
        std::thread::yield_now();
    }
    let (events, dropped, next) = consumer.join().unwrap();
    let k = p.counters();
    assert_eq!(k.produced, N);
    assert_eq!(k.delivered + k.dropped, N);
    assert_eq!(events, k.delivered);
    assert_eq!(dropped, k.dropped);
    assert_eq!(next, N);
    assert!(k.wakes <= k.delivered + k.markers);
}

#[test]
fn prepare_wait_arms_the_wakeup_only_when_empty() {
    let (mut p, mut c) = ring(4);
    assert!(c.prepare_wait(), "empty: the consumer may block");
    p.push(&ev(0));
    assert_eq!(p.counters().wakes, 1, "the push saw `waiting` and woke");
    let mut ready = [false];
    assert_eq!(
        poll_readable(&[c.wake_fd()], Some(0), &mut ready).unwrap(),
        1
    );
    c.drain_wake().unwrap();
    assert_eq!(
        poll_readable(&[c.wake_fd()], Some(0), &mut ready).unwrap(),
        0,
        "drained"
    );
    assert!(!c.prepare_wait(), "a record is there: pop, do not block");
    assert_eq!(c.pop().unwrap().seq, 0);
    p.push(&ev(1));
    assert_eq!(p.counters().wakes, 1, "not waiting: no wake-up");
    c.drain_wake().unwrap();
}

#[test]
fn producer_end_from_fds_writes_what_the_consumer_reads_and_observe_counts_both_sides() {
    let (creator, fds) = RingProducer::create(4).unwrap();
    let producer_fds = (
        fds.memfd.try_clone().unwrap(),
        fds.eventfd.try_clone().unwrap(),
    );
    let observer = fds.memfd.try_clone().unwrap();
    drop(creator);
    let mut p = RingProducer::from_fds(producer_fds.0, producer_fds.1).unwrap();
    let mut c = RingConsumer::from_fds(fds.memfd, fds.eventfd).unwrap();
    for s in 0..6 {
        p.push(&ev(s));
    }
    let mut r = Reader::default();
    while let Some(rec) = c.pop() {
        r.take(&rec);
    }
    assert!(p.flush());
    while let Some(rec) = c.pop() {
        r.take(&rec);
    }
    let o = RingConsumer::observe(&observer).unwrap();
    assert_eq!(o.counters.produced, 6);
    assert_eq!(
        o.counters.produced,
        o.counters.delivered + o.counters.dropped
    );
    assert_eq!(r.events, o.counters.delivered);
    assert_eq!(r.dropped_seen, o.counters.dropped);
    assert_eq!(o.consumed, o.head, "the consumer read everything written");
    // A used ring cannot be taken over: its producer's private state would be lost.
    let again = RingProducer::from_fds(
        observer.try_clone().unwrap(),
        rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).unwrap(),
    );
    assert!(matches!(again, Err(RingError::NotFresh(_))));
}
