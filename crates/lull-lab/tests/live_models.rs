//! The live stack end to end: the same short stylus replay through ESM and through each baseline,
//! measured in one run. Absolute timings are machine-dependent and are not asserted; what is
//! asserted is exact event accounting, generous ratios between models measured side by side,
//! and what the models' structure guarantees about wake-ups (no timer anywhere in ESM's stack;
//! two 16 ms polling loops in pull-16ms's).

use lull_lab::live::{self, RunSpec};
use lull_lab::stack::LIVE_MODELS;
use lull_model::time::NS_PER_MS;
use lull_model::DeliveryModel;
use lull_workload::Trace;

/// A few hundred events over about two seconds keeps the test fast.
const EVENTS: usize = 240;
const SPAN_NS: u64 = 2_000 * NS_PER_MS;

fn short_trace() -> Trace {
    let full = lull_workload::spiral::stylus_spiral();
    let head = Trace {
        events: full.events[..EVENTS].to_vec(),
    };
    head.scaled_to(SPAN_NS).unwrap()
}

fn run(model: DeliveryModel, trace: &Trace) -> live::LiveReport {
    let spec = RunSpec {
        model,
        trace: Some(trace.clone()),
        workload_name: "test".into(),
        idle_s: 0,
    };
    live::run(&spec).unwrap()
}

#[test]
fn every_model_delivers_every_event_and_esm_is_much_faster_than_polling() {
    let trace = short_trace();
    let reports: Vec<_> = LIVE_MODELS
        .into_iter()
        .map(|m| (m, run(m, &trace)))
        .collect();
    for (m, r) in &reports {
        assert_eq!(r.events_injected, EVENTS as u64, "{m:?}");
        assert_eq!(r.events_delivered, EVENTS as u64, "{m:?}: {r:?}");
        assert_eq!(r.events_dropped, 0, "{m:?}");
        assert!(r.latency_us.mean.is_some());
    }
    let mean = |m: DeliveryModel| {
        reports
            .iter()
            .find(|(x, _)| *x == m)
            .unwrap()
            .1
            .latency_us
            .mean
            .unwrap()
    };
    // Pull waits on average half a 16 ms period; ESM pushes at once.
    assert!(
        mean(DeliveryModel::Esm) * 10.0 < mean(DeliveryModel::Pull16ms),
        "esm {} vs pull {}",
        mean(DeliveryModel::Esm),
        mean(DeliveryModel::Pull16ms)
    );
    // Vsync holds moves until the next frame.
    assert!(mean(DeliveryModel::Esm) * 10.0 < mean(DeliveryModel::VsyncBatched));
}

#[test]
fn idle_esm_stack_never_wakes_and_pull_polls_every_period() {
    let esm = live::run(&RunSpec::idle(DeliveryModel::Esm, 1).unwrap()).unwrap();
    assert_eq!(esm.threads.len(), 3, "driver, daemon and app are measured");
    for t in &esm.threads {
        assert_eq!(t.wakeups, 0, "ESM idle: {} woke up", t.role);
    }
    let pull = live::run(&RunSpec::idle(DeliveryModel::Pull16ms, 1).unwrap()).unwrap();
    for role in ["hub", "app"] {
        let t = pull.threads.iter().find(|t| t.role == role).unwrap();
        // 1 s / 16 ms = 62.5 ticks. The bound is loose on purpose: a loaded CI machine may delay
        // ticks, but a polling loop still wakes tens of times a second where ESM wakes never.
        assert!(t.wakeups >= 30, "pull {role} woke only {} times", t.wakeups);
    }
}
