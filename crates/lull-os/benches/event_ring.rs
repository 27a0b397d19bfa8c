//! Criterion benchmark of the event ring's data plane: one push and one pop per record, in one
//! thread (so it measures the ring's own cost, not cache-line transfers between cores).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lull_os::event_ring::{RingConsumer, RingProducer, RingRecord};

/// Records in the ring: the default a live app would get (any power of two gives the same
/// per-record cost here, since the ring never holds more than one record).
const CAPACITY_RECORDS: u64 = 1024;

fn push_pop(c: &mut Criterion) {
    let (mut producer, fds) = RingProducer::create(CAPACITY_RECORDS).unwrap();
    let mut consumer = RingConsumer::from_fds(fds.memfd, fds.eventfd).unwrap();
    let mut group = c.benchmark_group("event_ring");
    group.throughput(Throughput::Elements(1));
    let mut seq = 0u64;
    group.bench_function("push_pop", |b| {
        b.iter(|| {
            seq += 1;
            let rec = RingRecord::new(seq, 1, &seq.to_ne_bytes(), seq);
            black_box(producer.push(black_box(&rec)));
            black_box(consumer.pop())
        });
    });
    group.finish();
}

criterion_group!(benches, push_pop);
criterion_main!(benches);
