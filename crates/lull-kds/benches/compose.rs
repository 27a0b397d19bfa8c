//! Compose four full-screen 1920×1080 ARGB layers and draw the result into a full-screen window,
//! beside a plain copy of the same bytes (the goal: within 3× of memcpy).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
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
