//! UCSG's per-period work (seed 001 §3.3 "extra overheads"): one sampling period — workload
//! estimation, DPM, migration, DVFS, cluster switching — over `n` tracked threads, and a touch
//! (reprioritizing every thread of the front app).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lull_sched::ucsg::{Decision, Owner, SampleView, Start, ThreadUse, Ucsg, UcsgConfig};

const PERIOD_NS: u64 = 200_000_000;

/// `n` threads over four apps, app 0 in front, on the LITTLE cluster with two cores on.
fn tracked(n: u32) -> (Ucsg<u32>, Vec<ThreadUse<u32>>) {
    let start = Start {
        cluster: 0,
        online: 2,
    };
    let mut u = Ucsg::new(UcsgConfig::galaxy_s4(), 0, start).expect("valid");
    let mut out = Vec::new();
    u.foreground(0, &mut out);
    for t in 0..n {
        u.thread_forked(None, t, Some(Owner::App(t % 4)), &mut out);
    }
    // A spread of runtimes, some threads idle.
    let uses = (0..n)
        .filter(|t| t % 3 != 0)
        .map(|t| ThreadUse {
            thread: t,
            runtime_ns: u64::from(t % 7) * 7_000_000,
        })
        .collect();
    (u, uses)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("ucsg_sample");
    for n in [16u32, 128, 1024] {
        g.throughput(Throughput::Elements(u64::from(n)));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            let (mut u, uses) = tracked(n);
            let mut out: Vec<Decision<u32>> = Vec::new();
            let mut now = 0;
            b.iter(|| {
                now += PERIOD_NS;
                out.clear();
                u.sample(
                    now,
                    &SampleView {
                        cluster: 0,
                        online: 2,
                        freq_khz: 500_000,
                        threads: black_box(&uses),
                    },
                    &mut out,
                );
                black_box(out.len())
            });
        });
    }
    g.finish();
    let mut g = c.benchmark_group("ucsg_touch");
    for n in [16u32, 1024] {
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            let (mut u, _) = tracked(n);
            let mut out: Vec<Decision<u32>> = Vec::new();
            let mut now = 0;
            b.iter(|| {
                // A touch and its expiry: two reprioritizations of the front app.
                now += 600_000_000;
                out.clear();
                u.touch(now, &mut out);
                u.expire(now + 500_000_000, &mut out);
                black_box(out.len())
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
