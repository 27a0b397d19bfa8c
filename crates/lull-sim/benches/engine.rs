//! Raw throughput of the discrete-event engine: a steady state of `pending` timed events, each pop
//! scheduling one successor at a pseudo-random delay (the "hold" model of event-queue studies).

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lull_sim::engine::Engine;

const EVENTS_PER_ITER: u64 = 1_000_000;

fn hold(pending: usize) -> u64 {
    let mut e: Engine<u32> = Engine::new(42);
    for i in 0..pending {
        e.schedule_at(i as u64 * 1_000, i as u32);
    }
    let mut acc = 0u64;
    for _ in 0..EVENTS_PER_ITER {
        let (_, ev) = e.pop().expect("the queue never empties");
        acc = acc.wrapping_add(u64::from(ev));
        let delay = 1 + (e.rng().next_u64() & 0xF_FFFF);
        e.schedule_in(delay, ev);
    }
    acc
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine_hold");
    g.throughput(Throughput::Elements(EVENTS_PER_ITER));
    g.sample_size(10);
    for pending in [16usize, 64, 1024] {
        g.bench_with_input(BenchmarkId::from_parameter(pending), &pending, |b, &p| {
            b.iter(|| black_box(hold(p)));
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
