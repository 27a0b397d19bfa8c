//! Live: two busy processes on the two CPUs for 3 s, then one for 3 s, recorded through tracefs:
//! TLP over the busy time is ideally (2·3 + 1·3) / 6 = 1.5. The test checks what other load on
//! the machine cannot change (two CPUs busy only in the first phase, TLP well above 1); the
//! figure itself is reported by `lull audit two-phase`. Skips, saying why, where the recorder
//! cannot run (not root, no tracefs, one CPU).

use lull_lab::audit::experiments::two_phase_tlp;
use lull_os::tracefs;

/// Each phase, as the issue states the experiment.
const PHASE_MS: u64 = 3000;

#[test]
fn two_then_one_busy_process_gives_tlp_near_one_and_a_half() {
    if let Err(why) = tracefs::available() {
        lull_testkit::skip(format!("the live recorder cannot run here: {why}"));
        return;
    }
    let cpus = tracefs::tracefs_root()
        .map(|r| tracefs::cpu_count(&r))
        .unwrap_or(1);
    if cpus < 2 {
        lull_testkit::skip(format!("needs two CPUs, this machine has {cpus}"));
        return;
    }
    let r = two_phase_tlp(PHASE_MS).expect("two-phase run");
    let tlp = r.report.tlp.expect("the busy processes ran");
    println!(
        "TLP {tlp:.3}, C_i {:?}, dropped {}, recording {:?}",
        r.report.busy_cpus_fraction, r.report.dropped_events, r.recording.records
    );
    // How near 1.5 it comes depends on what else runs (1.44–1.48 on a quiet machine,
    // reported by `lull audit two-phase`; 1.07 once beside other live experiments, whose
    // real-time threads took the CPUs from these nice −20 ones). What load cannot change is
    // checked here: two CPUs are busy at once at some point of the first phase and never after
    // it (the second process ends on a deadline, a margin of 5 % of the span for its exit), so
    // TLP is above 1; and the first process is seen from start to end (its end is a deadline
    // too), so the busy span covers most of the two phases.
    assert!(tlp > 1.0 && tlp <= 2.0, "TLP {tlp}");
    let busy = r.report.steps.clone();
    let start = busy.iter().find(|s| s.1 > 0).expect("busy at some point").0;
    let end = busy
        .iter()
        .rev()
        .find(|s| s.1 == 0 && s.0 > start)
        .expect("idle at the end")
        .0;
    let half = start + (end - start) / 2 + (end - start) / 20;
    assert!(
        busy.iter().any(|&(t, n)| n == 2 && t <= half),
        "never two busy CPUs in the first phase: {busy:?}"
    );
    assert!(
        busy.iter().all(|&(t, n)| n < 2 || t <= half),
        "two busy CPUs after the first phase: {busy:?}"
    );
    let span_ms = (end - start) / 1_000_000;
    assert!(
        span_ms >= 2 * PHASE_MS * 3 / 4,
        "busy from start to end over {span_ms} ms of the {} ms",
        2 * PHASE_MS
    );
    assert_eq!(
        r.recording.kernel_lost + r.recording.overwritten,
        0,
        "a quiet 6 s recording loses nothing"
    );
}
