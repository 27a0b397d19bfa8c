//! lull-scx loaded into a real kernel (the lab guest, `lull lab vm --tests`): an interactive
//! thread whose every wake-up follows an "input" (its record in the facts map bumped, as lulld's
//! feed does) against CPU hogs, first under the kernel's own scheduler (EEVDF) and then under
//! lull-scx in the same boot; the hogs all get CPU under lull-scx (fair service, the watchdog
//! never fires); lull-scx unloads cleanly and the kernel is back on its own scheduler. And the
//! typed errors: a second load while one is loaded, and a load without root.
//!
//! Timings are compared only as a generous ratio within the run (TCG's times are not real
//! hardware's). `#[ignore]`d on the host; they fail loudly outside the guest.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lull_os::bpf::sched_ext::{self, SchedExtState};
use lull_os::bpf::scx_facts::{FactRecord, FactsMap, FACTS_PIN_PATH};
use lull_os::sys;

const BIN: &str = env!("CARGO_BIN_EXE_lull-scx");
/// Hogs: more than the guest's 2 CPUs, so the interactive thread always competes.
const HOGS: usize = 4;
/// Interactive wake-ups per run, each after a sleep of `PERIOD`.
const WAKES: usize = 200;
const PERIOD: Duration = Duration::from_millis(5);
/// Bound on waits for the kernel's state (a hang guard, not a synchronisation).
const HANG_GUARD: Duration = Duration::from_secs(30);
/// Where the test's lull-scx writes its counts.
const STATS: &str = "/tmp/lull-scx-test-stats.json";

fn require_guest() {
    assert!(
        std::env::var_os("LULL_GUEST").is_some(),
        "this test runs only in the lab guest (LULL_GUEST is unset here): run it with \
         `lull lab vm --tests`, not `cargo test -- --ignored` on the host"
    );
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
    let mut child = Command::new(BIN)
        .arg("--stats-json")
        .arg(STATS)
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
    sys::signal_process(child.id(), libc::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "lull-scx exited with {status}");
    wait_disabled();
    assert_eq!(sched_ext::root_ops().unwrap(), None);
    assert!(
        !Path::new(FACTS_PIN_PATH).exists(),
        "the facts map stays pinned"
    );
}

/// What one run measured.
struct Run {
    /// The interactive thread's wake-up delays (sleep end → running), ns, sorted.
    delays_ns: Vec<u64>,
    /// Each hog's loop count.
    hog_loops: Vec<u64>,
}

impl Run {
    fn p99(&self) -> u64 {
        self.delays_ns[(self.delays_ns.len() * 99).div_ceil(100) - 1]
    }
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
        let due = sys::monotonic_ns() + PERIOD.as_nanos() as u64;
        std::thread::sleep(PERIOD);
        delays.push(sys::monotonic_ns().saturating_sub(due));
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
    Run {
        delays_ns: delays,
        hog_loops,
    }
}

#[test]
#[ignore = "needs the lab guest: sched_ext, BTF and root (lull lab vm --tests)"]
fn boosted_wakeups_beat_eevdf_and_every_hog_runs() {
    require_guest();
    assert_eq!(state(), SchedExtState::Disabled);
    let eevdf = workload(false);
    let child = load();
    let lull = workload(true);
    unload(child);
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(STATS).unwrap()).unwrap();
    eprintln!(
        "p99 wake-up delay: eevdf {} µs, lull-scx {} µs; hogs eevdf {:?}, lull-scx {:?}; {stats}",
        eevdf.p99() / 1_000,
        lull.p99() / 1_000,
        eevdf.hog_loops,
        lull.hog_loops
    );
    // The facts were read and the wake-ups boosted.
    assert!(stats["facts_seen"].as_u64().unwrap() > 0, "{stats}");
    assert!(
        stats["boosted"].as_u64().unwrap() >= (WAKES / 2) as u64,
        "{stats}"
    );
    // Generous: the boosted thread's p99 is no worse than 1.5 × EEVDF's in the same boot.
    assert!(
        lull.p99() * 2 <= eevdf.p99() * 3,
        "lull-scx p99 {} ns vs EEVDF {} ns",
        lull.p99(),
        eevdf.p99()
    );
    // Fair service: every hog ran, and none got less than a quarter of the hogs' mean.
    let mean = lull.hog_loops.iter().sum::<u64>() / HOGS as u64;
    for (i, &l) in lull.hog_loops.iter().enumerate() {
        assert!(l > 0 && l * 4 >= mean, "hog {i}: {l} loops, mean {mean}");
    }
}

#[test]
#[ignore = "needs the lab guest: sched_ext, BTF and root (lull lab vm --tests)"]
fn a_second_load_and_a_load_without_root_are_refused_clearly() {
    require_guest();
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
