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
        c.enqueue(CPU, TaskId(t), Enqueue::New);
    }
    c.pick_next(CPU, 0);
    c
}

const CPU: CpuId = CpuId(0);

/// Time between two sleep-and-wake rounds: the sleeper runs this long before it blocks.
const SLEEP_WAKE_STEP_NS: u64 = 100_000;

/// One group of `name`'s benchmarks: `op` is timed on a class loaded with each count of tasks,
/// called with the clock moved on by `step_ns` each time.
fn group(
    c: &mut Criterion,
    name: &str,
    what: &str,
    step_ns: u64,
    op: impl Fn(&mut dyn SchedClass, u64, u64),
) {
    let mut g = c.benchmark_group(format!("{name}_{what}"));
    g.throughput(Throughput::Elements(1));
    for n in [2usize, 16, 256] {
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            let mut cl = loaded(name, n);
            let mut now = 0;
            b.iter(|| {
                now += step_ns;
                op(cl.as_mut(), now, step_ns);
            });
        });
    }
    g.finish();
}

fn bench(c: &mut Criterion) {
    for name in class::NAMES {
        group(c, name, "tick_switch", TICK_NS, |cl, now, ran_ns| {
            cl.update_curr(CPU, ran_ns);
            if cl.tick(CPU, now) {
                cl.put_prev(CPU);
                black_box(cl.pick_next(CPU, now));
            }
        });
        group(
            c,
            name,
            "sleep_wake",
            SLEEP_WAKE_STEP_NS,
            |cl, now, ran_ns| {
                cl.update_curr(CPU, ran_ns);
                let t = cl.current(CPU).expect("a task runs");
                cl.block(CPU, t);
                let next = cl.pick_next(CPU, now);
                cl.enqueue(CPU, t, Enqueue::Wakeup);
                black_box((next, cl.wakeup_preempt(CPU, t)));
            },
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
