//! For tests (feature `test-support`, and this crate's own): threads of the test process to
//! adopt into the cgroup freezer, freezers in namespaces unique to the test, and the cgroup
//! files to check them against. Used by this crate's tests and by those of the crates that host
//! the actuator (`lulld`, `lull-lab`).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use lull_os::sys;

use crate::freezer::{Freezer, FreezerError, FreezerKind};

/// Each named check, a `fn(FreezerKind)` in scope, run as one test per freezer kind:
/// `check::v2_threaded` and `check::v1` (a kind this machine lacks is skipped by the check).
#[macro_export]
macro_rules! per_freezer_kind {
    ($($check:ident),* $(,)?) => {$(
        mod $check {
            #[test]
            fn v2_threaded() {
                super::$check($crate::freezer::FreezerKind::V2Threaded);
            }
            #[test]
            fn v1() {
                super::$check($crate::freezer::FreezerKind::V1);
            }
        }
    )*};
}

/// Upper bound on a wait for the kernel or a daemon: only keeps a broken one from hanging the
/// run; no assertion depends on how long anything takes.
pub const GIVE_UP: Duration = Duration::from_secs(10);

/// Waits, yielding, until `cond` holds (at most [`GIVE_UP`]).
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + GIVE_UP;
    while !cond() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        thread::yield_now();
    }
}

/// Adopting a thread moves the whole test process between cgroup v2 domains, and one process
/// can be held by one freezer at a time: tests that adopt hold this while they run.
pub fn serial_adoption() -> MutexGuard<'static, ()> {
    static ADOPTING: Mutex<()> = Mutex::new(());
    ADOPTING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A cgroup namespace unique to this test process and `tag`.
pub fn namespace(tag: &str) -> String {
    format!("lull-test-{}-{tag}", std::process::id())
}

/// Subdirectories of `dir`: cgroups left behind.
pub fn subdirs(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect()
}

/// Every cgroup line of thread `tid` of this process.
pub fn thread_cgroups(tid: i32) -> String {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/cgroup")).unwrap()
}

/// The cgroup line of thread `tid` of this process for the hierarchy `kind` uses.
pub fn cgroup_line(kind: FreezerKind, tid: i32) -> String {
    thread_cgroups(tid)
        .lines()
        .find(|l| match kind {
            FreezerKind::V2Threaded => l.starts_with("0::"),
            FreezerKind::V1 => l
                .split(':')
                .nth(1)
                .is_some_and(|c| c.split(',').any(|x| x == "freezer")),
        })
        .unwrap()
        .to_owned()
}

/// Waits until `count` has gone up (at most [`GIVE_UP`]): the thread behind it ran.
pub fn advances(what: &str, count: impl Fn() -> u64) {
    let c = count();
    wait_until(what, || count() > c);
}

/// A thread of this test process, in no app, that spins on its own counter until stopped, so
/// freezing it cannot stall the test harness.
#[derive(Debug)]
pub struct Spinner {
    pub tid: i32,
    count: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    join: Option<thread::JoinHandle<()>>,
}

impl Spinner {
    pub fn start() -> Spinner {
        let count = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let (c, s) = (count.clone(), stop.clone());
        let join = thread::spawn(move || {
            tx.send(sys::gettid()).unwrap();
            while !s.load(Ordering::Relaxed) {
                c.fetch_add(1, Ordering::Relaxed);
            }
        });
        Spinner {
            tid: rx.recv().unwrap(),
            count,
            stop,
            join: Some(join),
        }
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Waits until the thread has counted further: it is not frozen.
    pub fn advances(&self) {
        advances("spinner advances", || self.count());
    }

    /// Stops the thread and waits for it to exit.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(j) = self.join.take() {
            j.join().unwrap();
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // A failing test may drop it still frozen: joining then would hang the run.
        if let Some(j) = self.join.take().filter(|_| !thread::panicking()) {
            let _ = j.join();
        }
    }
}

/// A freezer with a namespace unique to this test process and `test`, or `None` (printing
/// `SKIPPED`) where the mechanism is unavailable (not root, no such hierarchy).
pub fn open(test: &str, kind: FreezerKind) -> Option<Freezer> {
    match Freezer::open_kind(&namespace(test), kind) {
        Ok(f) => Some(f),
        Err(e @ FreezerError::Unavailable { .. }) => {
            lull_testkit::skip(&e);
            None
        }
        Err(e) => panic!("{kind}: {e}"),
    }
}

/// A thread of this test process blocked in `read(2)` on a socket (not a futex wait, so
/// guiS freezes it rather than leaving it parked), echoing each byte it gets. It uses no
/// CPU, so it does not disturb the timing-sensitive tests running beside it.
#[derive(Debug)]
pub struct Sleeper {
    pub tid: i32,
    stream: UnixStream,
}

impl Sleeper {
    pub fn start() -> Sleeper {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        // Only a bound on a broken kernel: a frozen thread answers when thawed.
        ours.set_read_timeout(Some(GIVE_UP)).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            tx.send(lull_os::sys::gettid()).unwrap();
            let mut b = [0u8];
            while theirs.read_exact(&mut b).is_ok() && theirs.write_all(&b).is_ok() {}
        });
        Sleeper {
            tid: rx.recv().unwrap(),
            stream: ours,
        }
    }

    /// Sends the thread a byte and reads it back: the thread ran, so it is not frozen.
    pub fn answers(&self) {
        (&self.stream).write_all(&[1]).unwrap();
        let mut b = [0u8];
        (&self.stream)
            .read_exact(&mut b)
            .expect("the thread answers (it is not frozen)");
    }
}

// Dropping a `Sleeper` closes the socket and its thread ends (once thawed); it is not
// joined, so a failed test that drops one still frozen does not hang.
