//! The fan-out bench's accounting: every delivery it expects is delivered or counted dropped,
//! nothing twice, nothing out of order — with clients that keep up and with a queue bound so small
//! that overflow markers must carry the rest. No throughput is asserted.

use lull_lab::bench_fanout::{run, FanoutConfig};
use lull_model::time::NS_PER_MS;

#[test]
fn every_delivery_is_handled_when_the_clients_keep_up() {
    let r = run(&FanoutConfig {
        clients: 3,
        rate_per_s: 500,
        duration_ns: 100 * NS_PER_MS,
        ..FanoutConfig::default()
    })
    .unwrap();
    assert_eq!(r.events_sent, 50);
    assert_eq!(
        r.events_sent,
        r.events_injected + r.socket_dropped,
        "{r:#?}"
    );
    assert_eq!(r.events_accepted, r.events_injected);
    assert_eq!(r.deliveries_expected, r.events_accepted * 3);
    assert_eq!(r.delivered + r.dropped_counted, r.deliveries_expected);
    assert!(r.accounted(), "{r:#?}");
    assert_eq!(r.clients_failed, 0);
    assert_eq!(r.rings.dropped, r.dropped_counted);
    assert_eq!(r.rings.produced, r.rings.delivered + r.rings.dropped);
}

#[test]
fn deliveries_stay_accounted_with_a_one_event_queue() {
    // A private queue of one event and bursts of ten per millisecond tick: the datagrams go
    // through each client's ring instead (1,024 records), so the ESM's bound does not cut them,
    // and whatever a ring drops is counted and marked.
    let r = run(&FanoutConfig {
        clients: 4,
        rate_per_s: 10_000,
        duration_ns: 50 * NS_PER_MS,
        queue_bound: 1,
    })
    .unwrap();
    assert_eq!(r.events_sent, 500);
    assert_eq!(r.events_sent, r.events_injected + r.socket_dropped);
    assert_eq!(
        r.delivered + r.dropped_counted,
        r.deliveries_expected,
        "{r:#?}"
    );
    // The datagrams go through the clients' rings, not the ESM's private queues: the drops
    // and markers, if any, are the rings'.
    assert_eq!(r.rings.dropped, r.dropped_counted);
    assert_eq!(r.rings.markers, r.overflow_markers);
    assert!(r.accounted(), "{r:#?}");
}
