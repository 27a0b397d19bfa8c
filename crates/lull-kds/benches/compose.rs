//! Compose four full-screen 1920×1080 ARGB layers and draw the result into a full-screen window,
//! beside a plain copy of the same bytes (the goal: within 3× of memcpy), and the same
//! work through the server (`Kds::handle` COMPOSE + DRAW, which also restacks the screen).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lull_esm::{Esm, EsmConfig};
use lull_kds::server::{Channel, Kds};
use lull_kds::wire::{Reply, Request};
use lull_kds::{compose, Fill, Layer, Pixmap, Rect, Surface};

const W: u32 = 1920;
const H: u32 = 1080;

fn four_layers() -> Surface {
    let n = (W * H) as usize;
    Surface {
        width: W,
        height: H,
        layers: (0..4)
            .map(|z| Layer {
                z,
                rect: Rect::new(0, 0, W, H),
                fill: Fill::Pixels(
                    (0..n as u32)
                        .map(|i| i.wrapping_mul(2_654_435_761) ^ z as u32)
                        .collect(),
                ),
            })
            .collect(),
    }
}

fn bench(c: &mut Criterion) {
    let surface = four_layers();
    let bytes = 4 * u64::from(W * H) * 4;
    let mut group = c.benchmark_group("kds_full_hd_4_layers");
    group.throughput(Throughput::Bytes(bytes));
    group.sample_size(20);
    let mut window = Pixmap::new(W, H).unwrap();
    group.bench_function("compose_and_draw", |b| {
        b.iter(|| {
            let flat = compose(black_box(&surface)).unwrap();
            window.draw(0, 0, &flat).unwrap();
        });
    });

    let mut kds = Kds::new(W, H).unwrap();
    let mut esm = Esm::new(EsmConfig::default()).unwrap();
    let app = esm.add_app();
    // 0 × 0 asks for the whole screen.
    kds.attach(&mut esm, app, 1, 0, 0, "bench").unwrap();
    let compose_req = Request::Compose {
        surface_id: 1,
        surface: surface.clone(),
    };
    let draw_req = Request::Draw {
        surface_id: 1,
        x: 0,
        y: 0,
    };
    let any_thread = |_: u32, _: u32| true;
    group.bench_function("server_compose_and_draw", |b| {
        b.iter(|| {
            let o = kds.handle(
                &mut esm,
                Channel::Private(app),
                black_box(&compose_req),
                &any_thread,
            );
            assert!(matches!(o.reply, Some(Reply::Composed { .. })));
            let o = kds.handle(&mut esm, Channel::Private(app), &draw_req, &any_thread);
            assert!(matches!(o.reply, Some(Reply::Ok { .. })));
            black_box(kds.take_damage());
        });
    });

    let src: Vec<u32> = surface
        .layers
        .iter()
        .flat_map(|l| match &l.fill {
            Fill::Pixels(p) => p.clone(),
            Fill::Solid(_) => unreachable!(),
        })
        .collect();
    let mut dst = vec![0u32; src.len()];
    group.bench_function("memcpy_same_bytes", |b| {
        b.iter(|| dst.copy_from_slice(black_box(&src)));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
