//! Hostile trace text: absurd times are refused at the reader with the line named.

use lull_workload::trace::{TraceError, MAX_SPAN_NS};
use lull_workload::Trace;

#[test]
fn an_event_at_u64_max_ns_is_refused() {
    let text = format!("lull-trace 1\n0 timer 0\n{} timer 1\n", u64::MAX);
    let e = Trace::parse(&text).unwrap_err();
    assert_eq!(
        e,
        TraceError::TooLong {
            line: 3,
            at_ns: u64::MAX
        }
    );
    assert!(e
        .to_string()
        .starts_with("line 3: time 18446744073709551615 ns is past"));
}

#[test]
fn the_longest_trace_is_accepted_and_one_ns_more_is_not() {
    let ok = format!("lull-trace 1\n{MAX_SPAN_NS} timer 0\n");
    assert_eq!(Trace::parse(&ok).unwrap().events[0].at_ns, MAX_SPAN_NS);
    let past = format!("lull-trace 1\n{} timer 0\n", MAX_SPAN_NS + 1);
    assert!(matches!(
        Trace::parse(&past),
        Err(TraceError::TooLong { line: 2, .. })
    ));
}
