use std::collections::BTreeMap;

use super::*;
use crate::ids::CpuId;
use crate::seam::{Action, CpuMask, Fact, SeamPolicy, ThreadRef, ThreadSample};

const MS: u64 = 1_000_000;

fn t(pid: i32, tid: i32) -> ThreadRef {
    ThreadRef {
        pid,
        tid,
        process_start_ticks: 7,
    }
}

/// The seed's Odroid: CPUs 0–3 LITTLE, 4–7 big.
fn odroid() -> CoreSets {
    CoreSets {
        fast: CpuMask(0xf0),
        slow: CpuMask(0x0f),
    }
}

#[test]
fn names_parse_and_read_back() {
    for n in STANDARD.into_iter().chain(["toggle-2s", "equalise-0.25s"]) {
        assert_eq!(Scheme::parse(n).unwrap().name(), n);
    }
    assert_eq!(
        Scheme::parse("toggle-250ms").unwrap(),
        Scheme::Toggle {
            period_ns: 250 * MS
        }
    );
    assert_eq!(
        Scheme::parse("equalise").unwrap().period_ns(),
        Some(DEFAULT_EQUALISE_PERIOD_NS)
    );
    for bad in [
        "",
        "toggle",
        "toggle-",
        "toggle-s",
        "toggle-.s",
        "toggle-0.001s",
        "toggle-61s",
        "toggle--1s",
        "toggle-1e3s",
        "toggle-0.0000000001s",
        "toggle-99999999999999999999s",
        "affinity-3",
        "Baseline",
    ] {
        let e = Scheme::parse(bad).unwrap_err();
        assert!(e.to_string().contains("controller scheme"), "{bad}: {e}");
    }
}

#[test]
fn periods_take_at_most_six_whole_digits_and_nanosecond_precision() {
    let p = parse_period_ns;
    // Each rule on its own: the range check of `Scheme::parse` would hide most of these.
    assert_eq!(p("123456s"), Some(123_456_000_000_000));
    assert_eq!(p("1234567s"), None, "seven whole digits");
    assert_eq!(p("12345678s"), None, "eight whole digits");
    assert_eq!(p("0.123456789s"), Some(123_456_789));
    assert_eq!(p("0.1234567891s"), None, "ten fractional digits");
    assert_eq!(p("0.12345678912s"), None, "eleven fractional digits");
    assert_eq!(p("+1s"), None, "a sign `u64::from_str` would take");
    assert_eq!(p("1.+5s"), None, "a sign in the fraction");
    assert_eq!(p("0.5xs"), None, "a letter in the fraction");
    assert_eq!(p("s"), None);
    assert_eq!(p(".s"), None);
    assert_eq!(p(".5s"), Some(500_000_000));
    assert_eq!(p("5.s"), Some(5_000_000_000));
    // In ms, digits past the nanosecond are taken only when they are zeros.
    assert_eq!(p("1.0000000ms"), Some(1_000_000));
    assert_eq!(p("0.000001ms"), Some(1));
    assert_eq!(p("0.0000001ms"), None);
    assert_eq!(p("250ms"), Some(250 * MS));
    assert_eq!(p("1m"), None);
}

#[test]
fn affinity_masks_follow_the_seed_layout() {
    let s = odroid();
    let one: Vec<u64> = (0..9).map(|k| affinity_one_mask(s, k).0).collect();
    assert_eq!(one, vec![1, 2, 4, 8, 16, 32, 64, 128, 1]);
    let two: Vec<u64> = (0..5).map(|k| affinity_two_mask(s, k).0).collect();
    assert_eq!(two, vec![0x11, 0x22, 0x44, 0x88, 0x11]);
    let only_fast = CoreSets {
        fast: CpuMask(0b11),
        slow: CpuMask(0),
    };
    assert_eq!(affinity_two_mask(only_fast, 1), CpuMask(0b10));
    let shares: Vec<usize> = (0..=10).map(|n| fast_share(s, n)).collect();
    assert_eq!(shares, vec![0, 1, 2, 3, 4, 4, 4, 4, 4, 5, 5]);
    assert_eq!(fast_share(only_fast, 3), 3);
    let this_machine = CoreSets {
        fast: CpuMask(0b01),
        slow: CpuMask(0b10),
    };
    assert_eq!(fast_share(this_machine, 4), 2);
}

/// A fluid model of a machine: threads of equal work on fast (speed 1) and slow (speed
/// `slow_speed`) CPUs, four of each, each set shared equally by the threads its masks put there.
/// A thread with no mask stays where it started (the first half of the threads slow, the rest
/// fast), as the seed saw Linux leave busy threads (§3.2). The program's main thread only waits.
/// Returns the completion time in ms and the masks asked.
fn run_fluid(scheme: Scheme, threads: usize, work_ms: u64, slow_speed: f64) -> (u64, u64) {
    let sets = odroid();
    let mut c = Controller::new(scheme, sets, 0);
    let main = t(100, 100);
    let mut out = Vec::new();
    c.on_fact(0, &Fact::Adopted { thread: main }, &mut out);
    for k in 0..threads {
        let child = t(100, 101 + k as i32);
        c.on_fact(
            0,
            &Fact::Forked {
                parent: main,
                child,
            },
            &mut out,
        );
    }
    let mut on_fast: Vec<bool> = (0..threads).map(|k| k >= threads / 2).collect();
    let total = work_ms as f64 * 1e6;
    let (mut work, mut cpu) = (vec![0f64; threads], vec![0f64; threads]);
    let (mut now, mut end, mut finished) = (0u64, 0u64, 0);
    while finished < threads {
        now += MS;
        let running = |fast: bool| {
            (0..threads)
                .filter(|&k| on_fast[k] == fast && work[k] < total)
                .count()
        };
        let (nf, ns) = (running(true), running(false));
        for k in 0..threads {
            if work[k] >= total {
                continue;
            }
            let (n, speed) = if on_fast[k] {
                (nf, 1.0)
            } else {
                (ns, slow_speed)
            };
            let share = (4.0 / n as f64).min(1.0);
            cpu[k] += share * MS as f64;
            work[k] += share * speed * MS as f64;
            if work[k] >= total {
                end = now;
                finished += 1;
            }
        }
        if c.next_deadline_ns().is_some_and(|d| d <= now) {
            out.clear();
            c.on_deadline(
                now,
                &mut |r| {
                    if r == main {
                        return Some(ThreadSample {
                            cpu_ns: 0,
                            work_ns: 0,
                            cpu: CpuId(0),
                        });
                    }
                    let k = (r.tid - 101) as usize;
                    (work[k] < total).then(|| ThreadSample {
                        cpu_ns: cpu[k] as u64,
                        work_ns: work[k] as u64,
                        cpu: CpuId(0),
                    })
                },
                &mut out,
            );
            for a in &out {
                if let Action::Affinity { thread, cpus } = *a {
                    assert!(cpus == sets.fast || cpus == sets.slow, "{a:?}");
                    assert_ne!(thread, main, "the waiting main thread is left alone");
                    on_fast[(thread.tid - 101) as usize] = cpus == sets.fast;
                }
            }
        }
    }
    (end / MS, c.stats().masks)
}

/// Against threads that stay where they started, toggling evens the threads out, and equalising
/// does at least as well and ends within one decision period of the ideal (all the work spread
/// over all eight CPUs) — the claim the module makes for it.
#[test]
fn toggling_beats_staying_put_and_equalising_beats_toggling() {
    // Big : LITTLE speed as the Exynos 5422's 2.0 GHz × 1024 against 1.4 GHz × 539.
    let slow = 1_400.0 * 539.0 / (2_000.0 * 1024.0);
    let (base, base_masks) = run_fluid(Scheme::Baseline, 8, 2_000, slow);
    let (tog, tog_masks) = run_fluid(
        Scheme::Toggle {
            period_ns: 250 * MS,
        },
        8,
        2_000,
        slow,
    );
    let (eq, eq_masks) = run_fluid(
        Scheme::Equalise {
            period_ns: 100 * MS,
        },
        8,
        2_000,
        slow,
    );
    assert_eq!(base_masks, 0, "the baseline only monitors");
    assert!(tog < base * 7 / 10, "toggle {tog} ms, baseline {base} ms");
    assert!(eq <= tog, "equalise {eq} ms, toggle {tog} ms");
    let ideal = (2_000.0 * 8.0 / (4.0 + 4.0 * slow)) as u64;
    assert!(eq < ideal + 100, "equalise {eq} ms, ideal {ideal} ms");
    assert!(tog_masks > 0 && eq_masks > 0);
}

fn sample_all(c: &mut Controller, now: u64, used: &BTreeMap<ThreadRef, u64>) -> Vec<Action> {
    let mut out = Vec::new();
    c.on_deadline(
        now,
        &mut |r| {
            used.get(&r).map(|&u| ThreadSample {
                cpu_ns: u,
                work_ns: u,
                cpu: CpuId(0),
            })
        },
        &mut out,
    );
    out
}

#[test]
fn a_waiting_main_thread_gets_no_slot_and_workers_toggle_by_slot() {
    let sets = CoreSets {
        fast: CpuMask(0b01),
        slow: CpuMask(0b10),
    };
    let mut c = Controller::new(
        Scheme::Toggle {
            period_ns: 100 * MS,
        },
        sets,
        10 * MS,
    );
    let main = t(50, 50);
    let mut out = Vec::new();
    c.on_fact(0, &Fact::Adopted { thread: main }, &mut out);
    assert_eq!(c.next_deadline_ns(), Some(10 * MS));
    let workers: Vec<_> = (1..=4).map(|k| t(50, 50 + k)).collect();
    for &w in &workers {
        c.on_fact(
            1,
            &Fact::Forked {
                parent: main,
                child: w,
            },
            &mut out,
        );
    }
    assert!(out.is_empty());
    // First sample: a baseline only.
    let mut used: BTreeMap<_, _> = std::iter::once((main, 3 * MS))
        .chain(workers.iter().map(|&w| (w, 0)))
        .collect();
    assert!(sample_all(&mut c, 10 * MS, &used).is_empty());
    // Each worker used half a CPU over the window; the main thread nothing.
    for w in &workers {
        *used.get_mut(w).unwrap() += 5 * MS;
    }
    let out = sample_all(&mut c, 20 * MS, &used);
    let masks: Vec<_> = out
        .iter()
        .map(|a| match *a {
            Action::Affinity { thread, cpus } => (thread.tid, cpus.0),
            _ => panic!("{a:?}"),
        })
        .collect();
    assert_eq!(masks, vec![(51, 1), (52, 2), (53, 1), (54, 2)]);
    assert!(c.managed().contains(&(main, None)));
    // Nothing changes until the period boundary (110 ms on the grid from the first sample).
    for now in (30..=100).step_by(10) {
        for w in &workers {
            *used.get_mut(w).unwrap() += 5 * MS;
        }
        assert!(sample_all(&mut c, now * MS, &used).is_empty(), "{now}");
    }
    for w in &workers {
        *used.get_mut(w).unwrap() += 5 * MS;
    }
    let out = sample_all(&mut c, 110 * MS, &used);
    assert_eq!(out.len(), 4, "every worker swaps: {out:?}");
    assert!(out.contains(&affinity(workers[0], CpuMask(2))));
    // A worker gone from /proc is forgotten; one that exits likewise.
    used.remove(&workers[3]);
    c.on_fact(
        111 * MS,
        &Fact::Exited { thread: workers[2] },
        &mut Vec::new(),
    );
    let _ = sample_all(&mut c, 120 * MS, &used);
    assert_eq!(c.stats().gone, 1);
    assert_eq!(c.managed().len(), 3);
}

#[test]
fn forks_of_unmanaged_tasks_are_ignored_and_children_of_managed_ones_followed() {
    let mut c = Controller::new(Scheme::AffinityOne, odroid(), 0);
    // It follows forks and exits, so the seam must give it the process facts; the daemon
    // reports it under this name.
    assert!(c.wants_process_facts());
    assert_eq!(c.name(), "controller");
    let mut out = Vec::new();
    c.on_fact(
        0,
        &Fact::Forked {
            parent: t(1, 1),
            child: t(2, 2),
        },
        &mut out,
    );
    assert_eq!(c.next_deadline_ns(), None, "nothing managed, no timer");
    c.on_fact(0, &Fact::Adopted { thread: t(10, 10) }, &mut out);
    // A child process of the managed one, and a thread of that child.
    c.on_fact(
        0,
        &Fact::Forked {
            parent: t(10, 10),
            child: t(11, 11),
        },
        &mut out,
    );
    c.on_fact(
        0,
        &Fact::Forked {
            parent: t(11, 11),
            child: t(11, 12),
        },
        &mut out,
    );
    assert_eq!(c.managed().len(), 3);
    // A thread adopted alone (not its process): what it forks is followed too.
    c.on_fact(0, &Fact::Adopted { thread: t(40, 41) }, &mut out);
    c.on_fact(
        0,
        &Fact::Forked {
            parent: t(40, 41),
            child: t(42, 42),
        },
        &mut out,
    );
    assert_eq!(c.managed().len(), 5);
    for th in [t(40, 41), t(42, 42)] {
        c.on_fact(1, &Fact::Exited { thread: th }, &mut out);
    }
    // When the last managed thread has gone there is no deadline.
    for th in [t(11, 12), t(11, 11), t(10, 10)] {
        c.on_fact(1, &Fact::Exited { thread: th }, &mut out);
    }
    assert_eq!(c.next_deadline_ns(), None);
    assert!(out.is_empty());
}

#[test]
fn a_late_substrate_skips_samples_instead_of_running_them_all() {
    let mut c = Controller::new(Scheme::Baseline, odroid(), 10 * MS);
    c.on_fact(0, &Fact::Adopted { thread: t(3, 3) }, &mut Vec::new());
    let used: BTreeMap<_, _> = std::iter::once((t(3, 3), 0)).collect();
    let _ = sample_all(&mut c, 95 * MS, &used);
    assert_eq!(c.next_deadline_ns(), Some(100 * MS));
    // Early call: nothing happens.
    let _ = sample_all(&mut c, 99 * MS, &used);
    assert_eq!(c.stats().samples, 1);
}

#[test]
fn slots_go_in_the_order_threads_were_first_seen_once_a_tenth_of_a_cpu_is_used() {
    let mut c = Controller::new(Scheme::AffinityOne, odroid(), 10 * MS);
    // Adopted in the order 9, 7, 8: not the order of their ids.
    let (a, b, d) = (t(5, 9), t(5, 7), t(5, 8));
    adopt(&mut c, &[a, b, d]);
    assert_eq!(c.stats().threads_seen, 3);
    let mut used: BTreeMap<_, _> = [(a, 0), (b, 0), (d, 0)].into_iter().collect();
    assert!(sample_all(&mut c, 10 * MS, &used).is_empty());
    // Over the 10 ms window: a and b used exactly a tenth of a CPU (active), d just under.
    *used.get_mut(&a).unwrap() += MS;
    *used.get_mut(&b).unwrap() += MS;
    *used.get_mut(&d).unwrap() += MS - 1;
    let out = sample_all(&mut c, 20 * MS, &used);
    // Slots by first sight, asked in slot order: a slot 0 (CPU 0), b slot 1 (CPU 1); d none.
    assert_eq!(
        out,
        vec![affinity(a, CpuMask(0b01)), affinity(b, CpuMask(0b10))]
    );
    assert!(c.managed().contains(&(d, None)));
}

#[test]
fn a_thread_started_in_a_managed_process_is_managed_whoever_reports_its_creation() {
    let mut c = Controller::new(Scheme::Baseline, odroid(), 0);
    let mut out = Vec::new();
    c.on_fact(0, &Fact::Adopted { thread: t(10, 10) }, &mut out);
    // A thread of process 10 whose creator the controller does not know.
    c.on_fact(
        0,
        &Fact::Forked {
            parent: t(99, 99),
            child: t(10, 15),
        },
        &mut out,
    );
    assert!(c.managed().iter().any(|&(th, _)| th == t(10, 15)));
    // Adopting a thread does not adopt its process: a sibling thread stays out.
    c.on_fact(0, &Fact::Adopted { thread: t(30, 31) }, &mut out);
    c.on_fact(
        0,
        &Fact::Forked {
            parent: t(98, 98),
            child: t(30, 32),
        },
        &mut out,
    );
    assert!(!c.managed().iter().any(|&(th, _)| th == t(30, 32)));
    assert_eq!(c.stats().threads_seen, 3);
    // Process 10's main thread exits: the process is no longer managed, so a thread reported
    // for it later is not followed.
    c.on_fact(1, &Fact::Exited { thread: t(10, 10) }, &mut out);
    c.on_fact(
        1,
        &Fact::Forked {
            parent: t(99, 99),
            child: t(10, 16),
        },
        &mut out,
    );
    assert!(!c.managed().iter().any(|&(th, _)| th == t(10, 16)));
    // The report's counters are the controller's own, by name.
    assert_eq!(
        c.counters(),
        vec![
            ("threads_seen", 3),
            ("slots", 0),
            ("samples", 0),
            ("gone", 0),
            ("decisions", 0),
            ("masks", 0),
        ]
    );
}

/// One fast CPU (0) and one slow (1).
fn one_fast_one_slow() -> CoreSets {
    CoreSets {
        fast: CpuMask(0b01),
        slow: CpuMask(0b10),
    }
}

/// The action that puts `thread` on `cpus`.
fn affinity(thread: ThreadRef, cpus: CpuMask) -> Action {
    Action::Affinity { thread, cpus }
}

/// A controller of `scheme` sampling every `sample_ns` on [`one_fast_one_slow`], with threads
/// `pid`/`tid` and `pid`/`tid + 1` adopted at 0.
fn two_threads(
    scheme: Scheme,
    sample_ns: u64,
    (pid, tid): (i32, i32),
) -> (Controller, CoreSets, ThreadRef, ThreadRef) {
    let sets = one_fast_one_slow();
    let mut c = Controller::new(scheme, sets, sample_ns);
    let (a, b) = (t(pid, tid), t(pid, tid + 1));
    adopt(&mut c, &[a, b]);
    (c, sets, a, b)
}

/// `threads` adopted at 0.
fn adopt(c: &mut Controller, threads: &[ThreadRef]) {
    for &thread in threads {
        c.on_fact(0, &Fact::Adopted { thread }, &mut Vec::new());
    }
}

/// One sample at `now` with each thread's CPU time and work as given.
fn sample_with(c: &mut Controller, now: u64, cpu_work: &[(ThreadRef, u64, u64)]) -> Vec<Action> {
    let mut out = Vec::new();
    c.on_deadline(
        now,
        &mut |r| {
            cpu_work
                .iter()
                .find(|&&(t, _, _)| t == r)
                .map(|&(_, cpu_ns, work_ns)| ThreadSample {
                    cpu_ns,
                    work_ns,
                    cpu: CpuId(0),
                })
        },
        &mut out,
    );
    out
}

#[test]
fn decisions_stay_on_the_grid_of_the_first_sample_when_the_substrate_is_late() {
    // Toggling every 100 ms, sensing every 50 ms: the grid is 50, 150, 250, … ms.
    let (mut c, sets, a, b) = two_threads(
        Scheme::Toggle {
            period_ns: 100 * MS,
        },
        50 * MS,
        (1, 1),
    );
    let busy = |now_ms: u64| [(a, now_ms * MS / 2, 0), (b, now_ms * MS / 2, 0)];
    assert!(sample_with(&mut c, 50 * MS, &busy(50)).is_empty());
    assert_eq!(c.stats().decisions, 1);
    // Slots at 100 ms (epoch 0 of the grid from 50 ms): a fast, b slow.
    let out = sample_with(&mut c, 100 * MS, &busy(100));
    assert_eq!(out, vec![affinity(a, sets.fast), affinity(b, sets.slow)]);
    assert_eq!(c.stats().slots, 2);
    // The substrate wakes late, at 170 ms: epoch (170 − 50) / 100 = 1, they swap, and the
    // next decision is at 250 ms, not 270.
    let out = sample_with(&mut c, 170 * MS, &busy(170));
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(out.contains(&affinity(a, sets.slow)));
    assert_eq!(c.stats().decisions, 2);
    assert!(sample_with(&mut c, 200 * MS, &busy(200)).is_empty());
    let out = sample_with(&mut c, 250 * MS, &busy(250));
    assert!(out.contains(&affinity(a, sets.fast)));
    assert_eq!(c.stats().decisions, 3);
}

#[test]
fn affinity_schemes_decide_nothing_on_a_period_and_two_gives_a_pair() {
    let mut c = Controller::new(Scheme::AffinityTwo, odroid(), 10 * MS);
    let a = t(4, 4);
    c.on_fact(0, &Fact::Adopted { thread: a }, &mut Vec::new());
    assert!(sample_with(&mut c, 10 * MS, &[(a, 0, 0)]).is_empty());
    let out = sample_with(&mut c, 20 * MS, &[(a, 5 * MS, 0)]);
    // Slot 0 under affinity-2 on the Odroid: LITTLE CPU 0 and big CPU 4.
    assert_eq!(out, vec![affinity(a, CpuMask(0x11))]);
    assert_eq!(c.stats().decisions, 0);
}

#[test]
fn equalising_keeps_a_fast_thread_there_until_it_leads_by_the_margin() {
    let (mut c, sets, a, b) = two_threads(
        Scheme::Equalise {
            period_ns: 100 * MS,
        },
        10 * MS,
        (2, 2),
    );
    assert!(sample_with(&mut c, 10 * MS, &[(a, 0, 0), (b, 0, 0)]).is_empty());
    // Equal work: slot order, a fast.
    let out = sample_with(&mut c, 20 * MS, &[(a, 5 * MS, 0), (b, 5 * MS, 0)]);
    assert!(out.contains(&affinity(a, sets.fast)));
    // At the decision (110 ms): a did 10 ms of work, b 7 ms. a leads by less than the 5 ms
    // margin, so it stays where it is.
    for now in (30..110).step_by(10) {
        let _ = sample_with(
            &mut c,
            now * MS,
            &[(a, now * MS / 2, 0), (b, now * MS / 2, 0)],
        );
    }
    let lead_3ms = [(a, 55 * MS, 10 * MS), (b, 55 * MS, 7 * MS)];
    assert!(sample_with(&mut c, 110 * MS, &lead_3ms).is_empty());
    // At 210 ms a leads by 6 ms: b takes the fast CPU.
    for now in (120..210).step_by(10) {
        let _ = sample_with(
            &mut c,
            now * MS,
            &[(a, now * MS / 2, 10 * MS), (b, now * MS / 2, 7 * MS)],
        );
    }
    let lead_6ms = [(a, 105 * MS, 20 * MS), (b, 105 * MS, 14 * MS)];
    let out = sample_with(&mut c, 210 * MS, &lead_6ms);
    assert_eq!(out, vec![affinity(b, sets.fast), affinity(a, sets.slow)]);
}
