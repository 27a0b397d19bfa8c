//! Live: the cgroup freezer stops one thread of a process while its siblings run, reports it
//! frozen from the kernel's own files, and puts every thread back where it was on release (of
//! one thread or of the process) and on drop. Needs root and a cgroup hierarchy; each mechanism
//! this machine lacks is skipped.
//!
//! The threads frozen are dedicated spinners of this test process that touch nothing but their
//! own atomics, so freezing them cannot stall the test harness.

use lull_actuate::test_support::{
    cgroup_line, namespace, open, serial_adoption, subdirs, thread_cgroups, wait_until, Sleeper,
    Spinner, GIVE_UP,
};

use std::path::Path;
use std::sync::MutexGuard;

use lull_actuate::freezer::{Freezer, FreezerError, FreezerKind, ThreadHandle};
use lull_os::procfs::sample;
use lull_os::sys::gettid;

lull_actuate::per_freezer_kind!(
    freezes_one_thread_only,
    drop_thaws_and_cleans_up,
    exited_thread_is_not_an_error,
    redeclared_thread_is_given_back,
    reused_pid_is_dropped,
);

/// The freezer of `kind` in namespace `test`, with the lock that keeps adoptions of this
/// process's threads one test at a time; `None` (printed `SKIPPED`) without that freezer.
fn open_alone(test: &str, kind: FreezerKind) -> Option<(MutexGuard<'static, ()>, Freezer)> {
    let serial = serial_adoption();
    Some((serial, open(test, kind)?))
}

/// Freezes `h`, waits for the kernel to confirm it and for the thread to be switched out (its
/// voluntary context switches rise: it blocked in the freezer), so its CPU time is final.
fn freeze_and_park(f: &Freezer, h: &ThreadHandle) {
    let before = sample(h.tid).unwrap().voluntary;
    f.freeze(h).unwrap();
    f.freeze(h).unwrap();
    f.wait_settled(h, true, GIVE_UP).unwrap();
    assert!(f.is_frozen(h).unwrap());
    wait_until("frozen thread leaves the CPU", || {
        sample(h.tid).unwrap().voluntary > before
    });
}

fn freezes_one_thread_only(kind: FreezerKind) {
    let Some((_serial, mut f)) = open_alone("one", kind) else {
        return;
    };
    assert_eq!(f.kind(), kind);
    let pid = std::process::id() as i32;
    let me = gettid();
    let a = Spinner::start();
    let b = Spinner::start();
    let cg_before = [a.tid, b.tid, me].map(|t| cgroup_line(kind, t));

    let ha = f.adopt(pid, a.tid, "drawing").unwrap();
    let hb = f.adopt(pid, b.tid, "background").unwrap();
    assert!(matches!(
        f.adopt(pid, a.tid, "drawing"),
        Err(FreezerError::AlreadyAdopted { .. })
    ));
    assert!(ha.cgroup_dir().is_dir() && hb.cgroup_dir().is_dir());
    assert!(!f.is_frozen(&ha).unwrap());
    assert!(!f.is_frozen(&hb).unwrap());
    f.thaw(&ha).unwrap();
    a.advances();

    freeze_and_park(&f, &ha);
    let (count, run_ns) = (a.count(), sample(a.tid).unwrap().run_ns);
    // A fixed amount of work elsewhere: the sibling in the same process counts a million more
    // and this thread burns a fixed number of loop rounds.
    let b0 = b.count();
    wait_until("sibling runs while A is frozen", || {
        b.count() > b0 + 1_000_000
    });
    let mut x = 0u64;
    for i in 0..10_000_000u64 {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    assert_eq!(a.count(), count, "frozen thread ran");
    assert_eq!(
        sample(a.tid).unwrap().run_ns,
        run_ns,
        "frozen thread got CPU time"
    );
    assert!(!f.is_frozen(&hb).unwrap());

    f.thaw(&ha).unwrap();
    f.thaw(&ha).unwrap();
    f.wait_settled(&ha, false, GIVE_UP).unwrap();
    assert!(!f.is_frozen(&ha).unwrap());
    a.advances();

    // Release while frozen: thawed, back in the original cgroups, directories gone.
    freeze_and_park(&f, &ha);
    f.release(pid).unwrap();
    a.advances();
    assert_eq!([a.tid, b.tid, me].map(|t| cgroup_line(kind, t)), cg_before);
    assert!(!ha.cgroup_dir().exists() && !hb.cgroup_dir().exists());
    assert!(!ha.cgroup_dir().parent().unwrap().exists());
    assert!(matches!(
        f.freeze(&ha),
        Err(FreezerError::NotAdopted { .. })
    ));
    f.release(pid).unwrap();
    let root = f.root().to_owned();
    f.close().unwrap();
    assert!(!root.exists());
    a.finish();
    b.finish();
}

fn drop_thaws_and_cleans_up(kind: FreezerKind) {
    let Some((_serial, mut f)) = open_alone("drop", kind) else {
        return;
    };
    let pid = std::process::id() as i32;
    let a = Spinner::start();
    let before = cgroup_line(kind, a.tid);
    let h = f.adopt(pid, a.tid, "foreground").unwrap();
    freeze_and_park(&f, &h);
    let root = f.root().to_owned();
    drop(f);
    a.advances();
    assert_eq!(cgroup_line(kind, a.tid), before);
    assert!(!root.exists());
    a.finish();
}

fn exited_thread_is_not_an_error(kind: FreezerKind) {
    let Some((_serial, mut f)) = open_alone("exit", kind) else {
        return;
    };
    let pid = std::process::id() as i32;
    let a = Spinner::start();
    let tid = a.tid;
    let h = f.adopt(pid, tid, "event").unwrap();
    freeze_and_park(&f, &h);
    f.thaw(&h).unwrap();
    a.finish();
    let task = format!("/proc/self/task/{tid}");
    wait_until("exited thread leaves /proc", || !Path::new(&task).exists());
    f.release(pid).unwrap();
    assert!(!h.cgroup_dir().exists());
    assert!(matches!(
        f.adopt(pid, tid, "event"),
        Err(FreezerError::ThreadNotFound { .. })
    ));
    f.close().unwrap();
}

/// A category re-declared A -> B -> A: each replaced thread is thawed, leaves its cgroup (to the
/// process's domain with v2, to where it came from with v1) and the cgroup is removed, so A can
/// be adopted again; the process stays held until released, then everything is back where it
/// was and the namespace is empty.
fn redeclared_thread_is_given_back(kind: FreezerKind) {
    let Some((_serial, mut f)) = open_alone("redeclare", kind) else {
        return;
    };
    let pid = std::process::id() as i32;
    let me = gettid();
    let a = Spinner::start();
    let b = Spinner::start();
    let before = [a.tid, b.tid, me].map(|t| cgroup_line(kind, t));
    let domain = f.root().join(pid.to_string());

    let ha = f.adopt(pid, a.tid, "drawing").unwrap();
    freeze_and_park(&f, &ha);
    f.release_thread(pid, a.tid).unwrap();
    a.advances();
    assert!(!ha.cgroup_dir().exists());
    assert!(f.holds(pid) && f.handles(pid).is_empty());
    assert!(matches!(
        f.freeze(&ha),
        Err(FreezerError::NotAdopted { .. })
    ));
    match kind {
        FreezerKind::V1 => assert_eq!(cgroup_line(kind, a.tid), before[0]),
        FreezerKind::V2Threaded => {
            let line = cgroup_line(kind, a.tid);
            assert!(line.ends_with(&format!("/{}", pid)), "{line}");
            assert!(domain.is_dir());
        }
    }
    // Not held (any more): nothing to do.
    f.release_thread(pid, a.tid).unwrap();

    let hb = f.adopt(pid, b.tid, "drawing").unwrap();
    freeze_and_park(&f, &hb);
    f.release_thread(pid, b.tid).unwrap();
    b.advances();
    assert!(!hb.cgroup_dir().exists());

    let ha = f.adopt(pid, a.tid, "drawing").unwrap();
    assert_eq!(f.handles(pid), std::slice::from_ref(&ha));
    freeze_and_park(&f, &ha);
    f.release(pid).unwrap();
    a.advances();
    assert!(!f.holds(pid));
    assert_eq!([a.tid, b.tid, me].map(|t| cgroup_line(kind, t)), before);
    assert!(subdirs(f.root()).is_empty(), "{:?}", subdirs(f.root()));
    let root = f.root().to_owned();
    f.close().unwrap();
    assert!(!root.exists());
    a.finish();
    b.finish();
}

#[test]
fn open_picks_a_mechanism_and_refuses_bad_input() {
    let _serial = serial_adoption();
    assert!(matches!(
        Freezer::open("a/b"),
        Err(FreezerError::BadName { .. })
    ));
    let ns = namespace("open");
    let f = match Freezer::open(&ns) {
        Ok(f) => f,
        Err(e @ FreezerError::Unavailable { .. }) => {
            lull_testkit::skip(&e);
            return;
        }
        Err(e) => panic!("{e}"),
    };
    println!("freezer kind: {}", f.kind());
    assert!(matches!(
        Freezer::open_kind(&ns, f.kind()),
        Err(FreezerError::NamespaceInUse { .. })
    ));
    let mut f = f;
    let pid = std::process::id() as i32;
    assert!(matches!(
        f.adopt(pid, 1 << 23, "event"),
        Err(FreezerError::ThreadNotFound { .. })
    ));
    assert!(matches!(
        f.adopt(pid, gettid(), "no/slash"),
        Err(FreezerError::BadName { .. })
    ));
    // A failed adoption leaves nothing behind.
    assert!(std::fs::read_dir(f.root()).unwrap().all(|e| {
        let name = e.unwrap().file_name();
        !name
            .to_string_lossy()
            .starts_with(|c: char| c.is_ascii_digit())
    }));
    f.close().unwrap();
}

/// A held process whose pid has another start time is never written to a cgroup file: the
/// next adoption and a release report `PidReused`, the entry goes and its cgroups are
/// removed (here the "other" process is this one, still inside them, so the sweep of what
/// the kernel lists in our own cgroups brings it back).
fn reused_pid_is_dropped(kind: FreezerKind) {
    let Some((_serial, mut f)) = open_alone("reuse", kind) else {
        return;
    };
    let pid = std::process::id() as i32;
    let (a, b) = (Sleeper::start(), Sleeper::start());
    let before = [a.tid, b.tid].map(thread_cgroups);

    let h = f.adopt(pid, a.tid, "drawing").unwrap();
    f.freeze(&h).unwrap();
    f.wait_settled(&h, true, GIVE_UP).unwrap();
    f.forge_start_ticks(pid);
    assert!(matches!(
        f.adopt(pid, b.tid, "foreground"),
        Err(FreezerError::PidReused { pid: p }) if p == pid
    ));
    a.answers();
    let dropped = |f: &Freezer, op: &str| {
        assert!(!f.holds(pid), "{op}");
        assert!(subdirs(f.root()).is_empty(), "{op}");
        assert_eq!([a.tid, b.tid].map(thread_cgroups), before, "{op}");
    };
    dropped(&f, "adopt");

    type Op = fn(&mut Freezer, i32, i32) -> Result<(), FreezerError>;
    let ops: [(&str, Op); 2] = [
        ("release", |f, pid, _| f.release(pid)),
        ("release_thread", |f, pid, tid| f.release_thread(pid, tid)),
    ];
    for (op, act) in ops {
        f.adopt(pid, a.tid, "drawing").unwrap();
        f.forge_start_ticks(pid);
        let got = act(&mut f, pid, a.tid);
        assert!(
            matches!(got, Err(FreezerError::PidReused { .. })),
            "{op}: {got:?}"
        );
        dropped(&f, op);
    }
    f.close().unwrap();
}
