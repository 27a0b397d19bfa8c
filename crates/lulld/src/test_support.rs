//! For tests (feature `test-support`): a `lulld` loop on a thread of the test, on a fresh Unix
//! socket; the freezer tests' helpers of `lull_actuate::test_support`, re-exported so that a
//! test of the daemon finds all it needs here.
//! Used by this crate's tests and by `lull-lab`'s, which run the daemon with real clients.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread;

use lull_esm::EsmConfig;
use lull_os::event_loop::{FnSource, LoopCtl, PostAction, Source};
use lull_os::fileout::ScratchDir;
use lull_os::sys;

use lull_model::{AppId, ThreadCategory};
use lull_os::runqueue::RunnableProbe;
use lull_os::sys::TimerFd;
use lull_sched::boost::seam::{BoostSeam, BoostSeamConfig};
use lull_sched::seam::ThreadRef;

use crate::daemon::{Daemon, DaemonConfig, DaemonReport, DaemonState, Stopper};
use crate::kds::KdsConfig;
use crate::seam::{RunQueueSampler, SeamHost, SeamReport};
use lull_actuate::Actuator;

/// Turns on `d`'s display server on a headless `width × height` screen, its control socket
/// where [`TestDaemon::kds_path`] looks.
///
/// # Errors
/// The display server's set-up failed.
pub fn enable_headless_kds(d: &mut Daemon, width: u32, height: u32) -> io::Result<()> {
    let socket_path = d.socket_path().with_extension("kds.sock");
    d.enable_kds(&KdsConfig {
        socket_path,
        screen_width: width,
        screen_height: height,
        framebuffer: None,
    })
    .map_err(io::Error::other)
}

/// A loop source that answers each byte written to `probe_r`'s pipe with `probe` of the daemon's
/// state on `answers`, until the pipe's writer closes: a test waits for a state by asking the
/// loop, never by sleeping.
pub fn probe_source<P: Send + 'static>(
    probe_r: OwnedFd,
    answers: mpsc::Sender<P>,
    probe: impl Fn(&DaemonState) -> P + 'static,
) -> Box<dyn Source<DaemonState>> {
    let fd = probe_r.as_raw_fd();
    Box::new(FnSource {
        fd,
        f: move |st: &mut DaemonState, _: &mut LoopCtl<DaemonState>| {
            let _owned = &probe_r;
            let mut b = [0u8; 64];
            while let Ok(n) = sys::read(fd, &mut b) {
                if n == 0 {
                    return PostAction::Remove;
                }
            }
            let _ = answers.send(probe(st));
            PostAction::Continue
        },
    })
}

/// A test daemon's socket directory: others may reach the sockets by name, not list them.
const SOCKET_DIR_MODE: u32 = 0o711;

/// A daemon running on its own thread until [`TestDaemon::stop`].
#[derive(Debug)]
pub struct TestDaemon {
    pub path: PathBuf,
    stopper: Stopper,
    handle: thread::JoinHandle<DaemonReport>,
    /// The private directory of the sockets, removed after the daemon (fields drop in order).
    _scratch: ScratchDir,
}

impl TestDaemon {
    /// Binds a daemon with `esm` on a socket named after `tag` in a private directory of its
    /// own, lets `setup` add its sources, and runs it. Returns once the daemon is accepting.
    pub fn start(
        tag: &str,
        esm: EsmConfig,
        setup: impl FnOnce(&mut Daemon) -> io::Result<()> + Send + 'static,
    ) -> TestDaemon {
        let scratch = ScratchDir::new("lull-test-daemon").unwrap();
        // Searchable by every user (not listable): the hostile-client tests connect from
        // processes that dropped to another user, and the sockets' own modes decide who may.
        std::fs::set_permissions(
            scratch.path(),
            std::os::unix::fs::PermissionsExt::from_mode(SOCKET_DIR_MODE),
        )
        .unwrap();
        let path = scratch.path().join(format!("{tag}.sock"));
        let (tx, rx) = std::sync::mpsc::channel();
        let socket_path = path.clone();
        let handle = thread::spawn(move || {
            let mut d = Daemon::bind(&DaemonConfig { socket_path, esm }).unwrap();
            setup(&mut d).unwrap();
            tx.send(d.stopper()).unwrap();
            d.run().unwrap()
        });
        let stopper = rx.recv().unwrap();
        TestDaemon {
            path,
            stopper,
            handle,
            _scratch: scratch,
        }
    }

    /// A daemon with its display server on a headless `width × height` screen; the control
    /// socket is `self.kds_path()`.
    pub fn start_kds(tag: &str, width: u32, height: u32) -> TestDaemon {
        TestDaemon::start(tag, EsmConfig::default(), move |d| {
            enable_headless_kds(d, width, height)
        })
    }

    /// As [`TestDaemon::start_kds`], with input from the evdev pipe `evdev` and a probe: each
    /// byte written to the returned pipe end makes the daemon's loop send `probe` of its state
    /// on the returned channel, so a test waits for a state by asking, never by sleeping.
    pub fn start_kds_probed<P: Send + 'static>(
        tag: &str,
        width: u32,
        height: u32,
        evdev: OwnedFd,
        probe: fn(&DaemonState) -> P,
    ) -> (TestDaemon, OwnedFd, mpsc::Receiver<P>) {
        let (probe_r, probe_w) = sys::pipe(true).unwrap();
        let (tx, probed) = mpsc::channel();
        let daemon = TestDaemon::start(tag, EsmConfig::default(), move |d| {
            enable_headless_kds(d, width, height)?;
            d.add_evdev(evdev)?;
            d.add_source(probe_source(probe_r, tx, probe))?;
            Ok(())
        });
        (daemon, probe_w, probed)
    }

    /// The display server's control socket of a daemon from [`TestDaemon::start_kds`].
    pub fn kds_path(&self) -> PathBuf {
        self.path.with_extension("kds.sock")
    }

    /// Stops the daemon and returns its report.
    pub fn stop(self) -> DaemonReport {
        self.stopper.stop();
        self.handle.join().unwrap()
    }
}

pub use lull_actuate::test_support::{
    advances, cgroup_line, namespace, serial_adoption, subdirs, thread_cgroups, wait_until,
    Spinner, GIVE_UP,
};

/// The boost's part of the event path outside a daemon, for its benchmark
/// (`benches/boost_path.rs`): a seam with [`BoostSeam`] alone, its deadline timer and, in nice
/// mode, the run-queue sampler, and one app whose event and drawing threads are two parked threads
/// of this process. [`BoostPath::push`] is what the daemon does before writing a push,
/// [`BoostPath::wait`] what it does at the app's next `Wait`.
#[derive(Debug)]
pub struct BoostPath {
    host: SeamHost,
    app: AppId,
    /// The push stamp, advanced by the run-queue sampler's period per push so that every push
    /// reads the count (the dearest case).
    stamp_ns: u64,
    /// Pushes are stamped two budgets before now ([`BoostPath::stamp_in_the_past`]).
    past_ns: Option<u64>,
    _parked: [Parked; 2],
}

/// A parked thread of this process; dropping this ends it.
#[derive(Debug)]
struct Parked {
    _end: mpsc::Sender<()>,
}

fn parked() -> (Parked, i32) {
    let (tid_tx, tid_rx) = mpsc::channel();
    let (end, end_rx) = mpsc::channel::<()>();
    thread::spawn(move || {
        let _ = tid_tx.send(sys::gettid());
        let _ = end_rx.recv();
    });
    (Parked { _end: end }, tid_rx.recv().unwrap_or(0))
}

impl BoostPath {
    /// A seam boosting with `config`.
    ///
    /// # Panics
    /// When the kernel refuses a timer or `/proc/loadavg` (a broken machine).
    #[must_use]
    pub fn new(config: BoostSeamConfig) -> BoostPath {
        let policy = BoostSeam::new(config).expect("a valid configuration");
        let mut host = SeamHost::new(
            vec![Box::new(policy)],
            Actuator::new(Err("none in this benchmark".into())),
        );
        host.set_timer(TimerFd::new().expect("timerfd"));
        if host.wants_run_queues() {
            host.start_run_queues(RunQueueSampler::new(
                RunnableProbe::open().expect("/proc/loadavg"),
                2,
            ));
        }
        let app = AppId {
            index: 0,
            generation: 0,
        };
        let pid = std::process::id() as i32;
        let start = lull_os::procfs::process_start_ticks(pid).unwrap_or(0);
        let (a, event_tid) = parked();
        let (b, drawing_tid) = parked();
        host.connected(app);
        for (category, tid) in [
            (ThreadCategory::Event, event_tid),
            (ThreadCategory::Drawing, drawing_tid),
        ] {
            let thread = ThreadRef {
                pid,
                tid,
                process_start_ticks: start,
            };
            host.declare(0, app, category, thread);
        }
        BoostPath {
            host,
            app,
            stamp_ns: sys::monotonic_ns(),
            past_ns: None,
            _parked: [a, b],
        }
    }

    /// A push to the app.
    pub fn push(&mut self) {
        self.stamp_ns = match self.past_ns {
            Some(back) => sys::monotonic_ns().saturating_sub(back),
            None => self.stamp_ns + crate::seam::RUN_QUEUE_SAMPLE_MIN_NS,
        };
        self.host.input_pushed(self.stamp_ns, self.app);
    }

    /// The app's next `Wait`.
    pub fn wait(&mut self) {
        self.host.waited(self.stamp_ns, self.app);
    }

    /// The budget's end, as the deadline timer would run it now.
    pub fn budget_end(&mut self) {
        self.host.deadline();
    }

    /// Pushes stamped two budgets (`c_ns` each) before the clock from now on, so that
    /// [`BoostPath::budget_end`] finds the budget over (and the run queues are read at most once
    /// per sampling period of real time, as in the daemon).
    pub fn stamp_in_the_past(&mut self, c_ns: u64) {
        self.past_ns = Some(2 * c_ns);
    }

    /// What the seam did.
    #[must_use]
    pub fn report(&self) -> SeamReport {
        self.host.report()
    }
}
