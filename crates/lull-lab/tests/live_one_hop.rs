//! `lull live latency`'s reference figures: an ESM run carries the raw one-hop reference measured
//! on the same events' times, the ratio of medians and the daemon's wake-ups per event; a
//! baseline run carries none of them. Counts are asserted, timings are not.

use lull_lab::live::{self, RunSpec};
use lull_model::time::NS_PER_MS;
use lull_model::DeliveryModel;
use lull_workload::Trace;

const EVENTS: usize = 120;
const SPAN_NS: u64 = 1_000 * NS_PER_MS;

fn short_trace() -> Trace {
    let full = lull_workload::spiral::stylus_spiral();
    Trace {
        events: full.events[..EVENTS].to_vec(),
    }
    .scaled_to(SPAN_NS)
    .unwrap()
}

fn run(model: DeliveryModel) -> live::LiveReport {
    live::run(&RunSpec {
        model,
        trace: Some(short_trace()),
        workload_name: "test".into(),
        idle_s: 0,
    })
    .unwrap()
}

#[test]
fn an_esm_run_carries_the_one_hop_reference_and_the_daemons_wakeups_per_event() {
    let r = run(DeliveryModel::Esm);
    assert_eq!(r.events_delivered, EVENTS as u64);
    let hop = r.one_hop_us.expect("one-hop reference");
    assert!(hop.p50.is_some() && hop.p99.is_some() && hop.mean.is_some());
    let ratio = r.esm_over_one_hop.expect("ratio");
    assert!(ratio.is_finite() && ratio > 0.0, "{ratio}");
    assert_eq!(
        ratio,
        r.latency_us.p50.unwrap() / hop.p50.unwrap(),
        "the ratio is of the medians"
    );
    // The daemon is off the per-event path: its loop wakes for the set-up (connections,
    // registrations, the producer's routes) and the stop only, fewer times than there are events.
    let w = r
        .daemon_wakeups_per_event
        .expect("daemon wake-ups per event");
    assert!(w > 0.0 && w < 1.0, "{w}");
    // The producer and the app wake about once per event each (several events found in one
    // wake-up count once), counted by the kernel.
    for (who, w) in [
        ("producer", r.producer_wakeups_per_event),
        ("app", r.app_wakeups_per_event),
    ] {
        let w = w.unwrap_or_else(|| panic!("{who} wake-ups per event"));
        assert!(w > 0.0 && w <= 3.0, "{who}: {w}");
    }
    let k = r.rings.expect("ring accounting");
    assert!(k.balanced, "{k:?}");
    assert_eq!(k.handled, EVENTS as u64, "{k:?}");
    let json = serde_json::to_value(&r).unwrap();
    for key in [
        "one_hop_us",
        "esm_over_one_hop",
        "daemon_wakeups_per_event",
        "producer_wakeups_per_event",
        "app_wakeups_per_event",
        "rings",
    ] {
        assert!(json.get(key).is_some(), "{key} missing from {json}");
    }
}

#[test]
fn a_baseline_run_has_no_esm_reference_figures() {
    let r = run(DeliveryModel::BlockingMiddleware);
    assert_eq!(r.events_delivered, EVENTS as u64);
    assert_eq!(r.one_hop_us, None);
    assert_eq!(r.esm_over_one_hop, None);
    assert_eq!(r.daemon_wakeups_per_event, None);
    assert_eq!(r.producer_wakeups_per_event, None);
    assert_eq!(r.rings, None);
}
