//! Live: two busy processes on the two CPUs for 3 s, then one for 3 s, recorded through tracefs:
//! TLP over the busy time must be near (2·3 + 1·3) / 6 = 1.5. Skips, saying why, where the
//! recorder cannot run (not root, no tracefs, one CPU).

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
    assert!((1.3..=1.7).contains(&tlp), "TLP {tlp} outside 1.3..=1.7");
    // The busy time is the whole 6 s: both processes were logged from start to end.
    let busy_s = r.report.busy_ns as f64 / 1e9;
    assert!(
        (5.0..=7.0).contains(&busy_s),
        "busy {busy_s} s, expected about 6"
    );
    assert_eq!(
        r.recording.kernel_lost + r.recording.overwritten,
        0,
        "a quiet 6 s recording loses nothing"
    );
}
