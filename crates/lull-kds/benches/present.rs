//! Present a full 1920×1080 screen into an XRGB8888 frame buffer (the direct-copy path) and into
//! an RGB565 one (the table path), beside a plain copy of the same bytes.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lull_kds::present::{present, Channel, FbFormat};
use lull_kds::Pixmap;

const W: u32 = 1920;
const H: u32 = 1080;

fn bench(c: &mut Criterion) {
    let n = (W * H) as usize;
    let pixels: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let screen = Pixmap::from_pixels(W, H, pixels.clone()).unwrap();
    let mut group = c.benchmark_group("kds_present_full_hd");
    group.throughput(Throughput::Bytes(4 * n as u64));
    group.sample_size(20);

    let xrgb = FbFormat::xrgb8888(W, H);
    let mut fb = vec![0u8; xrgb.buffer_len() as usize];
    group.bench_function("xrgb8888", |b| {
        b.iter(|| present(black_box(&screen), screen.bounds(), &xrgb, &mut fb).unwrap());
    });

    let rgb565 = FbFormat {
        bits_per_pixel: 16,
        line_length: W * 2,
        red: Channel::new(11, 5),
        green: Channel::new(5, 6),
        blue: Channel::new(0, 5),
        ..xrgb
    };
    let mut fb16 = vec![0u8; rgb565.buffer_len() as usize];
    group.bench_function("rgb565", |b| {
        b.iter(|| present(black_box(&screen), screen.bounds(), &rgb565, &mut fb16).unwrap());
    });

    let mut dst = vec![0u32; n];
    group.bench_function("memcpy_same_bytes", |b| {
        b.iter(|| dst.copy_from_slice(black_box(&pixels)));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
