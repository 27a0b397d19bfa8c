//! Absurd spec values are refused at the boundary with the field and the limit named, not run.

use lull_sim::spec::{MAX_VIDEO_SIDE_PX, MAX_WORK_CYCLES};
use lull_sim::FrameworkSpec as Spec;

/// A framework spec whose `[workload]` table is `workload`, everything else fixed; each test
/// changes one value of it.
fn spec(experiment: &str, workload: &str) -> String {
    format!(
        r#"
kind = "framework"
experiment = "{experiment}"
description = "a spec with one value changed at a time"
platform = "jetson-tk1"
seed = 1
models = ["esm"]
tail_ms = 50
[cpu]
main_cores = 2
companion = false
[app]
handler_cycles = 150000
draw_cycles = 400000
cache_kib = 256
[workload]
{workload}
"#
    )
}

fn tracking() -> String {
    spec(
        "absurd",
        r#"kind = "trace"
trace = "stylus-spiral"
scale_to_ms = 300"#,
    )
}

fn video() -> String {
    spec(
        "absurd-video",
        r#"kind = "video"
duration_ms = 1000
fps_milli = 30000
width = 1920
height = 1080
decode_cycles_per_frame = 1000000"#,
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
