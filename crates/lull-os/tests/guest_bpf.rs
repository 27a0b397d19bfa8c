//! Lull's BPF layer against a real kernel with sched_ext, BTF and kprobes: a sched_ext
//! scheduler with no BPF program registered and unregistered through its struct_ops map, and a
//! kprobe counter on the input core's entry point seeing every record a uinput device reports.
//!
//! These need root and a kernel built with `CONFIG_SCHED_CLASS_EXT`, `CONFIG_DEBUG_INFO_BTF`
//! and the kprobe PMU: they run only in the lab guest (`lull lab vm --tests`, which sets
//! `LULL_GUEST`). Each is `#[ignore]`d so a plain `cargo test` passes them by, and fails loudly
//! when run with `--ignored` outside the guest. They share sched_ext's one root slot, so run
//! them one at a time (`--test-threads=1`).
//!
//! Registering enables sched_ext inside the map update, and uinput's `write` calls the input
//! core before it returns, so nothing here waits for the kernel to catch up. The one poll, for
//! sched_ext's state after unregistering, is a hang guard bounded by [`HANG_GUARD_MS`].

mod common;
use common::{require_guest, KEY_A};
use std::time::{Duration, Instant};

use lull_os::bpf::btf::{Btf, BtfKind};
use lull_os::bpf::sched_ext::{self, SchedExtError, SchedExtScheduler, SchedExtState};
use lull_os::bpf::KprobeCounter;
use lull_os::evdev::{InputRecord, EV_KEY, EV_SYN, SYN_REPORT};
use lull_os::sys;
use lull_os::uinput::{UinputCaps, UinputDevice};

/// The longest any wait on the kernel may take before the test calls it a hang. A passing run
/// never comes near it.
const HANG_GUARD_MS: u64 = 10_000;
/// Between two readings of a state that is expected to have changed already.
const POLL_INTERVAL_MS: u64 = 10;
/// CPU time the busy thread must get under the loaded scheduler: several 20 ms default slices
/// (`SCX_SLICE_DFL`), so it has been scheduled, preempted and picked again.
const SPIN_CPU_NS: u64 = 100_000_000;
/// Key presses written through uinput in the input-path test.
const PRESSES: usize = 50;

/// Polls sched_ext's state until it is `want`, returning how many readings it took; panics
/// after [`HANG_GUARD_MS`]. A hang guard, not a synchronisation: the disable runs in
/// sched_ext's helper kthread, which the unregistering call already waits for.
fn wait_for_state(want: SchedExtState) -> usize {
    let deadline = Instant::now() + Duration::from_millis(HANG_GUARD_MS);
    let mut readings = 0;
    loop {
        let now = sched_ext::state().expect("read sched_ext state");
        readings += 1;
        if now == want {
            return readings;
        }
        assert!(
            Instant::now() < deadline,
            "sched_ext still {now:?} after {HANG_GUARD_MS} ms, waiting for {want:?}"
        );
        std::thread::sleep(Duration::from_millis(POLL_INTERVAL_MS));
    }
}

/// A thread's CPU time so far (`/proc/self/task/TID/schedstat`, first field, ns).
fn thread_runtime_ns(tid: i32) -> u64 {
    let path = format!("/proc/self/task/{tid}/schedstat");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{path}: {text:?}"))
}

/// The `ext.enabled` line of a thread's `/proc/…/sched` (whether it runs in sched_ext), if the
/// kernel prints one (`CONFIG_SCHED_CLASS_EXT` kernels do).
fn ext_enabled(tid: i32) -> Option<bool> {
    let path = format!("/proc/self/task/{tid}/sched");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .find(|l| l.trim_start().starts_with("ext.enabled"))
        .and_then(|l| l.split(':').nth(1))
        .map(|v| v.trim() == "1")
}

/// What a busy thread saw: its CPU time before and after spinning, and whether it ran in
/// sched_ext while spinning.
struct Spin {
    runtime_before_ns: u64,
    runtime_after_ns: u64,
    ext_enabled: Option<bool>,
}

/// Spins a new thread until it has had [`SPIN_CPU_NS`] of CPU by its own clock, or the hang
/// guard passes; the CPU time is then read back from `schedstat`, the scheduler's accounting.
fn spin_a_thread() -> Spin {
    std::thread::spawn(|| {
        let tid = sys::gettid();
        let runtime_before_ns = thread_runtime_ns(tid);
        let ext = ext_enabled(tid);
        let deadline = Instant::now() + Duration::from_millis(HANG_GUARD_MS);
        let start = thread_cpu_ns();
        let mut x: u64 = 1;
        while thread_cpu_ns() - start < SPIN_CPU_NS && Instant::now() < deadline {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
            }
        }
        Spin {
            runtime_before_ns,
            runtime_after_ns: thread_runtime_ns(tid),
            ext_enabled: ext,
        }
    })
    .join()
    .expect("the busy thread panicked")
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; the calling thread's CPU clock always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn a_program_less_sched_ext_scheduler_runs_tasks_until_unregistered() {
    require_guest();
    assert_eq!(sched_ext::state().unwrap(), SchedExtState::Disabled);
    assert_eq!(sched_ext::root_ops().unwrap(), None);
    let seq_before = sched_ext::enable_seq().unwrap();

    let scheduler = SchedExtScheduler::register("lull_probe").expect("register lull_probe");
    // Enabled at once: the kernel enables inside the map update.
    assert_eq!(sched_ext::state().unwrap(), SchedExtState::Enabled);
    assert_eq!(
        sched_ext::root_ops().unwrap().as_deref(),
        Some("lull_probe")
    );
    assert_eq!(sched_ext::enable_seq().unwrap(), seq_before + 1);
    println!(
        "registered lull_probe, struct_ops map id {}",
        scheduler.map_id().unwrap()
    );

    let spin = spin_a_thread();
    let got = spin.runtime_after_ns - spin.runtime_before_ns;
    println!(
        "busy thread under lull_probe: {} ms of CPU, ext.enabled {:?}",
        got / 1_000_000,
        spin.ext_enabled
    );
    assert!(
        got >= SPIN_CPU_NS,
        "the busy thread got {got} ns of CPU under the scheduler, wanted {SPIN_CPU_NS}"
    );
    // Every fair-class thread moves to sched_ext (no SCX_OPS_SWITCH_PARTIAL); the guest's
    // kernel prints `ext.enabled` in /proc/…/sched.
    assert_eq!(
        spin.ext_enabled,
        Some(true),
        "a fair-class thread is not in sched_ext while it is loaded"
    );

    scheduler.unregister().expect("unregister");
    let readings = wait_for_state(SchedExtState::Disabled);
    println!("sched_ext disabled after unregister (state readings: {readings})");
    assert_eq!(sched_ext::root_ops().unwrap(), None);
    assert_eq!(
        ext_enabled(sys::gettid()),
        Some(false),
        "this thread is still in sched_ext after unregistering"
    );
}

#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn one_scheduler_at_a_time_and_dropping_it_unregisters() {
    require_guest();
    assert_eq!(sched_ext::state().unwrap(), SchedExtState::Disabled);
    {
        let _first = SchedExtScheduler::register("lull_first").expect("register lull_first");
        match SchedExtScheduler::register("lull_second") {
            Err(SchedExtError::AlreadyLoaded { loaded }) => assert_eq!(loaded, "lull_first"),
            other => panic!("a second scheduler while one is loaded: {other:?}"),
        }
        assert_eq!(
            sched_ext::root_ops().unwrap().as_deref(),
            Some("lull_first")
        );
        assert!(matches!(
            SchedExtScheduler::register("bad name"),
            Err(SchedExtError::InvalidName { .. })
        ));
    }
    wait_for_state(SchedExtState::Disabled);
    assert_eq!(sched_ext::root_ops().unwrap(), None);
}

#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn the_guest_btf_lays_out_the_sched_ext_value() {
    require_guest();
    let btf = Btf::vmlinux().expect("vmlinux BTF");
    let vt = btf
        .find_struct(sched_ext::VALUE_TYPE_NAME)
        .expect("bpf_struct_ops_sched_ext_ops");
    let data = btf.member_layout(vt.id, "data").unwrap();
    let ops = btf.find_struct("sched_ext_ops").unwrap();
    assert_eq!(btf.kind(data.type_id).unwrap(), BtfKind::Struct);
    assert_eq!(data.size_bytes, ops.size_bytes);
    let name = btf.member_layout(vt.id, "data.name").unwrap();
    let direct = btf.member_layout(ops.id, "name").unwrap();
    assert_eq!(name.byte_offset, data.byte_offset + direct.byte_offset);
    assert_eq!(name.size_bytes, 128, "SCX_OPS_NAME_LEN");
    println!(
        "{}: {} bytes, data at {}, data.name at {} ({} bytes)",
        vt.name, vt.size_bytes, data.byte_offset, name.byte_offset, name.size_bytes
    );
}

/// The first of `candidates` that `/proc/kallsyms` lists as a text symbol and kprobes does not
/// refuse (`/sys/kernel/debug/kprobes/blacklist`, when debugfs is mounted).
fn probeable_symbol(candidates: &[&str]) -> String {
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").expect("/proc/kallsyms");
    let blacklist =
        std::fs::read_to_string("/sys/kernel/debug/kprobes/blacklist").unwrap_or_default();
    let listed = |s: &str| {
        kallsyms.lines().any(|l| {
            let mut f = l.split_whitespace();
            let (_, ty, name) = (f.next(), f.next(), f.next());
            matches!(ty, Some("T" | "t")) && name == Some(s)
        })
    };
    let refused = |s: &str| {
        blacklist
            .lines()
            .any(|l| l.split_whitespace().nth(1) == Some(s))
    };
    candidates
        .iter()
        .find(|s| listed(s) && !refused(s))
        .unwrap_or_else(|| panic!("none of {candidates:?} can be probed here"))
        .to_string()
}

#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn a_kprobe_counter_counts_system_calls() {
    require_guest();
    let sym = probeable_symbol(&["__x64_sys_getppid", "__arm64_sys_getppid"]);
    let counter = KprobeCounter::attach(&sym).expect("attach");
    let before = counter.count().unwrap();
    const CALLS: u64 = 100;
    for _ in 0..CALLS {
        // SAFETY: getppid has no arguments and cannot fail.
        unsafe { libc::getppid() };
    }
    let after = counter.count().unwrap();
    println!("{sym}: {} hits for {CALLS} getppid calls", after - before);
    assert!(after - before >= CALLS, "{sym}: {before} -> {after}");
    assert!(KprobeCounter::attach("lull_no_such_function").is_err());
}

fn rec(type_: u16, code: u16, value: i32) -> InputRecord {
    InputRecord::to_inject(type_, code, value)
}

#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn a_kprobe_on_the_input_core_sees_every_uinput_record() {
    require_guest();
    // uinput's write calls input_event() once per record; input_handle_event() is what
    // input_event() calls for the records the device supports.
    let sym = probeable_symbol(&["input_event", "input_handle_event"]);
    let dev = UinputDevice::create(
        "lull-bpf-keys",
        &UinputCaps {
            keys: vec![KEY_A],
            ..UinputCaps::default()
        },
    )
    .expect("create the uinput device");
    let counter = KprobeCounter::attach(&sym).expect("attach");
    let mut records = Vec::new();
    for _ in 0..PRESSES {
        records.extend([
            rec(EV_KEY, KEY_A, 1),
            rec(EV_SYN, SYN_REPORT, 0),
            rec(EV_KEY, KEY_A, 0),
            rec(EV_SYN, SYN_REPORT, 0),
        ]);
    }
    let before = counter.count().unwrap();
    dev.emit(&records).expect("emit");
    let after = counter.count().unwrap();
    println!(
        "{sym}: {} hits for {} records written through uinput",
        after - before,
        records.len()
    );
    assert!(
        after - before >= records.len() as u64,
        "{sym} counted {} calls for {} records",
        after - before,
        records.len()
    );
}
