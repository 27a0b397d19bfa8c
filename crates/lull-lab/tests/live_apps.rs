//! The live apps end to end, shortened: a 100-event stylus trace over 1 s, a one-message
//! messaging session, a 2 s video at 320 × 180 — each under every delivery model — and the
//! background scenario, shortened. Only deterministic conditions are asserted: every injected
//! event is delivered or dropped, frames are drawn, and with guiS the video's drawing thread
//! draws nothing and is never woken while the app is in the background, where a baseline keeps
//! drawing. Frame pacing: no model draws more than one frame per refresh period of the screen.
//! Between models, only ratios of figures measured in the same run, with generous factors.
//!
//! The tests measure wake-ups and CPU time from the kernel, so they never run at the same time
//! as each other: each holds [`MEASURING`] for its whole run.

use std::path::PathBuf;

use lull_apps::{AppKind, APP_MODELS};
use lull_kds::pacing::DEFAULT_REFRESH_PERIOD_NS;
use lull_lab::experiment::{
    self, BackgroundPlan, ExperimentReport, ExperimentSpec, Scenario, Workload,
};
use lull_model::time::{NS_PER_MS, NS_PER_S};
use lull_model::DeliveryModel;
use lull_workload::messaging::MessagingParams;
use lull_workload::Trace;

/// Events of the shortened stylus trace, and its length.
const TRACKING_EVENTS: usize = 100;
const TRACKING_SPAN_NS: u64 = NS_PER_S;
/// The shortened clip.
const VIDEO_W_PX: u32 = 320;
const VIDEO_H_PX: u32 = 180;
const VIDEO_CLIP_MS: u64 = 2_000;
/// Shortened background scenario: 0.5 s into the clip, for 1.2 s (the window is 0.3 s shorter:
/// `experiment::BACKGROUND_LEAD_NS`).
const BACKGROUND: BackgroundPlan = BackgroundPlan {
    at_ns: 500 * NS_PER_MS,
    for_ns: 1_200 * NS_PER_MS,
};
/// One message of three characters, then a reading pause past the end of the session.
const ONE_MESSAGE: MessagingParams = MessagingParams {
    duration_ms: 1_000,
    read_pause_ms: 900,
    chars_min: 3,
    chars_max: 3,
    key_interval_ms: 40,
    key_hold_ms: 20,
    reply_delay_ms: 50,
};

/// The `lull-app` of this build. `cargo test --workspace` builds it, since lull-apps has
/// integration tests; a lone `cargo test -p lull-lab` needs `cargo build -p lull-apps` first.
fn app_binary() -> PathBuf {
    lull_lab::experiment::default_app_binary().unwrap()
}

fn run(spec: &ExperimentSpec) -> ExperimentReport {
    let r = experiment::run(spec)
        .unwrap_or_else(|e| panic!("{} under {}: {e}", spec.app_name, spec.model.name()));
    eprintln!(
        "{} {}: events {:?}, frames {}, latency mean {:?} µs, wake-ups/s {:.1}, cpu {:?}",
        r.app,
        r.model.name(),
        r.events,
        r.frames_drawn,
        r.latency_us.us.mean,
        r.wakeups_per_s,
        r.cpu_ms
    );
    r
}

fn accounted(r: &ExperimentReport, expected: u64) {
    let e = r.events;
    assert_eq!(e.injected, expected, "{} {}", r.app, r.model.name());
    assert_eq!(
        e.delivered + e.dropped,
        e.injected,
        "{} {}: {e:?}",
        r.app,
        r.model.name()
    );
    assert!(e.dropped_counted <= e.dropped, "{e:?}");
}

/// Frame pacing: at most one frame per refresh period of the measured window (+1 for a period
/// cut at each end).
fn paced(r: &ExperimentReport) {
    let periods = (r.window_s * NS_PER_S as f64 / f64::from(DEFAULT_REFRESH_PERIOD_NS)).ceil();
    assert!(
        r.frames_drawn as f64 <= periods + 1.0,
        "{} {}: {} frames in {:.3} s",
        r.app,
        r.model.name(),
        r.frames_drawn,
        r.window_s
    );
}

/// The goal for the live apps: ESM + KDS + guiS below every baseline in wake-ups per
/// second and in CPU time, measured in the same run. Wake-ups are counted by the kernel and
/// move little between runs, so they must be below every baseline's, with this much room for a
/// short run on a shared machine …
const WAKEUPS_AT_MOST_TIMES_A_BASELINE: f64 = 1.1;
/// … and CPU time moves by tens of percent between runs of one build (`docs/live-apps.md`), so
/// its bound is generous; the measured runs in the docs give the real comparison.
const CPU_AT_MOST_TIMES_A_BASELINE: f64 = 1.5;

fn below_the_baselines(reports: &[ExperimentReport]) {
    let guis = reports
        .iter()
        .find(|r| r.model == DeliveryModel::EsmKdsGuis)
        .expect("ran");
    for b in reports
        .iter()
        .filter(|r| r.model != DeliveryModel::EsmKdsGuis)
    {
        assert!(
            guis.wakeups_per_s <= b.wakeups_per_s * WAKEUPS_AT_MOST_TIMES_A_BASELINE,
            "{}: wake-ups/s {:.1} against {} {:.1}",
            guis.app,
            guis.wakeups_per_s,
            b.model.name(),
            b.wakeups_per_s
        );
        assert!(
            guis.cpu_ms.total <= b.cpu_ms.total * CPU_AT_MOST_TIMES_A_BASELINE,
            "{}: CPU {:.1} ms against {} {:.1} ms",
            guis.app,
            guis.cpu_ms.total,
            b.model.name(),
            b.cpu_ms.total
        );
    }
}

fn video_spec(model: DeliveryModel, background: Option<BackgroundPlan>) -> ExperimentSpec {
    ExperimentSpec {
        app_name: "video".into(),
        kind: AppKind::Video,
        model,
        scenario: if background.is_some() {
            Scenario::Background10s
        } else {
            Scenario::None
        },
        workload: Workload::Clip {
            width_px: VIDEO_W_PX,
            height_px: VIDEO_H_PX,
            clip_ms: VIDEO_CLIP_MS,
        },
        background,
        app_binary: app_binary(),
        seed: 1,
    }
}

#[test]
fn tracking_under_every_model() {
    // Held for the whole test: its models are compared with each other, and another live test
    // at the same time would load the machine for some of them only.
    let _live = lull_testkit::live_lock();
    let mut trace = lull_workload::spiral::stylus_spiral();
    trace.events.truncate(TRACKING_EVENTS);
    let trace: Trace = trace.scaled_to(TRACKING_SPAN_NS).unwrap();
    let mut reports = Vec::new();
    for model in APP_MODELS {
        let spec = ExperimentSpec {
            app_name: "tracking-short".into(),
            kind: AppKind::Tracking,
            model,
            scenario: Scenario::None,
            workload: Workload::Replay {
                trace: trace.clone(),
                span_ns: TRACKING_SPAN_NS,
            },
            background: None,
            app_binary: app_binary(),
            seed: 0,
        };
        let r = run(&spec);
        accounted(&r, TRACKING_EVENTS as u64);
        // Exactly once: nothing dropped at this rate.
        assert_eq!(r.events.delivered, TRACKING_EVENTS as u64, "{:?}", r.events);
        assert!(r.frames_drawn > 0, "{r:?}");
        assert_eq!(r.draw_errors, 0, "{r:?}");
        paced(&r);
        // 100 events in 1 s on a 60 Hz screen: pacing gathers several marks into some frames.
        assert!(r.frames_drawn < TRACKING_EVENTS as u64, "{r:?}");
        assert_eq!(r.pacing.frames, r.frames_drawn, "{:?}", r.pacing);
        assert!(r.daemon_wakeups_per_event > 0.0);
        if model == DeliveryModel::EsmKdsGuis {
            // The tracking app gives its foreground and background threads no work: events,
            // replies and draws must not wake them (each waiter has its own condition variable).
            assert_eq!(r.wakeups.foreground, 0, "{:?}", r.wakeups);
            assert_eq!(r.wakeups.background, 0, "{:?}", r.wakeups);
        }
        reports.push(r);
    }
    below_the_baselines(&reports);
}

#[test]
fn messaging_under_every_model() {
    // Held for the whole test: its models are compared with each other, and another live test
    // at the same time would load the machine for some of them only.
    let _live = lull_testkit::live_lock();
    let keys = lull_workload::messaging::messaging_trace(&ONE_MESSAGE, experiment::MESSAGING_SEED)
        .unwrap()
        .events
        .len() as u64;
    assert_eq!(keys, 8, "three characters and Enter, pressed and released");
    for model in APP_MODELS {
        let spec = ExperimentSpec::messaging(&ONE_MESSAGE, model, app_binary()).unwrap();
        let r = run(&spec);
        accounted(&r, keys);
        assert!(r.frames_drawn > 0, "{r:?}");
        assert!(r.messaging.is_some());
        paced(&r);
    }
}

#[test]
fn video_under_the_polling_baselines() {
    // Held for the whole test: its models are compared with each other, and another live test
    // at the same time would load the machine for some of them only.
    let _live = lull_testkit::live_lock();
    for model in [DeliveryModel::Pull16ms, DeliveryModel::VsyncBatched] {
        let r = run(&video_spec(model, None));
        accounted(&r, 0);
        assert!(r.frames_drawn > 0, "{r:?}");
        assert!(r.video.as_ref().is_some_and(|v| v.decoded > 0), "{r:?}");
    }
}

#[test]
fn in_the_background_guis_draws_nothing_and_a_baseline_keeps_drawing() {
    // Held for the whole test: its models are compared with each other, and another live test
    // at the same time would load the machine for some of them only.
    let _live = lull_testkit::live_lock();
    let guis = run(&video_spec(DeliveryModel::EsmKdsGuis, Some(BACKGROUND)));
    let base = run(&video_spec(
        DeliveryModel::BlockingMiddleware,
        Some(BACKGROUND),
    ));
    for r in [&guis, &base] {
        accounted(r, 0);
        assert!(r.frames_drawn > 0, "{r:?}");
    }
    let (g, b) = (
        guis.background_window.unwrap(),
        base.background_window.unwrap(),
    );
    eprintln!("background window: guiS {g:?}\nblocking-middleware {b:?}");
    assert_eq!(g.frames_drawn, 0, "{g:?}");
    assert_eq!(g.drawing_wakeups, 0, "{g:?}");
    assert!(b.frames_drawn > 0, "{b:?}");
    // Decoding goes on in the background under both.
    assert!(guis.video.as_ref().is_some_and(|v| v.decoded > 0));
}
