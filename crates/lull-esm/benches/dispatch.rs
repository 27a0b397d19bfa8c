//! Criterion benchmark of the ESM hot path: inject → interpret → dispatch → wait.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lull_esm::{Esm, EsmConfig};
use lull_model::{AppId, EventKind, HandlerId, RawEvent, TouchPhase};

fn waiting_apps(n: usize) -> (Esm, Vec<AppId>) {
    let mut esm = Esm::new(EsmConfig::default()).unwrap();
    let apps: Vec<AppId> = (0..n).map(|_| esm.add_app()).collect();
    for &app in &apps {
        esm.register(app, EventKind::TouchMotion, Some(HandlerId(0)))
            .unwrap();
        esm.wait(app).unwrap();
    }
    (esm, apps)
}

fn inject_and_wait(c: &mut Criterion) {
    let mut group = c.benchmark_group("esm_round");
    for apps in [1usize, 10, 100] {
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(BenchmarkId::from_parameter(apps), &apps, |b, &n| {
            let (mut esm, _) = waiting_apps(n);
            let mut pushed = Vec::with_capacity(n);
            let mut i = 0i32;
            b.iter(|| {
                i = i.wrapping_add(1);
                let raw = RawEvent::Touch {
                    phase: TouchPhase::Move,
                    x: i,
                    y: i,
                };
                esm.inject(black_box(raw), 0, |p| pushed.push(p.app));
                for &app in &pushed {
                    black_box(esm.wait(app).unwrap());
                }
                pushed.clear();
            });
        });
    }
    group.finish();
}

fn no_listener(c: &mut Criterion) {
    let mut esm = Esm::new(EsmConfig::default()).unwrap();
    c.bench_function("esm_interpret_and_drop", |b| {
        b.iter(|| esm.inject(black_box(RawEvent::Timer { id: 1 }), 0, |_| {}));
    });
}

criterion_group!(benches, inject_and_wait, no_listener);
criterion_main!(benches);
