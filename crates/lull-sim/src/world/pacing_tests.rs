//! Frame pacing, the dispatcher's one wake-up per event and batching in the seed-000 framework
//! models, with input events placed where each property shows.

use lull_model::time::NS_PER_MS;
use lull_model::{RawEvent, TouchPhase};
use lull_workload::TimedEvent;

use super::World;
use crate::report::ModelResult;
use crate::spec::FrameworkSpec;
use lull_model::DeliveryModel;

/// The models that draw when input changes something (vsync-batched draws only at vsync).
const PUSHED_DRAWERS: [DeliveryModel; 3] = [
    DeliveryModel::BlockingMiddleware,
    DeliveryModel::Esm,
    DeliveryModel::EsmKdsGuis,
];

fn spec() -> FrameworkSpec {
    super::unit_spec(5, 3_000)
}

fn touch(at_ns: u64, phase: TouchPhase) -> TimedEvent {
    TimedEvent {
        at_ns,
        raw: RawEvent::Touch {
            phase,
            x: 10,
            y: 20,
        },
    }
}

/// Touch moves every `every_ns` from `from_ns` up to (not including) `to_ns`.
fn moves(from_ns: u64, to_ns: u64, every_ns: u64) -> Vec<TimedEvent> {
    (from_ns..to_ns)
        .step_by(every_ns as usize)
        .map(|at| touch(at, TouchPhase::Move))
        .collect()
}

struct Run {
    r: ModelResult,
    handled_order: Vec<u64>,
    esm: lull_esm::EsmCounters,
}

fn run(spec: &FrameworkSpec, m: DeliveryModel, events: Vec<TimedEvent>) -> Run {
    let mut w = World::new(spec, m).expect("builds");
    w.user.set_events(events);
    w.run_to_end();
    let handled_order = w.user.handled_order().to_vec();
    let esm = w.user.esm_counters();
    Run {
        r: w.report(),
        handled_order,
        esm,
    }
}

fn total_wakeups(r: &ModelResult) -> u64 {
    r.thread_wakeups.values().sum()
}

/// Every event handled exactly once, in injection order, none dropped or left over.
fn assert_exactly_once(run: &Run, n: u64) {
    let r = &run.r;
    assert_eq!(r.events_injected, n);
    assert_eq!(r.events_handled, n, "{:?}", r.events_dropped);
    assert_eq!(r.events_dropped, 0);
    assert_eq!(r.events_pending_at_end, 0);
    assert_eq!(run.handled_order.len() as u64, n);
    assert!(run.handled_order.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn events_denser_than_the_refresh_draw_at_most_once_per_refresh() {
    let s = spec();
    // 500 moves per second for 2.9 s: eight events per refresh period.
    let evs = moves(100 * NS_PER_MS, 3000 * NS_PER_MS, 2 * NS_PER_MS);
    let n = evs.len() as u64;
    let hz = u64::from(s.header.platform.display.refresh_hz);
    for m in DeliveryModel::ALL {
        let run = run(&s, m, evs.clone());
        assert_exactly_once(&run, n);
        let r = &run.r;
        let bound = (r.duration_ms as u64 * hz).div_ceil(1000) + 1;
        assert!(
            r.frames_drawn <= bound,
            "{m:?}: {} > {bound}",
            r.frames_drawn
        );
        // Paced, not starved: the input keeps a frame owed in nearly every period.
        assert!(
            r.frames_drawn * 10 >= bound * 7,
            "{m:?}: {}",
            r.frames_drawn
        );
    }
    // With KDS the drawing thread wakes once per frame (the event thread does not wake it while
    // a frame callback is armed), not once per event.
    let kds = run(&s, DeliveryModel::EsmKdsGuis, evs);
    assert!(kds.r.thread_wakeups["drawing"] <= kds.r.frames_drawn + 1);
}

#[test]
fn a_lone_event_after_a_quiet_spell_is_drawn_at_once() {
    let s = spec();
    // Half a millisecond after a vsync (1000 ms is the 60th at 60 Hz): the next is 16.2 ms away.
    let evs = vec![touch(1000 * NS_PER_MS + NS_PER_MS / 2, TouchPhase::Down)];
    let period_ms = 1000.0 / f64::from(s.header.platform.display.refresh_hz);
    for m in PUSHED_DRAWERS {
        let run = run(&s, m, evs.clone());
        assert_exactly_once(&run, 1);
        assert_eq!(run.r.frames_drawn, 1);
        let f = run.r.frame_latency_ms.max.expect("one frame");
        // Waking the cluster (C7/CC6 exit), the handler and the draw, not a wait for vsync.
        assert!(f < period_ms * 0.75, "{m:?}: {f} ms");
    }
    // Choreographer waits for the next vsync even after a quiet spell.
    let vsync = run(&s, DeliveryModel::VsyncBatched, evs);
    let f = vsync.r.frame_latency_ms.max.expect("one frame");
    assert!(f > period_ms * 0.9, "{f} ms");
}

#[test]
fn an_idle_display_arms_no_frame_callback() {
    let short = spec();
    let mut long = spec();
    long.tail_ms += 2000;
    // Input only in the first 0.6 s; the display then idles for 2.6 s or 4.6 s.
    let evs = moves(100 * NS_PER_MS, 600 * NS_PER_MS, 3 * NS_PER_MS);
    let n = evs.len() as u64;
    for m in [
        DeliveryModel::VsyncBatched,
        DeliveryModel::BlockingMiddleware,
        DeliveryModel::Esm,
        DeliveryModel::EsmKdsGuis,
    ] {
        let a = run(&short, m, evs.clone());
        let b = run(&long, m, evs.clone());
        assert_exactly_once(&a, n);
        assert_exactly_once(&b, n);
        assert_eq!(a.r.frames_drawn, b.r.frames_drawn, "{m:?}");
        assert_eq!(total_wakeups(&a.r), total_wakeups(&b.r), "{m:?}");
    }
    // The pull model's loops keep waking.
    let a = run(&short, DeliveryModel::Pull16ms, evs.clone());
    let b = run(&long, DeliveryModel::Pull16ms, evs);
    assert!(total_wakeups(&b.r) > total_wakeups(&a.r) + 200);
}

#[test]
fn the_dispatcher_wakes_at_most_once_per_event() {
    let s = spec();
    // The spiral recording, 1,614 events in 3 s.
    let evs = s.input_events().expect("trace");
    let n = evs.len() as u64;
    for m in [DeliveryModel::Esm, DeliveryModel::EsmKdsGuis] {
        let run = run(&s, m, evs.clone());
        assert_exactly_once(&run, n);
        let e = run.esm;
        // Each event reached the app once: pushed at once to a waiting app, or taken from its
        // private queue by `esm_wait`.
        assert_eq!(e.pushed_direct + e.pushed_from_queue, n);
        assert_eq!(e.overflow_dropped, 0);
        // Only a push to a waiting app wakes the dispatcher; `esm_wait` never does.
        let d = run.r.thread_wakeups["esm-dispatcher"];
        assert!(d <= e.pushed_direct, "{m:?}: {d} > {}", e.pushed_direct);
        let per = run.r.daemon_wakeups_per_event.expect("ESM model");
        assert!(per <= 1.0, "{m:?}: {per}");
    }
    let pull = run(&s, DeliveryModel::Pull16ms, evs);
    assert_eq!(pull.r.daemon_wakeups_per_event, None);
}

#[test]
fn a_burst_is_taken_from_the_private_queue_under_one_dispatcher_wakeup() {
    let s = spec();
    // 20 moves 10 µs apart: the first is pushed, the rest queue while its handler runs.
    let at = 1000 * NS_PER_MS;
    let evs: Vec<TimedEvent> = (0..20)
        .map(|i| touch(at + i * 10_000, TouchPhase::Move))
        .collect();
    for m in [DeliveryModel::Esm, DeliveryModel::EsmKdsGuis] {
        let run = run(&s, m, evs.clone());
        assert_exactly_once(&run, 20);
        assert!(run.esm.pushed_from_queue >= 15, "{m:?}: {:?}", run.esm);
        assert!(run.r.thread_wakeups["esm-dispatcher"] <= 2, "{m:?}");
    }
}

#[test]
fn overflow_beyond_the_private_queue_is_counted_not_lost() {
    let s = spec();
    // Far more events at one instant than a private queue holds.
    let n = lull_esm::DEFAULT_QUEUE_BOUND as u64 + 50;
    let evs: Vec<TimedEvent> = (0..n)
        .map(|i| touch(NS_PER_MS * 500 + i, TouchPhase::Move))
        .collect();
    for m in [DeliveryModel::Esm, DeliveryModel::EsmKdsGuis] {
        let run = run(&s, m, evs.clone());
        let r = &run.r;
        assert!(run.esm.overflow_dropped > 0, "{m:?}");
        assert_eq!(r.events_dropped, run.esm.overflow_dropped);
        assert_eq!(
            r.events_handled + r.events_dropped + r.events_pending_at_end,
            n
        );
        assert!(run.handled_order.windows(2).all(|w| w[0] <= w[1]));
    }
}
