//! The actuator on live threads of this test process, each result read back from the kernel.
//! Tests that need what this machine lacks (root, a freezer, the cpu controller in cgroup v2, a
//! kernel with custom slices) print `SKIPPED: reason`.

use super::*;
use crate::freezer::FreezerKind;
use crate::test_support::{self, serial_adoption, subdirs, thread_cgroups, Sleeper};
use lull_sched::seam::{ActionKind, CpuMask};
use lull_sched::CpuId;

fn pid() -> i32 {
    std::process::id() as i32
}

/// Thread `tid` of this process, named as the daemon names a declared thread.
fn ours(tid: i32) -> ThreadRef {
    ThreadRef {
        pid: pid(),
        tid,
        process_start_ticks: procfs::process_start_ticks(pid()).unwrap(),
    }
}

fn without_freezer() -> Actuator {
    Actuator::new(Err("none in this test".into()))
}

/// Pins `thread` to `cpu` alone through `a`, which must apply it.
fn pin(a: &mut Actuator, thread: ThreadRef, cpu: CpuId) {
    let cpus = CpuMask::of(&[cpu]);
    assert_eq!(
        a.apply(&Action::Affinity { thread, cpus }),
        Outcome::Applied
    );
}

/// Root, or `None` after printing why the test cannot run.
fn root(test: &str) -> Option<()> {
    if sys::geteuid() == 0 {
        Some(())
    } else {
        lull_testkit::skip(format!(
            "{test} restores a lowered nice value, which needs root"
        ));
        None
    }
}

fn nice_of(tid: i32) -> i32 {
    procfs::thread_nice(pid(), tid).unwrap()
}

#[test]
fn nice_is_set_on_one_thread_and_released() {
    let _serial = serial_adoption();
    if root("nice").is_none() {
        return;
    }
    let (t, other) = (Sleeper::start(), Sleeper::start());
    let (before, other_before) = (nice_of(t.tid), nice_of(other.tid));
    let target = if before == 7 { 6 } else { 7 };
    let mut a = without_freezer();
    let thread = ours(t.tid);
    assert_eq!(
        a.apply(&Action::Nice {
            thread,
            nice: target
        }),
        Outcome::Applied
    );
    assert_eq!(nice_of(t.tid), i32::from(target));
    assert_eq!(nice_of(other.tid), other_before, "only that thread");
    // Levels: asked again, it stays.
    assert_eq!(
        a.apply(&Action::Nice {
            thread,
            nice: target
        }),
        Outcome::Applied
    );
    assert!(a.holds(thread));
    assert_eq!(a.apply(&Action::Release { thread }), Outcome::Applied);
    assert_eq!(nice_of(t.tid), before);
    assert!(!a.holds(thread));
    let r = a.report();
    assert_eq!((r.nice.applied, r.release.applied), (2, 1));
    assert_eq!(r.nice.refused_total() + r.release.refused_total(), 0);
}

/// `major.minor` of the running kernel.
fn kernel_version() -> (u32, u32) {
    let text = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut parts = text.trim().split(['.', '-']);
    let mut next = || parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    (next(), next())
}

#[test]
fn slice_is_set_keeping_policy_and_nice_and_released() {
    let _serial = serial_adoption();
    if root("slice").is_none() {
        return;
    }
    if kernel_version() < (6, 12) {
        lull_testkit::skip(format!(
            "custom slices for fair threads need Linux 6.12 (this is {:?})",
            kernel_version()
        ));
        return;
    }
    let t = Sleeper::start();
    let before = sys::sched_getattr(t.tid).unwrap();
    let thread = ours(t.tid);
    let mut a = without_freezer();
    let nice = if before.nice == 3 { 4 } else { 3 };
    assert_eq!(a.apply(&Action::Nice { thread, nice }), Outcome::Applied);
    let slice_ns = if before.runtime_ns == 3_000_000 {
        4_000_000
    } else {
        3_000_000
    };
    assert_eq!(
        a.apply(&Action::Slice { thread, slice_ns }),
        Outcome::Applied
    );
    let now = sys::sched_getattr(t.tid).unwrap();
    assert_eq!(now.runtime_ns, slice_ns);
    assert_eq!((now.policy, now.nice), (before.policy, i32::from(nice)));
    // Beyond the kernel's range: clamped, and read back as such.
    assert_eq!(
        a.apply(&Action::Slice {
            thread,
            slice_ns: 1
        }),
        Outcome::Applied
    );
    assert_eq!(sys::sched_getattr(t.tid).unwrap().runtime_ns, SLICE_MIN_NS);
    assert_eq!(a.apply(&Action::Release { thread }), Outcome::Applied);
    let after = sys::sched_getattr(t.tid).unwrap();
    assert_eq!(
        (after.policy, after.nice, after.runtime_ns),
        (before.policy, before.nice, before.runtime_ns)
    );
    assert_eq!(a.report().slice.applied, 2);
    assert_eq!(a.report().slice.unavailable_reason, None);
}

#[test]
fn affinity_is_set_on_one_thread_and_released() {
    let _serial = serial_adoption();
    let (t, other) = (Sleeper::start(), Sleeper::start());
    let before = sys::sched_getaffinity(t.tid).unwrap();
    let other_before = sys::sched_getaffinity(other.tid).unwrap();
    let last = before.cpus().last().unwrap();
    if last >= 64 {
        lull_testkit::skip("this thread may run only on CPUs beyond 63, which CpuMask cannot name");
        return;
    }
    let thread = ours(t.tid);
    let mut a = without_freezer();
    pin(&mut a, thread, CpuId(last));
    let now = sys::sched_getaffinity(t.tid).unwrap();
    assert_eq!(now.cpus().collect::<Vec<_>>(), [last]);
    assert_eq!(sys::sched_getaffinity(other.tid).unwrap(), other_before);
    // No CPU the kernel would run it on: its refusal, counted by name.
    let none = CpuMask(0);
    assert_eq!(
        a.apply(&Action::Affinity { thread, cpus: none }),
        Outcome::Refused(Refusal::Errno(Errno::EINVAL))
    );
    assert_eq!(a.apply(&Action::Release { thread }), Outcome::Applied);
    assert_eq!(sys::sched_getaffinity(t.tid).unwrap(), before);
    let r = a.report();
    assert_eq!(
        (r.affinity.applied, r.affinity.refused_as("EINVAL")),
        (1, 1)
    );
}

#[test]
fn forgotten_masks_stay_when_the_actuator_closes() {
    let _serial = serial_adoption();
    let t = Sleeper::start();
    let before = sys::sched_getaffinity(t.tid).unwrap();
    let last = before.cpus().last().unwrap();
    if last >= 64 || before.cpus().count() < 2 {
        lull_testkit::skip("needs two CPUs below 64 to tell a mask set from the one before");
        return;
    }
    let thread = ours(t.tid);
    let mut a = without_freezer();
    pin(&mut a, thread, CpuId(last));
    a.forget_all();
    assert_eq!(a.held_threads(), 0);
    a.close();
    assert_eq!(
        sys::sched_getaffinity(t.tid)
            .unwrap()
            .cpus()
            .collect::<Vec<_>>(),
        [last]
    );
    sys::sched_setaffinity(t.tid, &before).unwrap();
}

/// With the v2 freezer and the cpu controller in cgroup v2, the weight lands in the thread's
/// own cgroup and goes with it on release; otherwise (the hybrid layout, cpu bound to cgroup
/// v1) the actuator says why it cannot and takes nothing into the freezer, which is what is
/// checked here. The lab guest, whose cgroup v2 has cpu, checks the weight itself
/// (`tests/guest_cpu_weight.rs`).
#[test]
fn cpu_weight_is_written_to_the_threads_cgroup_or_unavailable_here() {
    let _serial = serial_adoption();
    let Some(f) = test_support::open("actuator-weight", FreezerKind::V2Threaded) else {
        return;
    };
    let root = f.root().to_owned();
    let unavailable = f.cpu_weight_unavailable();
    let mut a = Actuator::new(Ok(f));
    let t = Sleeper::start();
    let before = thread_cgroups(t.tid);
    let thread = ours(t.tid);
    a.note_label(thread, "background");
    let ask = Action::CpuWeight {
        thread,
        weight: 250,
    };
    if let Some(why) = unavailable {
        assert_eq!(a.apply(&ask), Outcome::Unavailable);
        let r = &a.report().cpu_weight;
        assert_eq!(
            (r.unavailable, r.unavailable_reason.as_deref()),
            (1, Some(why.as_str()))
        );
        assert_eq!(a.counters().adopted, 0);
        assert!(subdirs(&root).is_empty());
        // Not a skip: the refusal is this machine's behaviour, and it was checked.
        println!("cpu.weight is unavailable here ({why}): checked the refusal");
        return;
    }
    assert_eq!(a.apply(&ask), Outcome::Applied);
    let leaf = root
        .join(pid().to_string())
        .join(format!("background-{}", t.tid));
    let weight = std::fs::read_to_string(leaf.join("cpu.weight")).unwrap();
    assert_eq!(weight.trim(), "250");
    assert_eq!(a.apply(&Action::Release { thread }), Outcome::Applied);
    assert!(!leaf.exists());
    t.answers();
    assert_eq!(thread_cgroups(t.tid), before);
    let c = a.counters();
    assert_eq!((c.adopted, c.released), (1, 1));
    a.close();
    assert!(!root.exists());
}

#[test]
fn frequency_is_unavailable_without_cpufreq() {
    let mut a = without_freezer();
    let ask = Action::Frequency {
        cpu: CpuId(0),
        khz: 1_000_000,
    };
    let has_cpufreq = std::fs::read_dir(cpufreq::SYSFS_CPUS)
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| e.path().join("cpufreq").is_dir());
    if has_cpufreq {
        assert_eq!(a.report().frequency.unavailable_reason, None);
        // Not a skip: here the check is that cpufreq is reported available (the write paths are
        // tested on a fake tree).
        println!("this machine has cpufreq: checked that it is reported available");
        return;
    }
    assert_eq!(a.apply(&ask), Outcome::Unavailable);
    let r = &a.report().frequency;
    assert_eq!((r.applied, r.unavailable), (0, 1));
    assert!(
        r.unavailable_reason
            .as_deref()
            .is_some_and(|w| w.contains("no cpufreq")),
        "{r:?}"
    );
    let here: Vec<ActionKind> = a.report().unavailable_here().map(|(k, _)| k).collect();
    assert_eq!(
        here,
        [
            ActionKind::Freeze,
            ActionKind::Thaw,
            ActionKind::CpuWeight,
            ActionKind::Frequency
        ]
    );
}

/// A thread that has exited: every action on it is refused `ESRCH` and nothing is recorded.
#[test]
fn actions_on_an_exited_thread_are_refused_esrch() {
    let _serial = serial_adoption();
    let tid = std::thread::spawn(sys::gettid).join().unwrap();
    // `join` returns when the kernel clears the thread's id word, a moment before the task is
    // released: until /proc stops listing it, the kernel may still act on it. Wait for that
    // (a kernel state, polled; no time is assumed).
    let task = format!("/proc/self/task/{tid}");
    while std::path::Path::new(&task).exists() {
        std::thread::yield_now();
    }
    let thread = ours(tid);
    let mut a = match test_support::open("actuator-exited", FreezerKind::V2Threaded)
        .or_else(|| test_support::open("actuator-exited", FreezerKind::V1))
    {
        Some(f) => Actuator::new(Ok(f)),
        None => without_freezer(),
    };
    let with_freezer = a.freezer().is_some();
    let esrch = Outcome::Refused(Refusal::ESRCH);
    for ask in [
        Action::Nice { thread, nice: 5 },
        Action::Slice {
            thread,
            slice_ns: 1_000_000,
        },
        Action::Affinity {
            thread,
            cpus: CpuMask(1),
        },
    ] {
        assert_eq!(a.apply(&ask), esrch, "{ask:?}");
    }
    let freeze = a.apply(&Action::Freeze { thread });
    if with_freezer {
        assert_eq!(freeze, esrch);
        assert_eq!(a.counters().adopt_failed, 1);
    } else {
        assert_eq!(freeze, Outcome::Unavailable);
    }
    // Nothing held of it: nothing to undo.
    assert!(!a.holds(thread));
    assert_eq!(a.apply(&Action::Release { thread }), Outcome::Applied);
    let r = a.report();
    for k in [ActionKind::Nice, ActionKind::Slice, ActionKind::Affinity] {
        assert_eq!(r.kind(k).refused_as("ESRCH"), 1, "{k:?}");
        assert_eq!(r.kind(k).applied, 0, "{k:?}");
    }
}

/// A `ThreadRef` whose start time is not its process's (the pid would name another process):
/// refused as `stale`, and the thread is left exactly as it was.
#[test]
fn a_stale_thread_ref_is_refused() {
    let _serial = serial_adoption();
    let t = Sleeper::start();
    let real = ours(t.tid);
    let stale = ThreadRef {
        process_start_ticks: real.process_start_ticks + 1,
        ..real
    };
    let mut a = match test_support::open("actuator-stale", FreezerKind::V2Threaded) {
        Some(f) => Actuator::new(Ok(f)),
        None => without_freezer(),
    };
    let with_freezer = a.freezer().is_some();
    let (nice, mask, cgroups) = (
        nice_of(t.tid),
        sys::sched_getaffinity(t.tid).unwrap(),
        thread_cgroups(t.tid),
    );
    let refused = Outcome::Refused(Refusal::Stale);
    assert_eq!(
        a.apply(&Action::Nice {
            thread: stale,
            nice: 9
        }),
        refused
    );
    assert_eq!(
        a.apply(&Action::Affinity {
            thread: stale,
            cpus: CpuMask(1)
        }),
        refused
    );
    if with_freezer {
        assert_eq!(a.apply(&Action::Freeze { thread: stale }), refused);
        assert_eq!(a.counters().adopt_failed, 1);
        assert_eq!(a.counters().adopted, 0);
    }
    assert_eq!(a.apply(&Action::Release { thread: stale }), refused);
    assert!(!a.holds(stale) && !a.holds(real));
    assert_eq!(nice_of(t.tid), nice);
    assert_eq!(sys::sched_getaffinity(t.tid).unwrap(), mask);
    assert_eq!(thread_cgroups(t.tid), cgroups);
    t.answers();
    let r = a.report();
    assert_eq!(r.nice.refused_as("stale"), 1);
    assert_eq!(r.affinity.refused_as("stale"), 1);
    assert_eq!(r.release.refused_as("stale"), 1);
}

/// A thread parked in a futex wait with no timeout is taken into the freezer but not frozen:
/// the freeze is put off and counted as `left_parked`.
#[test]
fn a_freeze_of_a_parked_thread_is_put_off() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let _serial = serial_adoption();
    let Some(f) = test_support::open("actuator-parked", FreezerKind::V2Threaded)
        .or_else(|| test_support::open("actuator-parked", FreezerKind::V1))
    else {
        return;
    };
    let done = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&done);
    let (tx, rx) = std::sync::mpsc::channel();
    let parked = std::thread::spawn(move || {
        tx.send(sys::gettid()).unwrap();
        while !flag.load(Ordering::Acquire) {
            std::thread::park();
        }
    });
    let tid = rx.recv().unwrap();
    let deadline = std::time::Instant::now() + test_support::GIVE_UP;
    while !procfs::parked_in_futex(pid(), tid) {
        assert!(std::time::Instant::now() < deadline, "thread never parked");
        std::thread::yield_now();
    }
    let mut a = Actuator::new(Ok(f));
    let thread = ours(tid);
    a.note_label(thread, "drawing");
    assert_eq!(a.apply(&Action::Freeze { thread }), Outcome::PutOff);
    let c = a.counters();
    assert_eq!((c.adopted, c.left_parked, c.freezes), (1, 1, 0));
    assert_eq!(a.report().freeze.put_off, 1);
    done.store(true, Ordering::Release);
    parked.thread().unpark();
    parked.join().unwrap();
    assert_eq!(a.apply(&Action::Release { thread }), Outcome::Applied);
    assert_eq!(a.counters().released, 1);
    a.close();
}

/// A thread acted on once is vouched for afterwards by its thread pidfd (one `poll`); once it
/// has exited, the next action on it is refused `ESRCH` like any action on an exited thread
/// (the pidfd sends it down the full check; the kernel, asked about a gone tid, would also say
/// `ESRCH` — what the pidfd adds is that a tid reused by another process is never taken for it).
#[test]
fn an_admitted_thread_that_exits_is_refused_esrch() {
    let _serial = serial_adoption();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        tid_tx.send(sys::gettid()).unwrap();
        let _ = stop_rx.recv();
    });
    let tid = tid_rx.recv().unwrap();
    let thread = ours(tid);
    let mut a = without_freezer();
    for nice in [5, 6] {
        assert_eq!(a.apply(&Action::Nice { thread, nice }), Outcome::Applied);
        assert_eq!(nice_of(tid), i32::from(nice));
        assert_eq!(a.apply(&Action::RestoreSched { thread }), Outcome::Applied);
        assert_eq!(nice_of(tid), 0);
    }
    drop(stop_tx);
    worker.join().unwrap();
    // `join` returns once the thread's futex is cleared; the kernel removes it from /proc a
    // moment later, in the same exit.
    let task = format!("/proc/self/task/{tid}");
    let mut spins = 0u64;
    while std::path::Path::new(&task).exists() {
        spins += 1;
        assert!(spins < 100_000_000, "{task} never went away");
        std::thread::yield_now();
    }
    assert_eq!(
        a.apply(&Action::Nice { thread, nice: 5 }),
        Outcome::Refused(Refusal::ESRCH)
    );
}
