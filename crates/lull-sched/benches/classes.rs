//! The scheduling classes' hot path as the simulator drives it, per CPU: a tick with a switch
//! (`update_curr`, `tick`, `put_prev`, `pick_next`) and a sleep-and-wake round (`block`,
//! `enqueue`, `wakeup_preempt`), with `n` runnable tasks on one CPU.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lull_sched::class::{self, ClassConfig, Enqueue, FairParams, SchedClass};
use lull_sched::{CpuId, TaskId};

const TICK_NS: u64 = 4_000_000;

fn loaded(name: &str, n: usize) -> Box<dyn SchedClass> {
    let mut c = class::by_name(
        name,
        ClassConfig {
            cpus: 1,
            tick_ns: TICK_NS,
            base_slice_ns: None,
            preempt_tick_ns: None,
        },
    )
    .expect("known class");
    for t in 0..n {
        // A spread of weights, as on a real system.
        c.attach(TaskId(t), FairParams::nice((t % 11) as i8 - 5));
        c.enqueue(CpuId(0), TaskId(t), Enqueue::New);
    }
    c.pick_next(CpuId(0), 0);
    c
}

fn bench(c: &mut Criterion) {
    let cpu = CpuId(0);
    for name in class::NAMES {
        let mut g = c.benchmark_group(format!("{name}_tick_switch"));
        g.throughput(Throughput::Elements(1));
        for n in [2usize, 16, 256] {
            g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
                let mut cl = loaded(name, n);
                let mut now = 0;
                b.iter(|| {
                    now += TICK_NS;
                    cl.update_curr(cpu, TICK_NS);
                    if cl.tick(cpu, now) {
                        cl.put_prev(cpu);
                        black_box(cl.pick_next(cpu, now));
                    }
                });
            });
        }
        g.finish();
        let mut g = c.benchmark_group(format!("{name}_sleep_wake"));
        g.throughput(Throughput::Elements(1));
        for n in [2usize, 16, 256] {
            g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
                let mut cl = loaded(name, n);
                let mut now = 0;
                b.iter(|| {
                    now += 100_000;
                    cl.update_curr(cpu, 100_000);
                    let t = cl.current(cpu).expect("a task runs");
                    cl.block(cpu, t);
                    let next = cl.pick_next(cpu, now);
                    cl.enqueue(cpu, t, Enqueue::Wakeup);
                    black_box((next, cl.wakeup_preempt(cpu, t)));
                });
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
