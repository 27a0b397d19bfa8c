//! The validation's analysis on saved live runs, without the machine (`lull validate kernel
//! --live-from`, docs/validation.md).
//!
//! `tests/data/validation-saved/` holds two workloads' live figures of rounds 1–3 of the
//! 2026-11-28 12:02 UTC `--runs 5` collection on the 2-vCPU validation VM (round 1 on a quiet
//! machine, rounds 2–3 beside other builds), and that run's probe: loop 17.57 ns, timer
//! interrupts 2.6–9.2 µs late on a busy CPU, and the idle path at its named fallbacks, as the
//! probe gives it when its traces lack samples (that run's trace had 1 idle wake-up).

use std::path::{Path, PathBuf};

use lull_lab::validate::collection::{analyse, Collection, CollectionError, LIVE_SUFFIX};
use lull_lab::validate::compare::counts;
use lull_lab::validate::machine::{Source, FALLBACK_IDLE_WAKE_NS};

fn saved() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/validation-saved")
}

#[test]
fn a_saved_collection_is_analysed_without_the_machine() {
    let c = Collection::load(&saved()).unwrap();
    let names: Vec<&str> = c.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["periodic-1ms-vs-hog", "two-hogs-nice"]);
    let tp = c.machine.facts.timer_path.as_ref().unwrap();
    assert_eq!(tp.value.idle_wake_ns.value, Some(FALLBACK_IDLE_WAKE_NS));
    assert!(matches!(tp.value.idle_wake_ns.source, Source::Fallback(_)));

    let (profile, ws) = analyse(&c, 1).unwrap();
    // The fallback reaches the profile's notes as a warning, and the idle state as its exit.
    assert!(
        profile.notes.iter().any(|n| n.starts_with("WARNING")),
        "{:?}",
        profile.notes
    );
    assert_eq!(profile.platform.clusters[0].idle_states[1].exit_us, 24);
    assert_eq!(profile.pass_overhead_ns, 4_000);
    assert_eq!(profile.loop_ns, Some(17.57));

    let nice = ws.iter().find(|w| w.name == "two-hogs-nice").unwrap();
    assert_eq!(nice.runs, 3);
    let shares: Vec<f64> = nice.threads[0]
        .spread
        .runs
        .iter()
        .map(|f| f.cpu_share)
        .collect();
    assert_eq!(shares.len(), 3);
    assert!((shares[0] - 0.752).abs() < 0.001, "{shares:?}");
    // The simulated nice-0 hog gets its weight's share, 1024 / (1024 + 335).
    assert!(
        (nice.threads[0].sim.cpu_share - 0.753).abs() < 0.005,
        "{:?}",
        nice.threads[0].sim
    );

    // Round 1 alone (the quiet one): the hogs' shares are the kernel's, within the bound.
    let mut quiet = c.clone();
    quiet.keep_rounds(&[1]).unwrap();
    let (_, ws1) = analyse(&quiet, 1).unwrap();
    let nice1 = ws1.iter().find(|w| w.name == "two-hogs-nice").unwrap();
    assert_eq!(nice1.runs, 1);
    assert!(nice1.threads.iter().all(|t| t.cpu_ok()));
    let (cpu, lat) = counts(&ws1);
    assert_eq!((cpu.threads, lat.threads), (4, 1));
    assert!(cpu.fixed >= 3, "{cpu:?}");

    // A round that was never collected is refused.
    let mut bad = c.clone();
    let err = bad.keep_rounds(&[1, 9]).unwrap_err();
    assert!(
        matches!(err, CollectionError::NoSuchRound { round: 9, .. }),
        "{err}"
    );
}

#[test]
fn a_collection_saves_and_loads_back_unchanged() {
    let c = Collection::load(&saved()).unwrap();
    let scratch = lull_os::fileout::ScratchDir::new("lull-validate-saved").unwrap();
    let dir = scratch.path().join("collection");
    c.save(&dir).unwrap();
    let back = Collection::load(&dir);
    let files = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(back.unwrap(), c);
    assert_eq!(files, 3);
}

#[test]
fn what_is_not_a_saved_collection_is_refused_with_the_reason() {
    let scratch = lull_os::fileout::ScratchDir::new("lull-validate-notsaved").unwrap();
    let dir = scratch.path();
    let none = Collection::load(dir).unwrap_err();
    assert!(matches!(none, CollectionError::NoMachine(_)), "{none}");
    std::fs::copy(saved().join("machine.json"), dir.join("machine.json")).unwrap();
    let empty = Collection::load(dir).unwrap_err();
    assert!(matches!(empty, CollectionError::NoWorkload(_)), "{empty}");
    std::fs::write(dir.join(format!("w{LIVE_SUFFIX}")), "{\"name\": 1}").unwrap();
    let bad = Collection::load(dir).unwrap_err();
    match bad {
        CollectionError::Malformed { path, .. } => assert!(path.ends_with("w.live.json")),
        other => panic!("{other}"),
    }
}

/// `tests/data/validation-quiet/`: every shipped workload, 5 rounds, collected on a quiet
/// machine (2026-11-28 13:35–13:41 UTC, the 2-vCPU validation VM, `lull validate kernel --runs 5
/// --save-live DIR`; docs/validation.md gives the run). The simulator as it is now lies within
/// the kernel's noise for 48 of 49 threads' CPU share and 15 of 19 timer threads' wake-up
/// latency there. A change to the model that takes either below the validation's goal (45 and
/// 15, noise-aware) fails here, without the machine.
#[test]
fn the_quiet_collection_stays_within_the_kernels_noise() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/validation-quiet");
    let c = Collection::load(&dir).unwrap();
    assert_eq!(c.workloads.len(), 12);
    let (_, ws) = analyse(&c, 1).unwrap();
    assert!(ws.iter().all(|w| w.runs == 5));
    let (cpu, latency) = counts(&ws);
    assert_eq!((cpu.threads, latency.threads), (49, 19));
    assert!(
        cpu.noise_aware >= 45 && latency.noise_aware >= 15,
        "CPU share {} of 49, wake-up latency {} of 19 (noise-aware)",
        cpu.noise_aware,
        latency.noise_aware
    );
}
