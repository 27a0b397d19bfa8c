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

/// `base` with `from` changed to `to` is refused, the error naming each of `names` (the field,
/// the limit).
fn assert_refused_naming(base: &str, from: &str, to: &str, names: &[&str]) {
    assert!(base.contains(from), "{from}");
    let e = Spec::parse(&base.replace(from, to))
        .expect_err(to)
        .to_string();
    for name in names {
        assert!(e.contains(name), "{name} not in {e}");
    }
}

#[test]
fn the_unchanged_specs_parse() {
    Spec::parse(&tracking()).unwrap();
    Spec::parse(&video()).unwrap();
    assert!(video().contains("kind = \"video\""));
}

#[test]
fn handler_cycles_at_u64_max_is_refused() {
    assert_refused_naming(
        &tracking(),
        "handler_cycles = 150000",
        &format!("handler_cycles = {}", u64::MAX),
        &["app.handler_cycles", &MAX_WORK_CYCLES.to_string()],
    );
}

#[test]
fn a_hot_set_past_the_platforms_cache_is_refused() {
    assert_refused_naming(
        &tracking(),
        "cache_kib = 256",
        "cache_kib = 1000000",
        &["app.cache_kib", "2048 KiB L2"],
    );
}

#[test]
fn a_zero_by_zero_video_is_refused() {
    assert_refused_naming(
        &video(),
        "width = 1920\nheight = 1080",
        "width = 0\nheight = 0",
        &["workload.width"],
    );
    assert_refused_naming(
        &video(),
        "height = 1080",
        &format!("height = {}", MAX_VIDEO_SIDE_PX + 1),
        &["workload.height"],
    );
}

#[test]
fn decode_cycles_past_the_bound_are_refused() {
    assert_refused_naming(
        &video(),
        "decode_cycles_per_frame = 1000000",
        &format!("decode_cycles_per_frame = {}", u64::MAX),
        &["workload.decode_cycles_per_frame"],
    );
}
