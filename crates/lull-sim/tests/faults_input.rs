//! Absurd spec values are refused at the boundary with the field and the limit named, not run.

use lull_sim::spec::{MAX_VIDEO_SIDE_PX, MAX_WORK_CYCLES};
use lull_sim::FrameworkSpec as Spec;
use lull_sim::StylusSpec;

/// A small tracking spec, one value of which each test changes.
fn tracking() -> String {
    StylusSpec::default().toml()
}

/// The same spec playing a 1080p video instead of the stylus trace.
fn video() -> String {
    tracking().replace(
        "kind = \"trace\"\ntrace = \"stylus-spiral\"\nscale_to_ms = 300",
        "kind = \"video\"\nduration_ms = 1000\nfps_milli = 30000\nwidth = 1920\nheight = 1080\ndecode_cycles_per_frame = 1000000",
    )
}

fn refused(base: &str, from: &str, to: &str) -> String {
    assert!(base.contains(from), "{from}");
    Spec::parse(&base.replace(from, to))
        .expect_err(to)
        .to_string()
}

#[test]
fn the_unchanged_specs_parse() {
    Spec::parse(&tracking()).unwrap();
    Spec::parse(&video()).unwrap();
    assert!(video().contains("kind = \"video\""));
}

#[test]
fn handler_cycles_at_u64_max_is_refused() {
    let e = refused(
        &tracking(),
        "handler_cycles = 150000",
        &format!("handler_cycles = {}", u64::MAX),
    );
    assert!(e.contains("app.handler_cycles"), "{e}");
    assert!(e.contains(&MAX_WORK_CYCLES.to_string()), "{e}");
}

#[test]
fn a_hot_set_past_the_platforms_cache_is_refused() {
    let e = refused(&tracking(), "cache_kib = 256", "cache_kib = 1000000");
    assert!(e.contains("app.cache_kib"), "{e}");
    assert!(e.contains("2048 KiB L2"), "{e}");
}

#[test]
fn a_zero_by_zero_video_is_refused() {
    let e = refused(
        &video(),
        "width = 1920\nheight = 1080",
        "width = 0\nheight = 0",
    );
    assert!(e.contains("workload.width"), "{e}");
    let e = refused(
        &video(),
        "height = 1080",
        &format!("height = {}", MAX_VIDEO_SIDE_PX + 1),
    );
    assert!(e.contains("workload.height"), "{e}");
}

#[test]
fn decode_cycles_past_the_bound_are_refused() {
    let e = refused(
        &video(),
        "decode_cycles_per_frame = 1000000",
        &format!("decode_cycles_per_frame = {}", u64::MAX),
    );
    assert!(e.contains("workload.decode_cycles_per_frame"), "{e}");
}
