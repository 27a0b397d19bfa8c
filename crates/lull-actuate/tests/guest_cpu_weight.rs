//! guiS's `cpu.weight` where cgroup v2 has the cpu controller: the lab guest (`lull lab vm
//! --tests`, which sets `LULL_GUEST`), whose systemd mounts the unified hierarchy only. On a
//! host whose cpu controller is bound to a cgroup v1 hierarchy (the hybrid layout), the unit
//! test `actuator::tests::cpu_weight_is_written_to_the_threads_cgroup_or_unavailable_here`
//! checks the refusal and its reason instead; this test checks the weight itself.
//!
//! Needs root and the v2 freezer: `#[ignore]`d on the host.

use std::sync::mpsc;

use lull_actuate::freezer::{Freezer, FreezerKind};
use lull_actuate::test_support::{namespace, thread_cgroups};
use lull_actuate::{Actuator, Outcome};
use lull_os::{procfs, sys};
use lull_sched::seam::{Action, ThreadRef};

#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn cpu_weight_lands_in_the_threads_own_cgroup_and_leaves_with_it() {
    lull_testkit::require_guest();
    let f = Freezer::open_kind(&namespace("guest-weight"), FreezerKind::V2Threaded)
        .expect("the guest has the cgroup v2 freezer");
    assert_eq!(
        f.cpu_weight_unavailable(),
        None,
        "the guest's cgroup v2 has the cpu controller"
    );
    let root = f.root().to_owned();
    let mut a = Actuator::new(Ok(f));

    // A thread of this process that sleeps until told to end.
    let (end_tx, end_rx) = mpsc::channel::<()>();
    let (tid_tx, tid_rx) = mpsc::channel();
    let sleeper = std::thread::spawn(move || {
        tid_tx.send(sys::gettid()).unwrap();
        let _ = end_rx.recv();
    });
    let tid = tid_rx.recv().unwrap();
    let pid = std::process::id() as i32;
    let before = thread_cgroups(tid);
    let thread = ThreadRef {
        pid,
        tid,
        process_start_ticks: procfs::process_start_ticks(pid).unwrap(),
    };
    a.note_label(thread, "background");
    assert_eq!(
        a.apply(&Action::CpuWeight {
            thread,
            weight: 250
        }),
        Outcome::Applied
    );
    let leaf = root.join(pid.to_string()).join(format!("background-{tid}"));
    let weight = std::fs::read_to_string(leaf.join("cpu.weight")).unwrap();
    assert_eq!(weight.trim(), "250");
    assert!(thread_cgroups(tid).contains(&format!("background-{tid}")));
    // Only that thread has the weight: the process's other threads are in its domain
    // (`<namespace>/<pid>`, as cgroup v2 moves whole processes), not in the thread's leaf.
    let main = thread_cgroups(sys::gettid());
    assert!(main.trim_end().ends_with(&format!("/{pid}")), "{main}");

    assert_eq!(a.apply(&Action::Release { thread }), Outcome::Applied);
    assert!(!leaf.exists());
    assert_eq!(thread_cgroups(tid), before);
    let c = a.counters();
    assert_eq!((c.adopted, c.released), (1, 1));
    end_tx.send(()).unwrap();
    sleeper.join().unwrap();
    a.close();
    assert!(!root.exists());
}
