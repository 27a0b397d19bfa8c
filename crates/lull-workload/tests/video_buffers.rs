//! Decoding into a reused frame buffer, as the live video app does with a frame replaced undrawn:
//! `decode_into` writes every pixel, so the buffer needs no clearing.

use std::time::Instant;

use lull_workload::video::{Decoder, SEED000};

#[test]
fn a_reused_buffer_decodes_the_same_pixels_as_a_fresh_one() {
    let mut d = Decoder::new(SEED000.width_px, SEED000.height_px, 3);
    let len = d.frame_len() as usize;
    let mut fresh = vec![0u32; len];
    d.decode_into(8, &mut fresh).unwrap();
    // Another frame's pixels, then a value no decoded pixel has (all are opaque).
    let mut reused = vec![0u32; len];
    d.decode_into(7, &mut reused).unwrap();
    reused[len / 2] = 0;
    d.decode_into(8, &mut reused).unwrap();
    assert!(reused == fresh);
}

/// Per-frame cost of a fresh zeroed 1080p buffer + decode against decoding into a reused one.
/// Prints only; run with `cargo test --release -p lull-workload --test video_buffers --
/// --ignored --nocapture`.
#[test]
#[ignore = "timing, printed only"]
fn fresh_against_reused_buffer_timing() {
    const FRAMES: u64 = 60;
    let mut d = Decoder::new(SEED000.width_px, SEED000.height_px, 1);
    let len = d.frame_len() as usize;
    let t = Instant::now();
    for i in 0..FRAMES {
        let mut frame = vec![0u32; len];
        d.decode_into(i, &mut frame).unwrap();
        std::hint::black_box(&frame);
    }
    let fresh_ms = t.elapsed().as_secs_f64() * 1e3 / FRAMES as f64;
    let mut frame = vec![0u32; len];
    let t = Instant::now();
    for i in 0..FRAMES {
        d.decode_into(i, &mut frame).unwrap();
        std::hint::black_box(&frame);
    }
    let reused_ms = t.elapsed().as_secs_f64() * 1e3 / FRAMES as f64;
    let t = Instant::now();
    for _ in 0..FRAMES {
        std::hint::black_box(vec![0u32; len]);
    }
    let alloc_ms = t.elapsed().as_secs_f64() * 1e3 / FRAMES as f64;
    println!(
        "1080p per frame: fresh buffer + decode {fresh_ms:.2} ms, reused buffer decode \
         {reused_ms:.2} ms, zeroed allocation alone {alloc_ms:.3} ms"
    );
}
