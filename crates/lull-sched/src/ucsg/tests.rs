//! UCSG walked through the seed's cases: the six events of §3.3 and what each decides.

use proptest::prelude::*;

use super::*;

const MS: u64 = 1_000_000;
const ZYGOTE: u32 = 1;
const FILES: u32 = 10;
const ZIP: u32 = 20;
const FILES_APP: u32 = 1;
const ZIP_APP: u32 = 2;

fn s4(online: usize) -> Ucsg<u32> {
    Ucsg::new(UcsgConfig::galaxy_s4(), 0, Start { cluster: 0, online })
        .expect("the seed's configuration is valid")
}

fn nices(out: &[Decision<u32>]) -> Vec<(u32, i8)> {
    out.iter()
        .filter_map(|d| match *d {
            Decision::Nice { thread, nice } => Some((thread, nice)),
            _ => None,
        })
        .collect()
}

fn use_of(thread: u32, runtime_ms: u64) -> ThreadUse<u32> {
    ThreadUse {
        thread,
        runtime_ns: runtime_ms * MS,
    }
}

/// One sampling period ending at `now_ms` on `cluster` with `online` cores at `freq_khz`, as
/// the substrate measured them: the decisions it takes.
fn sample(
    u: &mut Ucsg<u32>,
    now_ms: u64,
    cluster: usize,
    online: usize,
    freq_khz: u64,
    threads: &[ThreadUse<u32>],
) -> Vec<Decision<u32>> {
    let mut out = Vec::new();
    u.sample(
        now_ms * MS,
        &SampleView {
            cluster,
            online,
            freq_khz,
            threads,
        },
        &mut out,
    );
    out
}

/// Zygote (system), the file manager in front with one thread, ZIP behind with one.
fn two_apps(u: &mut Ucsg<u32>) -> Vec<Decision<u32>> {
    let mut out = Vec::new();
    u.thread_forked(None, ZYGOTE, Some(Owner::System), &mut out);
    u.foreground(FILES_APP, &mut out);
    u.thread_forked(Some(ZYGOTE), FILES, Some(Owner::App(FILES_APP)), &mut out);
    u.thread_forked(Some(ZYGOTE), ZIP, Some(Owner::App(ZIP_APP)), &mut out);
    out
}

/// The decisions of a cluster switch: move to `cluster`, then set its frequency to `khz`.
fn switch_to<T>(cluster: usize, khz: u64) -> Vec<Decision<T>> {
    vec![Decision::Cluster { cluster }, Decision::Frequency { khz }]
}

#[test]
fn the_first_sample_is_one_period_after_the_start() {
    let cfg = UcsgConfig::galaxy_s4();
    let period = cfg.sampling_period_ns;
    let u: Ucsg<u32> = Ucsg::new(
        cfg,
        7 * MS,
        Start {
            cluster: 0,
            online: 1,
        },
    )
    .unwrap();
    assert_eq!(u.next_sample_ns(), 7 * MS + period);
}

#[test]
fn a_thread_reported_again_changes_nice_only_when_its_owner_changes_its_sensitivity() {
    let mut u = s4(2);
    let _ = two_apps(&mut u);
    let before = u.stats().reprioritized;
    // The file manager's thread reported again under its own app: nothing changes.
    let mut out = Vec::new();
    u.thread_forked(Some(ZYGOTE), FILES, Some(Owner::App(FILES_APP)), &mut out);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(u.stats().reprioritized, before);
    // Learnt to belong to ZIP, the app behind: low, once.
    u.thread_forked(Some(ZYGOTE), FILES, Some(Owner::App(ZIP_APP)), &mut out);
    assert_eq!(nices(&out), vec![(FILES, 10)]);
    assert_eq!(u.stats().reprioritized, before + 1);
    assert_eq!(u.slot(FILES), Some(1), "a known thread keeps its core");
}

#[test]
fn fork_inherits_and_allocation_spreads_by_sensitivity() {
    let mut u = s4(2);
    let out = two_apps(&mut u);
    // Zygote medium (−10), the front app medium, the app behind low (10).
    assert_eq!(nices(&out), vec![(ZYGOTE, -10), (FILES, -10), (ZIP, 10)]);
    // Zygote on slot 0; the file manager where total sensitivity is least (slot 1); ZIP where
    // total workload is least (no workload yet: slot 0).
    assert_eq!(u.slot(ZYGOTE), Some(0));
    assert_eq!(u.slot(FILES), Some(1));
    assert_eq!(u.slot(ZIP), Some(0));
    // A thread the file manager forks is the file manager's: inheritance at fork.
    let mut out = Vec::new();
    u.thread_forked(Some(FILES), 11, None, &mut out);
    assert_eq!(u.sensitivity(11), Some(Sensitivity::Medium));
    // A thread of unknown parent is the system's.
    u.thread_forked(Some(999), 12, None, &mut out);
    assert_eq!(u.sensitivity(12), Some(Sensitivity::Medium));
    u.thread_exited(12);
    assert_eq!(u.sensitivity(12), None);
}

#[test]
fn a_touch_goes_high_and_to_the_top_of_the_big_cluster_for_500_ms() {
    let mut u = s4(2);
    two_apps(&mut u);
    let mut out = Vec::new();
    u.touch(1000 * MS, &mut out);
    assert_eq!(nices(&out), vec![(FILES, -20)]);
    assert_eq!(out[1..], switch_to(1, 1_600_000));
    assert_eq!(u.user().high_until_ns, Some(1500 * MS));
    // The first sampling period comes before the expiry.
    assert_eq!(u.next_deadline_ns(), 200 * MS);
    // Another touch restarts the 500 ms.
    out.clear();
    u.touch(1300 * MS, &mut out);
    assert!(out.is_empty(), "already high and at the top: {out:?}");
    assert_eq!(u.stats().touches, 2);
    out.clear();
    u.expire(1799 * MS, &mut out);
    assert!(out.is_empty());
    u.expire(1800 * MS, &mut out);
    assert_eq!(nices(&out), vec![(FILES, -10)]);
}

#[test]
fn display_toggle_and_front_changes_reprioritize() {
    let mut u = s4(2);
    two_apps(&mut u);
    let mut out = Vec::new();
    u.display(false, &mut out);
    assert_eq!(nices(&out), vec![(FILES, 10)]);
    // Touches do not count with the display off.
    out.clear();
    u.touch(5 * MS, &mut out);
    assert!(out.is_empty());
    u.display(true, &mut out);
    assert_eq!(nices(&out), vec![(FILES, -10)]);
    out.clear();
    u.foreground(ZIP_APP, &mut out);
    assert_eq!(nices(&out), vec![(FILES, 10), (ZIP, -10)]);
    assert_eq!(u.stats().reprioritized, 3 + 4);
}

#[test]
fn a_low_thread_alone_gets_the_lowest_level_and_one_core() {
    // The home screen idles in front; ZIP runs flat out behind on two cores' worth of slots.
    // Its cycles are not required (C_l = 0 without a medium need): one core at 250 MHz (§4.3).
    let mut u = s4(2);
    two_apps(&mut u);
    let out = sample(&mut u, 200, 0, 2, 600_000, &[use_of(ZIP, 200)]);
    assert_eq!(out[0], Decision::Online { cores: 1 });
    // Every thread on slot 1 is placed again on slot 0.
    assert!(out.contains(&Decision::Place {
        thread: FILES,
        slot: 0
    }));
    assert_eq!(out.last(), Some(&Decision::Frequency { khz: 250_000 }));
}

#[test]
fn the_front_apps_need_sets_the_level_and_the_low_share_rides_along() {
    let mut u = s4(2);
    two_apps(&mut u);
    // The file manager ran 200 ms at 500 MHz (100 Mcycles, above the 90 of one LITTLE core) on
    // slot 1, ZIP 200 ms on slot 0: two cores stay on; the file manager's core needs 100
    // Mcycles → 500 MHz at 100 % → 550 MHz. ZIP's core needs nothing of its own.
    let out = sample(
        &mut u,
        200,
        0,
        2,
        500_000,
        &[use_of(FILES, 200), use_of(ZIP, 200)],
    );
    assert!(!out.iter().any(|d| matches!(d, Decision::Online { .. })));
    assert_eq!(out.last(), Some(&Decision::Frequency { khz: 550_000 }));
}

/// The file manager in front with four threads of its own, 100 to 103 (all medium).
fn four_front_threads(u: &mut Ucsg<u32>) {
    let mut out = Vec::new();
    u.foreground(FILES_APP, &mut out);
    for t in 0..4 {
        u.thread_forked(None, 100 + t, Some(Owner::App(FILES_APP)), &mut out);
    }
}

#[test]
fn dpm_turns_on_cores_for_the_required_workload() {
    let mut u = s4(1);
    four_front_threads(&mut u);
    // Four medium threads ran 200 ms each at 600 MHz on one core's slot... as measured: 480
    // Mcycles needed, above LITTLE's 300 → four cores.
    let threads: Vec<_> = (0..4).map(|t| use_of(100 + t, 200)).collect();
    let out = sample(&mut u, 200, 0, 1, 600_000, &threads);
    assert_eq!(out[0], Decision::Online { cores: 4 });
    // 120 Mcycles per thread: more than LITTLE's 600 MHz gives → the big cluster at once.
    assert!(out.contains(&Decision::Cluster { cluster: 1 }));
    // Migration runs each step once per period: sensitivity 8 | 0 → 4 | 4, then workload from
    // slot 0 to the idle slot 2.
    let slots = |u: &Ucsg<u32>| {
        let mut s: Vec<usize> = (0..4).map(|t| u.slot(100 + t).unwrap()).collect();
        s.sort_unstable();
        s
    };
    assert_eq!(slots(&u), vec![0, 1, 1, 2]);
    // The next period spreads them over all four.
    sample(&mut u, 400, 1, 4, 1_600_000, &threads);
    assert_eq!(slots(&u), vec![0, 1, 2, 3]);
    assert_eq!(u.stats().samples, 2);
    assert_eq!(u.next_sample_ns(), 400 * MS + u.config().sampling_period_ns);
    // Three cores went off outside UCSG: only the thread on the core left counts towards the
    // workload, and the others are placed again on cores that are on.
    let out = sample(&mut u, 600, 1, 1, 1_600_000, &threads);
    let online = out
        .iter()
        .find_map(|d| match *d {
            Decision::Online { cores } => Some(cores),
            _ => None,
        })
        .unwrap_or(1);
    assert!(
        slots(&u).iter().all(|&s| s < online),
        "{:?} on {online}",
        slots(&u)
    );
}

#[test]
fn a_thread_that_did_not_run_does_not_earn_a_core_and_a_bad_cluster_is_ignored() {
    let mut u = s4(1);
    four_front_threads(&mut u);
    // As in the DPM case above, but one of the four is listed with 0 ns: three ran, so three
    // cores at most.
    let threads: Vec<_> = (0..4)
        .map(|t| use_of(100 + t, if t == 3 { 0 } else { 200 }))
        .collect();
    let out = sample(&mut u, 200, 0, 1, 600_000, &threads);
    assert_eq!(out[0], Decision::Online { cores: 3 });
    // A view naming a cluster the configuration lacks (the Galaxy S4 has two) is not taken
    // for the active cluster: UCSG decides on the one it knows.
    let out = sample(&mut u, 400, 2, 3, 600_000, &threads);
    assert!(
        out.iter()
            .all(|d| !matches!(d, Decision::Cluster { cluster } if *cluster > 1)),
        "{out:?}"
    );
    assert_eq!(u.stats().samples, 2);
}

#[test]
fn of_two_equal_threads_on_a_core_the_first_to_arrive_moves_first() {
    let mut u = s4(1);
    let mut out = Vec::new();
    // Two system (medium) threads on the one core, 101 forked before 100.
    u.thread_forked(None, 101, Some(Owner::System), &mut out);
    u.thread_forked(None, 100, Some(Owner::System), &mut out);
    // 60 Mcycles each at 600 MHz: 120 M, above LITTLE's 90 M → two cores; sensitivity 4 | 0
    // → 2 | 2 by moving one of them, the one that arrived first (FIFO, §3.2.2).
    let out = sample(
        &mut u,
        200,
        0,
        1,
        600_000,
        &[use_of(100, 100), use_of(101, 100)],
    );
    assert_eq!(out[0], Decision::Online { cores: 2 });
    assert_eq!((u.slot(101), u.slot(100)), (Some(1), Some(0)));
}

#[test]
fn a_thread_placed_again_arrives_behind_those_already_on_its_core() {
    let mut u = s4(2);
    let mut out = Vec::new();
    u.foreground(FILES_APP, &mut out);
    // ZIP's low thread 100 and system thread 102 on core 0, system thread 101 on core 1.
    u.thread_forked(None, 100, Some(Owner::App(ZIP_APP)), &mut out);
    u.thread_forked(None, 101, Some(Owner::System), &mut out);
    u.thread_forked(None, 102, Some(Owner::System), &mut out);
    assert_eq!(
        (u.slot(100), u.slot(101), u.slot(102)),
        (Some(0), Some(1), Some(0))
    );
    let threads = [use_of(100, 1), use_of(101, 100), use_of(102, 100)];
    // Core 1 went off outside UCSG; core 0's 60.7 Mcycles need no second core, so 101 is
    // placed again, on core 0, after 102.
    let _ = sample(&mut u, 200, 0, 1, 600_000, &threads);
    assert_eq!(u.slot(101), Some(0));
    // 120 M of medium work: two cores. Sensitivity 5 | 0 moves one medium thread, the first
    // to have arrived on core 0: 102.
    let out = sample(&mut u, 400, 0, 1, 600_000, &threads);
    assert_eq!(out[0], Decision::Online { cores: 2 });
    assert_eq!((u.slot(102), u.slot(101)), (Some(1), Some(0)));
}

#[test]
fn every_place_after_a_sample_is_counted_as_a_migration() {
    let mut u = s4(1);
    let mut out = Vec::new();
    for t in 0..4 {
        u.thread_forked(None, 100 + t, Some(Owner::System), &mut out);
    }
    let places = |out: &[Decision<u32>]| {
        out.iter()
            .filter(|d| matches!(d, Decision::Place { .. }))
            .count() as u64
    };
    // Four threads of 120 Mcycles: four cores, and migration moves three of them (as in the
    // DPM case).
    let threads: Vec<_> = (0..4).map(|t| use_of(100 + t, 200)).collect();
    let out = sample(&mut u, 200, 0, 1, 600_000, &threads);
    assert!(places(&out) > 0, "{out:?}");
    assert_eq!(u.stats().migrations, places(&out));
    // Three cores go off outside UCSG: the threads of the cores that are off are placed again.
    let before = u.stats().migrations;
    let out = sample(&mut u, 400, 0, 1, 600_000, &threads);
    assert!(places(&out) > 0, "{out:?}");
    assert_eq!(u.stats().migrations - before, places(&out));
}

#[test]
fn the_low_share_tips_a_core_at_the_up_threshold_to_the_next_level() {
    let mut u = s4(1);
    let mut out = Vec::new();
    u.foreground(FILES_APP, &mut out);
    u.thread_forked(None, FILES, Some(Owner::App(FILES_APP)), &mut out);
    u.thread_forked(None, ZIP, Some(Owner::App(ZIP_APP)), &mut out);
    // The medium thread ran 150 ms at 250 MHz: 37.5 Mcycles, exactly 75 % of the level. The low
    // one ran too, so it adds C_m × 1 / (1 + 1.25^20 × 1) ≈ 0.43 M (§3.2.3): above 75 %, so
    // the next level, 300 MHz. (Without the low share it would stay at 250 MHz; counting the
    // low thread as taking all of C_m would need 75 M, 450 MHz.)
    let out = sample(
        &mut u,
        200,
        0,
        1,
        250_000,
        &[use_of(FILES, 150), use_of(ZIP, 1)],
    );
    assert!(
        out.contains(&Decision::Frequency { khz: 300_000 }),
        "{out:?}"
    );
}

#[test]
fn a_low_thread_goes_to_the_core_with_the_least_workload() {
    let mut u = s4(2);
    let mut out = Vec::new();
    u.foreground(FILES_APP, &mut out);
    u.thread_forked(None, 100, Some(Owner::System), &mut out);
    u.thread_forked(None, 101, Some(Owner::System), &mut out);
    assert_eq!((u.slot(100), u.slot(101)), (Some(0), Some(1)));
    // 90 M and 6 M at 600 MHz: 96 M keeps both cores on, and neither can move.
    let _ = sample(
        &mut u,
        200,
        0,
        2,
        600_000,
        &[use_of(100, 150), use_of(101, 10)],
    );
    assert_eq!((u.slot(100), u.slot(101)), (Some(0), Some(1)));
    // A low thread is allocated by workload (§3.2.2): the lighter core 1.
    out.clear();
    u.thread_forked(None, ZIP, Some(Owner::App(ZIP_APP)), &mut out);
    assert_eq!(u.slot(ZIP), Some(1));
}

#[test]
fn half_scaling_after_two_rises_and_big_to_little_after_three_periods() {
    let mut u = s4(1);
    let mut out = Vec::new();
    u.foreground(FILES_APP, &mut out);
    u.thread_forked(None, 1, Some(Owner::App(FILES_APP)), &mut out);
    let step = |u: &mut Ucsg<u32>, at_ms: u64, cluster, khz, run_ms| {
        sample(u, at_ms, cluster, 1, khz, &[use_of(1, run_ms)])
    };
    // 40 Mcycles at 250 MHz (80 %): up to 300 MHz. Then 60 Mcycles at 300 MHz (100 %): the
    // workload outgrew its level twice in a row — the median between 300 MHz (level 1) and the
    // top (16), level 9: big's 900 MHz.
    let out = step(&mut u, 200, 0, 250_000, 160);
    assert_eq!(out, vec![Decision::Frequency { khz: 300_000 }]);
    let out = step(&mut u, 400, 0, 300_000, 200);
    assert_eq!(out, switch_to(1, 900_000));
    assert_eq!(u.stats().half_scalings, 1);
    // On big with a light load: its lowest level twice, LITTLE on the third period.
    let out = step(&mut u, 800, 1, 900_000, 1);
    assert_eq!(out, vec![Decision::Frequency { khz: 800_000 }]);
    step(&mut u, 1000, 1, 800_000, 1);
    let out = step(&mut u, 1200, 1, 800_000, 1);
    assert_eq!(out, switch_to(0, 250_000));
    assert_eq!(u.stats().cluster_switches, 2);
}

#[test]
fn bad_start_is_a_typed_error() {
    let r = Ucsg::<u32>::new(
        UcsgConfig::galaxy_s4(),
        0,
        Start {
            cluster: 2,
            online: 1,
        },
    );
    assert!(matches!(r, Err(UcsgConfigError::Invalid { .. })));
    let mut cfg = UcsgConfig::galaxy_s4();
    cfg.sampling_period_ns = 0;
    assert!(Ucsg::<u32>::new(
        cfg,
        0,
        Start {
            cluster: 0,
            online: 1
        }
    )
    .is_err());
}

#[derive(Clone, Debug)]
enum Ev {
    Fork(u8, Option<u8>, Option<u8>),
    Exit(u8),
    Touch,
    Front(u8),
    Display(bool),
    Sample(Vec<(u8, u16)>, bool, u8),
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        (
            any::<u8>(),
            proptest::option::of(any::<u8>()),
            proptest::option::of(0u8..4)
        )
            .prop_map(|(c, p, o)| Ev::Fork(c % 32, p.map(|p| p % 32), o)),
        (0u8..32).prop_map(Ev::Exit),
        Just(Ev::Touch),
        (0u8..4).prop_map(Ev::Front),
        any::<bool>().prop_map(Ev::Display),
        (
            proptest::collection::vec((0u8..32, 0u16..=200), 0..12),
            any::<bool>(),
            0u8..5
        )
            .prop_map(|(t, big, online)| Ev::Sample(t, big, online)),
    ]
}

proptest! {
    /// Whatever happens, every decision fits the machine: slots below the cores on, core counts
    /// within the cluster, frequencies that are levels of the cluster in use.
    #[test]
    fn decisions_always_fit_the_machine(evs in proptest::collection::vec(ev(), 0..60)) {
        let cfg = UcsgConfig::galaxy_s4();
        let mut u = s4(1);
        let (mut cluster, mut online) = (0usize, 1usize);
        let mut now = 0;
        for e in evs {
            let mut out = Vec::new();
            now += 50 * MS;
            match e {
                Ev::Fork(c, p, o) => u.thread_forked(
                    p.map(u32::from), u32::from(c), o.map(|a| if a == 0 { Owner::System } else { Owner::App(u32::from(a)) }), &mut out),
                Ev::Exit(t) => u.thread_exited(u32::from(t)),
                Ev::Touch => u.touch(now, &mut out),
                Ev::Front(a) => u.foreground(u32::from(a), &mut out),
                Ev::Display(on) => u.display(on, &mut out),
                Ev::Sample(ts, big, on) => {
                    // The substrate's word is the truth, even where it differs from what was asked.
                    cluster = usize::from(big);
                    online = usize::from(on).clamp(1, cfg.clusters[cluster].cores);
                    let khz = cfg.clusters[cluster].levels_khz[0];
                    let threads: Vec<_> = ts.iter().map(|&(t, ms)| use_of(u32::from(t), u64::from(ms))).collect();
                    u.sample(now, &SampleView { cluster, online, freq_khz: khz, threads: &threads }, &mut out);
                }
            }
            for d in out {
                match d {
                    Decision::Online { cores } => {
                        prop_assert!((1..=cfg.clusters[cluster].cores).contains(&cores));
                        online = cores;
                    }
                    Decision::Cluster { cluster: c } => {
                        prop_assert!(c < cfg.clusters.len() && c != cluster);
                        cluster = c;
                    }
                    Decision::Frequency { khz } => prop_assert!(cfg.clusters[cluster].levels_khz.contains(&khz)),
                    Decision::Place { slot, .. } => prop_assert!(slot < online, "slot {slot} of {online}"),
                    Decision::Nice { nice, .. } => prop_assert!([-20, -10, 10].contains(&nice)),
                }
            }
        }
    }
}
