//! lull-scx loaded into a real kernel (the lab guest, `lull lab vm --tests`): an interactive
//! thread whose every wake-up follows an "input" (its record in the facts map bumped, as lulld's
//! feed does) against CPU hogs, in alternating rounds under the kernel's own scheduler (EEVDF)
//! and under lull-scx in the same boot; the hogs all get CPU under lull-scx (fair service, the watchdog
//! never fires); lull-scx unloads cleanly and the kernel is back on its own scheduler. And the
//! typed errors: a second load while one is loaded, and a load without root.
//!
//! Timings are compared only as a generous ratio within the run (TCG's times are not real
//! hardware's). `#[ignore]`d on the host; they fail loudly outside the guest.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use lull_model::stats::nearest_rank;
use lull_os::bpf::sched_ext::{self, SchedExtState};
use lull_os::bpf::scx_facts::{FactRecord, FactsMap, FACTS_PIN_PATH};
use lull_os::bpf::syscall::Map;
use lull_os::sys;
use lull_scx::placement::PLACE_PIN_PATH;

const BIN: &str = env!("CARGO_BIN_EXE_lull-scx");
/// Hogs: more than the guest's 2 CPUs, so the interactive thread always competes.
const HOGS: usize = 4;
/// Interactive wake-ups per round, each after a sleep of `PERIOD`.
const WAKES: usize = 200;
/// Rounds per scheduler, alternating EEVDF and lull-scx in one boot (see
/// [`boosted_wakeups_against_eevdf_and_every_hog_runs`] for why).
const ROUNDS: usize = 7;
const PERIOD: Duration = Duration::from_millis(5);
/// Bound on waits for the kernel's state (a hang guard, not a synchronisation).
const HANG_GUARD: Duration = Duration::from_secs(30);
/// Where the test's lull-scx writes its counts: a file in a private directory made once per
/// test process (it runs as root; no predictable name in the shared temporary directory). The
/// directory lives as long as the process, inside a lab guest that is thrown away after.
fn stats() -> &'static Path {
    static DIR: OnceLock<lull_os::fileout::ScratchDir> = OnceLock::new();
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        DIR.get_or_init(|| lull_os::fileout::ScratchDir::new("lull-scx-test").unwrap())
            .path()
            .join("stats.json")
    })
}

fn state() -> SchedExtState {
    sched_ext::state().expect("sched_ext state")
}

fn wait_disabled() {
    let start = Instant::now();
    while state() != SchedExtState::Disabled {
        assert!(
            start.elapsed() < HANG_GUARD,
            "sched_ext still {:?}",
            state()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Starts lull-scx and returns once it says it is loaded (it prints that only after the kernel
/// reported sched_ext enabled).
fn load() -> Child {
    load_with(&[])
}

fn load_with(args: &[&str]) -> Child {
    let mut child = Command::new(BIN)
        .args(args)
        .arg("--stats-json")
        .arg(stats())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn lull-scx");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if line.contains("lull-scx: loaded") {
            // Keep draining its stderr so it never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            assert_eq!(state(), SchedExtState::Enabled);
            assert_eq!(sched_ext::root_ops().unwrap().as_deref(), Some("lull"));
            return child;
        }
        seen.push(line);
    }
    let status = child.wait().unwrap();
    panic!("lull-scx ended ({status}) without loading: {seen:?}");
}

fn unload(mut child: Child) {
    sys::signal_process(child.id(), sys::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "lull-scx exited with {status}");
    wait_disabled();
    assert_eq!(sched_ext::root_ops().unwrap(), None);
    assert!(
        !Path::new(FACTS_PIN_PATH).exists(),
        "the facts map stays pinned"
    );
    assert!(
        !Path::new(PLACE_PIN_PATH).exists(),
        "the placement map stays pinned"
    );
}

/// What one run measured.
struct Run {
    /// The interactive thread's wake-up delays (sleep end → running), ns, sorted.
    delays_ns: Vec<u64>,
    /// Its run-queue waits per wake-up (the kernel's own account, `schedstat`'s run_delay:
    /// woken → on a CPU), ns, sorted.
    waits_ns: Vec<u64>,
    /// Each hog's loop count.
    hog_loops: Vec<u64>,
}

fn p99(sorted: &[u64]) -> u64 {
    nearest_rank(sorted, 99).expect("a round has samples")
}

/// The median of the rounds' p99s of `what` (rounds are odd in number).
fn median_p99(rounds: &[Run], what: fn(&Run) -> &[u64]) -> u64 {
    let mut p99s: Vec<u64> = rounds.iter().map(|r| p99(what(r))).collect();
    p99s.sort_unstable();
    nearest_rank(&p99s, 50).expect("at least one round")
}

fn delays(r: &Run) -> &[u64] {
    &r.delays_ns
}

fn waits(r: &Run) -> &[u64] {
    &r.waits_ns
}

/// This thread's time spent runnable but waiting for a CPU so far (the second field of
/// `/proc/thread-self/schedstat`), ns.
fn run_delay_ns() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    s.split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .unwrap_or_else(|| panic!("schedstat {s:?}"))
}

/// Hogs plus the interactive thread; with `facts`, each of the thread's wake-ups is announced as
/// an input in lull-scx's facts map, as lulld's feed does for an app's event thread.
fn workload(facts: bool) -> Run {
    let stop = Arc::new(AtomicBool::new(false));
    let hogs: Vec<_> = (0..HOGS)
        .map(|_| {
            let (stop, loops) = (Arc::clone(&stop), Arc::new(AtomicU64::new(0)));
            let l = Arc::clone(&loops);
            let h = std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n = std::hint::black_box(n + 1);
                    if n % 4096 == 0 {
                        l.store(n, Ordering::Relaxed);
                    }
                }
            });
            (h, loops)
        })
        .collect();
    let mut map = FactsMap::new(Path::new(FACTS_PIN_PATH));
    let tid = u32::try_from(sys::gettid()).unwrap();
    let mut delays = Vec::with_capacity(WAKES);
    let mut waits = Vec::with_capacity(WAKES);
    for seq in 1..=WAKES as u32 {
        if facts {
            map.write(
                tid,
                FactRecord {
                    class: 1,
                    input_seq: seq,
                    input_ns: sys::monotonic_ns(),
                },
            );
        }
        let waited = run_delay_ns();
        let due = sys::monotonic_ns() + PERIOD.as_nanos() as u64;
        std::thread::sleep(PERIOD);
        delays.push(sys::monotonic_ns().saturating_sub(due));
        waits.push(run_delay_ns() - waited);
    }
    stop.store(true, Ordering::Relaxed);
    let hog_loops = hogs
        .into_iter()
        .map(|(h, l)| {
            h.join().unwrap();
            l.load(Ordering::Relaxed)
        })
        .collect();
    if facts {
        assert_eq!(map.counters().written, WAKES as u64, "{:?}", map.counters());
        map.remove(tid);
    }
    delays.sort_unstable();
    waits.sort_unstable();
    Run {
        delays_ns: delays,
        waits_ns: waits,
        hog_loops,
    }
}

/// One round under lull-scx: load, the workload with its inputs announced, unload; the BPF
/// side's counts show the facts were read and the wake-ups boosted.
fn lull_round() -> Run {
    let child = load();
    let run = workload(true);
    unload(child);
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(stats()).unwrap()).unwrap();
    eprintln!("lull-scx round: {stats}");
    assert!(stats["facts_seen"].as_u64().unwrap() > 0, "{stats}");
    assert!(
        stats["boosted"].as_u64().unwrap() >= (WAKES / 2) as u64,
        "{stats}"
    );
    run
}

/// The boosted thread's p99 run-queue wait under lull-scx is no worse than 1.5 × EEVDF's, and
/// every hog runs; its p99 wake-up delay by the clock is printed beside it.
///
/// Why rounds: the p99 of one round's 200 wake-ups is its 3rd-largest delay, and under TCG a
/// couple of stalls of the host (QEMU's vCPU threads share the host's CPUs with everything
/// else) decide it; one EEVDF round against one lull-scx round flipped either way from run to
/// run. So the two schedulers alternate, [`ROUNDS`] rounds each in one boot (the order swapped
/// every round, so a slow stretch of the host falls on both), and each check compares the
/// median of the schedulers' per-round p99s: a few bad rounds on either side no longer decide it.
///
/// Why two measures: the wake-up delay (the sleep's end → the thread running, by the clock) is
/// the timer's lateness plus the run-queue wait, and under TCG on a busy host the timer's part
/// (the host not running the vCPU) is most of it and is the same under any scheduler. The
/// run-queue wait (the kernel's own account, `schedstat`'s run_delay: woken → on a CPU) is the
/// scheduler's part alone, and is what the boost acts on, so it is the one checked: a ratio
/// between schedulers measured in the same guest run. The clock's delay is not asserted: on a
/// host loaded by other work its median ratio still went either way (0.10–2.95 in six runs of
/// this test) while the run-queue wait's stayed at 0.003–0.32; docs/scx.md has the figures.
#[test]
#[ignore = "needs the lab guest: sched_ext, BTF and root (lull lab vm --tests)"]
fn boosted_wakeups_against_eevdf_and_every_hog_runs() {
    lull_testkit::require_guest();
    assert_eq!(state(), SchedExtState::Disabled);
    let (mut eevdf, mut lull) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            eevdf.push(workload(false));
            lull.push(lull_round());
        } else {
            lull.push(lull_round());
            eevdf.push(workload(false));
        }
    }
    let us = |rounds: &[Run], what: fn(&Run) -> &[u64]| -> Vec<u64> {
        rounds.iter().map(|r| p99(what(r)) / 1_000).collect()
    };
    let (ed, ld) = (median_p99(&eevdf, delays), median_p99(&lull, delays));
    let (ew, lw) = (median_p99(&eevdf, waits), median_p99(&lull, waits));
    let summary = format!(
        "p99 per round, µs: wake-up delay eevdf {:?} lull-scx {:?} (medians {} / {}, ratio \
         {:.3}); run-queue wait eevdf {:?} lull-scx {:?} (medians {} / {}, ratio {:.3})",
        us(&eevdf, delays),
        us(&lull, delays),
        ed / 1_000,
        ld / 1_000,
        ld as f64 / ed as f64,
        us(&eevdf, waits),
        us(&lull, waits),
        ew / 1_000,
        lw / 1_000,
        lw as f64 / ew.max(1) as f64,
    );
    eprintln!(
        "{summary}; hogs eevdf {:?}, lull-scx {:?}",
        eevdf.iter().map(|r| &r.hog_loops).collect::<Vec<_>>(),
        lull.iter().map(|r| &r.hog_loops).collect::<Vec<_>>(),
    );
    // Generous: the boosted thread's median p99 run-queue wait is no worse than 1.5 × EEVDF's in
    // the same boot (the clock's delay, `ld` against `ed`, is in the summary only; see above).
    assert!(lw * 2 <= ew * 3, "run-queue wait: {summary}");
    // Fair service: in every round every hog ran, none with less than a quarter of the mean.
    for run in &lull {
        let mean = run.hog_loops.iter().sum::<u64>() / HOGS as u64;
        for (i, &n) in run.hog_loops.iter().enumerate() {
            assert!(n > 0 && n * 4 >= mean, "hog {i}: {n} loops, mean {mean}");
        }
    }
}

#[test]
#[ignore = "needs the lab guest: sched_ext, BTF and root (lull lab vm --tests)"]
fn a_second_load_and_a_load_without_root_are_refused_clearly() {
    lull_testkit::require_guest();
    let child = load();
    let second = Command::new(BIN).output().unwrap();
    let msg = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{msg}");
    assert!(
        msg.contains("another sched_ext scheduler (lull) is loaded"),
        "{msg}"
    );
    unload(child);
    let nobody = Command::new("su")
        .args(["nobody", "-s", "/bin/sh", "-c", BIN])
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&nobody.stderr);
    assert_eq!(nobody.status.code(), Some(1), "{msg}");
    assert!(msg.contains("needs root"), "{msg}");
    assert_eq!(state(), SchedExtState::Disabled);
}

/// Background hogs (each a process of its own: an app of its own to UCSG) for UCSG's test.
const UCSG_HOGS: usize = 2;
/// Samples of where each thread is, one every `UCSG_SAMPLE_EVERY` (pacing, not synchronisation).
const UCSG_SAMPLES: usize = 600;
const UCSG_SAMPLE_EVERY: Duration = Duration::from_millis(5);

/// The CPU a task last ran on, or whose run queue it waits in (`/proc/TID/stat`, field 39).
fn cpu_of(tid: u32) -> usize {
    let s = std::fs::read_to_string(format!("/proc/{tid}/stat")).expect("stat");
    // The command name (field 2) may hold spaces; count from after its closing parenthesis.
    let rest = &s[s.rfind(')').expect("stat's comm") + 2..];
    rest.split_whitespace()
        .nth(39 - 3)
        .and_then(|f| f.parse().ok())
        .unwrap_or_else(|| panic!("stat {s:?}"))
}

/// Where UCSG placed `tid`, from lull-scx's pinned placement map.
fn placed(map: &Map, tid: u32) -> Option<usize> {
    let v = map.lookup(&tid.to_ne_bytes()).ok()?;
    Some(u32::from_ne_bytes(v.try_into().ok()?) as usize)
}

/// What the UCSG workload saw: per sample, the front thread's CPU and each hog's.
struct Where {
    front: Vec<usize>,
    hogs: Vec<Vec<usize>>,
    /// Samples at which the front thread was on the CPU UCSG placed it on (lull-scx only).
    front_on_placed: usize,
    /// Per hog, samples at which it was on the CPU UCSG placed it on (lull-scx only).
    hogs_on_placed: Vec<usize>,
}

impl Where {
    /// The CPU the front thread was seen on most.
    fn front_cpu(&self) -> usize {
        let mut n = [0usize; 64];
        for &c in &self.front {
            n[c.min(63)] += 1;
        }
        (0..64).max_by_key(|&c| n[c]).unwrap()
    }

    /// Samples at which some hog was on the front thread's most-used CPU.
    fn hogs_on_front_cpu(&self) -> usize {
        let f = self.front_cpu();
        (0..self.front.len())
            .filter(|&i| self.hogs.iter().any(|h| h[i] == f))
            .count()
    }
}

/// A busy front thread (an app in front working, UCSG's medium) and [`UCSG_HOGS`] busy
/// processes behind (low); with `facts`, lull-scx is told of them as lulld tells it, and the
/// sampling starts once UCSG has placed all three.
fn ucsg_workload(facts: bool) -> Where {
    let hogs: Vec<Child> = (0..UCSG_HOGS)
        .map(|_| {
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("spawn a hog")
        })
        .collect();
    let hog_pids: Vec<u32> = hogs.iter().map(Child::id).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let front_tid = Arc::new(AtomicU64::new(0));
    let front = {
        let (stop, tid) = (Arc::clone(&stop), Arc::clone(&front_tid));
        std::thread::spawn(move || {
            tid.store(sys::gettid() as u64, Ordering::Release);
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n = std::hint::black_box(n + 1);
            }
        })
    };
    let start = Instant::now();
    while front_tid.load(Ordering::Acquire) == 0 {
        assert!(start.elapsed() < HANG_GUARD, "the front thread never ran");
        std::thread::yield_now();
    }
    let ftid = front_tid.load(Ordering::Acquire) as u32;
    let mut map = FactsMap::new(Path::new(FACTS_PIN_PATH));
    let place = if facts {
        let rec = |class| FactRecord {
            class,
            input_seq: 0,
            input_ns: 0,
        };
        map.write(ftid, rec(1));
        for &p in &hog_pids {
            map.write(p, rec(3));
        }
        assert_eq!(map.counters().written, 1 + UCSG_HOGS as u64);
        let place = Map::open_pinned(Path::new(PLACE_PIN_PATH)).expect("placement map");
        // Wait (a hang guard bounds it) until UCSG has placed every thread.
        let start = Instant::now();
        while std::iter::once(ftid)
            .chain(hog_pids.iter().copied())
            .any(|t| placed(&place, t).is_none())
        {
            assert!(
                start.elapsed() < HANG_GUARD,
                "UCSG never placed the threads"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(place)
    } else {
        None
    };
    let mut w = Where {
        front: Vec::new(),
        hogs: vec![Vec::new(); UCSG_HOGS],
        front_on_placed: 0,
        hogs_on_placed: vec![0; UCSG_HOGS],
    };
    let cpu_ns = |t: u32| -> u64 {
        std::fs::read_to_string(format!("/proc/{t}/schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    let t0 = sys::monotonic_ns();
    let before: Vec<u64> = std::iter::once(ftid)
        .chain(hog_pids.iter().copied())
        .map(cpu_ns)
        .collect();
    for _ in 0..UCSG_SAMPLES {
        let f = cpu_of(ftid);
        w.front.push(f);
        for (i, &p) in hog_pids.iter().enumerate() {
            let c = cpu_of(p);
            w.hogs[i].push(c);
            if place.as_ref().and_then(|m| placed(m, p)) == Some(c) {
                w.hogs_on_placed[i] += 1;
            }
        }
        if place.as_ref().and_then(|m| placed(m, ftid)) == Some(f) {
            w.front_on_placed += 1;
        }
        std::thread::sleep(UCSG_SAMPLE_EVERY);
    }
    let after: Vec<u64> = std::iter::once(ftid)
        .chain(hog_pids.iter().copied())
        .map(cpu_ns)
        .collect();
    eprintln!(
        "over {} ms: CPU ms front, hogs {:?}",
        (sys::monotonic_ns() - t0) / 1_000_000,
        before
            .iter()
            .zip(&after)
            .map(|(b, a)| (a - b) / 1_000_000)
            .collect::<Vec<_>>()
    );
    stop.store(true, Ordering::Relaxed);
    front.join().unwrap();
    for mut h in hogs {
        h.kill().unwrap();
        h.wait().unwrap();
    }
    if facts {
        map.remove(ftid);
        for &p in &hog_pids {
            map.remove(p);
        }
    }
    w
}

/// UCSG's core allocation (seed 001 §3.2.2) enforced by lull-scx on the guest's two equal CPUs
/// (one cluster): a busy thread of the app in front (medium) and two busy apps behind (low),
/// each task sampled [`UCSG_SAMPLES`] times where the kernel says it is; every one is on the
/// CPU UCSG's placement map names in at least 95 % of the samples (counts, not timings). Under
/// EEVDF in the same boot the same tasks are spread by load alone (printed for contrast).
///
/// Whether UCSG gives the front thread a CPU of its own (figure 2(b), shown by the unit test
/// `the_front_thread_gets_a_cpu_of_its_own_and_the_background_is_kept_off_it`) depends on its
/// DPM keeping two cores on; in the lab guest it kept one (docs/scx.md), so that is printed,
/// not asserted.
#[test]
#[ignore = "needs the lab guest: sched_ext, BTF and root (lull lab vm --tests)"]
fn ucsg_placement_holds_every_managed_task_to_its_cpu() {
    lull_testkit::require_guest();
    assert_eq!(state(), SchedExtState::Disabled);
    let eevdf = ucsg_workload(false);
    let child = load_with(&["--ucsg"]);
    let lull = ucsg_workload(true);
    unload(child);
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(stats()).unwrap()).unwrap();
    let n = UCSG_SAMPLES;
    let summary = format!(
        "of {n} samples: on the placed CPU: front {}, hogs {:?}; a hog on the front thread's \
         CPU: lull-scx {}, EEVDF {}; lull-scx: {stats}",
        lull.front_on_placed,
        lull.hogs_on_placed,
        lull.hogs_on_front_cpu(),
        eevdf.hogs_on_front_cpu(),
    );
    eprintln!("{summary}");
    assert_eq!(stats["cpu_sets"], "0,1", "{summary}");
    assert!(stats["ucsg"]["samples"].as_u64().unwrap() > 0, "{summary}");
    assert!(stats["ucsg"]["threads"].as_u64().unwrap() >= 3, "{summary}");
    assert!(stats["placed"].as_u64().unwrap() > 0, "{summary}");
    // A migration at a sampling period, or a sample racing one, accounts for a few misses.
    assert!(lull.front_on_placed * 100 >= n * 95, "{summary}");
    for &h in &lull.hogs_on_placed {
        assert!(h * 100 >= n * 95, "{summary}");
    }
}
