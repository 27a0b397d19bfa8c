//! One 1920×1080 frame of the synthetic video decoder (`lull_workload::video`), the per-frame CPU
//! cost of the video test's decoding thread.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lull_workload::video::{Decoder, SEED000};

fn bench(c: &mut Criterion) {
    let mut decoder = Decoder::new(SEED000.width_px, SEED000.height_px, 1);
    let mut frame = vec![0u32; SEED000.width_px as usize * SEED000.height_px as usize];
    let mut group = c.benchmark_group("video_decode");
    group.throughput(Throughput::Elements(1));
    group.sample_size(20);
    let mut index = 0u64;
    group.bench_function("frame_1080p", |b| {
        b.iter(|| {
            decoder
                .decode_into(black_box(index), &mut frame)
                .expect("the buffer fits the frame");
            index += 1;
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
