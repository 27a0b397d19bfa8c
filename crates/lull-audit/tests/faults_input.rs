//! Hostile ftrace text: a CPU's time stepping back is counted when nested events explain it and
//! refused when it cannot be (two traces joined, a corrupt stamp), never turned into a TLP.

use lull_audit::ftrace_text::{read, FtraceError, DEFAULT_IGNORED_COMMS, MAX_STEP_BACK_NS};

fn trace(first_s: &str, second_s: &str) -> String {
    format!(
        "#P:1\n          <idle>-0       [000] d..3.  {first_s}: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=7 next_prio=120\n             app-7       [000] d..3.  {second_s}: sched_switch: prev_comm=app prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
    )
}

#[test]
fn a_step_back_of_the_bound_is_counted() {
    assert_eq!(MAX_STEP_BACK_NS, 10_000_000);
    let (_, counts) = read(&trace("10.010000", "10.000000"), &DEFAULT_IGNORED_COMMS).unwrap();
    assert_eq!(counts.out_of_order_lines, 1);
}

#[test]
fn a_step_back_past_the_bound_is_an_error_naming_the_line() {
    let e = read(&trace("10.010001", "10.000000"), &DEFAULT_IGNORED_COMMS).unwrap_err();
    assert_eq!(
        e,
        FtraceError::TimeGoesBack {
            line: 3,
            cpu: 0,
            at_ns: 10_000_000_000,
            previous_ns: 10_010_001_000
        }
    );
}

#[test]
fn a_time_past_u64_is_malformed_not_wrapped() {
    let e = read(
        &trace("18446744073.709551616", "18446744074.0"),
        &DEFAULT_IGNORED_COMMS,
    )
    .unwrap_err();
    assert!(matches!(e, FtraceError::Malformed { line: 2, .. }), "{e}");
}
