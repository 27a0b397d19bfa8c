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
    // reported by `lull audit two-phase`); what load cannot change is checked here. Both ran
    // at once for a good part of the first phase, so TLP is well above 1 (a run with the two
    // never together gives 1.0) and at most 2.
    assert!(tlp > 1.1 && tlp <= 2.0, "TLP {tlp}");
    // Two CPUs are busy only in the first half of the busy span: the second process ends on a
    // deadline, whatever the load (a margin of 5 % of the span for the exit).
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
        busy.iter().all(|&(t, n)| n < 2 || t <= half),
        "two busy CPUs after the first phase: {busy:?}"
    );
    // The busy time is most of the recording: the first process was logged from start to
    // end (at nice −20, other fair load barely takes its CPU).
    let busy_share = r.report.busy_ns as f64 / r.report.span_ns as f64;
    assert!(busy_share > 0.5, "busy {busy_share:.2} of the span");
    assert_eq!(
        r.recording.kernel_lost + r.recording.overwritten,
        0,
        "a quiet 6 s recording loses nothing"
    );
}
