//! Live: guiS in `lulld` — the kernel freezes a drawing thread that ignores its gate while its
//! app cannot be seen and thaws it when it can; a cooperative drawing thread parks instead and
//! is never frozen; threads and processes that are not GUI threads are never touched; with guiS
//! off nothing is; idle forcing fires its action once per entry into idle. The kernel parts need
//! root and a cgroup freezer and print `SKIPPED` otherwise; the rest runs anywhere.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lull::client::EsmClient;
use lull::kds_client::KdsAdmin;
use lull::kds_runtime::KdsApp;
use lull_actuate::freezer::FreezerKind;
use lull_esm::EsmConfig;
use lull_kds::{Fill, Layer, Rect, Surface};
use lull_model::{Screen, Stacking, ThreadCategory, Visibility, WindowState};
use lull_os::procfs::{sample, sample_thread};
use lull_os::sys::gettid;
use lulld::daemon::{Daemon, DaemonConfig, DaemonError};
use lulld::guis::{GuisConfig, GuisStatus, IdleAction, KernelEnforcement};
use lulld::policy::PolicyError;
use lulld::test_support::{
    advances, namespace, serial_adoption, subdirs, thread_cgroups, wait_until, Spinner, TestDaemon,
    GIVE_UP,
};

/// A test daemon that is stopped when dropped, so a failing test still gives back this process
/// and removes the freezer's cgroups.
struct Running(Option<TestDaemon>);

impl std::ops::Deref for Running {
    type Target = TestDaemon;
    fn deref(&self) -> &TestDaemon {
        self.0.as_ref().expect("running until stopped")
    }
}

impl Running {
    fn stop(mut self) -> lulld::daemon::DaemonReport {
        self.0.take().expect("running until stopped").stop()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(d) = self.0.take() {
            d.stop();
        }
    }
}

/// A child process that is killed when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A daemon with its display server and guiS as `config` says (the namespace is made unique).
fn start(tag: &str, mut config: GuisConfig) -> (Running, GuisStatus) {
    config.freezer_namespace = namespace(tag);
    let (tx, rx) = mpsc::channel();
    let d = TestDaemon::start(tag, EsmConfig::default(), move |d| {
        lulld::test_support::enable_headless_kds(d, 320, 240)?;
        let status = d.enable_guis(&config).map_err(std::io::Error::other)?;
        tx.send(status).map_err(std::io::Error::other)
    });
    let status = rx.recv().unwrap();
    println!("{status}");
    (Running(Some(d)), status)
}

fn pid() -> i32 {
    std::process::id() as i32
}

/// The declared thread of `category` of the only window of app `app`.
fn declared(admin: &mut KdsAdmin, app: &KdsApp, category: ThreadCategory) -> i32 {
    let w = admin.windows().unwrap();
    let info = w.iter().find(|w| w.app == app.app()).unwrap();
    let i = ThreadCategory::ALL
        .iter()
        .position(|c| *c == category)
        .unwrap();
    info.threads[i].unwrap() as i32
}

/// What the kernel says of the cgroup guiS made for thread `tid` (`<root>/<pid>/<category>-<tid>`).
fn kernel_frozen(status: &GuisStatus, category: ThreadCategory, tid: i32) -> bool {
    let (kind, root) = status.freezer().unwrap();
    let dir = root
        .join(pid().to_string())
        .join(format!("{category}-{tid}"));
    match kind {
        FreezerKind::V2Threaded => std::fs::read_to_string(dir.join("cgroup.events"))
            .unwrap()
            .lines()
            .any(|l| l == "frozen 1"),
        FreezerKind::V1 => {
            std::fs::read_to_string(dir.join("freezer.state"))
                .unwrap()
                .trim()
                == "FROZEN"
        }
    }
}

/// The cgroup lines of the process or thread whose `/proc` file is `path`.
fn cgroups(path: &str) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// Hands the app's drawing thread a loop that ignores its gate: it spins on a counter until
/// `stop`. Returns the counter and the thread's id.
fn spin_on_drawing_thread(app: &KdsApp, stop: &Arc<AtomicBool>) -> (Arc<AtomicU64>, i32) {
    let count = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::channel();
    let (c, s) = (count.clone(), stop.clone());
    app.run_on(ThreadCategory::Drawing, move |_ctx| {
        tx.send(gettid()).unwrap();
        while !s.load(Ordering::Relaxed) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    })
    .unwrap();
    let tid = rx.recv().unwrap();
    (count, tid)
}

#[test]
fn enable_guis_needs_the_display_server() {
    let scratch = lull_os::fileout::ScratchDir::new("lull-test-guis-nokds").unwrap();
    let path = scratch.path().join("esm.sock");
    let mut d = Daemon::bind(&DaemonConfig {
        socket_path: path.clone(),
        esm: EsmConfig::default(),
    })
    .unwrap();
    assert!(matches!(
        d.enable_guis(&GuisConfig::default()),
        Err(DaemonError::Policy(PolicyError::NeedsDisplayServer {
            policy: "guis"
        }))
    ));
    drop(d);
}

#[test]
fn gate_ignoring_drawing_thread_is_frozen_then_thawed() {
    let _serial = serial_adoption();
    let (daemon, status) = start("frozen", GuisConfig::default());
    if !status.kernel_enforced() {
        lull_testkit::skip(&status);
        daemon.stop();
        return;
    }
    let (kind, root) = status.freezer().map(|(k, r)| (k, r.to_owned())).unwrap();
    // Not GUI threads: a thread of this process and another process.
    let plain = Spinner::start();
    let plain_before = thread_cgroups(plain.tid);
    let other = std::process::Command::new("sleep")
        .arg("3600")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let other = KillOnDrop(other);
    let other_path = format!("/proc/{}/cgroup", other.0.id());
    let other_before = cgroups(&other_path);

    let app = common::attach_small(&daemon.kds_path(), "spinner", true);
    let stop = Arc::new(AtomicBool::new(false));
    let (count, tid) = spin_on_drawing_thread(&app, &stop);
    let mut admin = KdsAdmin::connect(&daemon.kds_path()).unwrap();
    assert_eq!(declared(&mut admin, &app, ThreadCategory::Drawing), tid);
    let counter = || count.load(Ordering::Relaxed);
    advances("spinning drawing thread", counter);
    assert!(!kernel_frozen(&status, ThreadCategory::Drawing, tid));

    // The spinner never blocks by itself, so a rise of its voluntary switches is the freeze.
    let voluntary = sample(tid).unwrap().voluntary;
    admin.background(app.app()).unwrap();
    wait_until("the kernel freezes the drawing thread", || {
        kernel_frozen(&status, ThreadCategory::Drawing, tid)
    });
    wait_until("the frozen thread leaves the CPU", || {
        sample(tid).unwrap().voluntary > voluntary
    });
    let (frozen_at, run_ns) = (counter(), sample(tid).unwrap().run_ns);
    // A fixed amount of work elsewhere: the plain thread counts a million more.
    let p0 = plain.count();
    wait_until("the plain thread runs", || plain.count() > p0 + 1_000_000);
    assert_eq!(counter(), frozen_at, "frozen drawing thread ran");
    assert_eq!(sample(tid).unwrap().run_ns, run_ns);

    // The plain thread is in no cgroup of guiS's that could freeze: with v1 it never moved;
    // with v2 the process's domain holds it (cgroup v2 moves processes, not threads, between
    // domains), which is never frozen.
    let plain_now = thread_cgroups(plain.tid);
    match kind {
        FreezerKind::V1 => assert_eq!(plain_now, plain_before),
        FreezerKind::V2Threaded => {
            let line = plain_now.lines().find(|l| l.starts_with("0::")).unwrap();
            assert!(line.ends_with(&format!("/{}", pid())), "{line}");
            assert!(!line.contains(&format!("drawing-{tid}")));
            let domain = root.join(pid().to_string());
            let freeze = std::fs::read_to_string(domain.join("cgroup.freeze")).unwrap();
            assert_eq!(freeze.trim(), "0");
        }
    }
    assert_eq!(cgroups(&other_path), other_before);

    admin.foreground(app.app()).unwrap();
    wait_until("the kernel thaws the drawing thread", || {
        !kernel_frozen(&status, ThreadCategory::Drawing, tid)
    });
    advances("thawed drawing thread", counter);

    stop.store(true, Ordering::Relaxed);
    app.detach().unwrap();
    // The daemon releases the process right after answering DETACH, before it serves the next
    // request: once the window list no longer has the app, the process is back where it was.
    assert!(admin.windows().unwrap().is_empty());
    assert_eq!(thread_cgroups(plain.tid), plain_before);
    assert_eq!(cgroups(&other_path), other_before);
    drop(plain);
    drop(other);
    let report = daemon.stop();
    let g = report.guis.unwrap().counters;
    println!("{g:?}");
    assert_eq!(g.freezer.adopted, 2, "drawing and foreground threads");
    assert_eq!(g.freezer.adopt_failed, 0);
    assert_eq!(g.freezer.freezes, 1);
    assert_eq!(g.freezer.thaws, 1);
    assert_eq!(g.freezer.freeze_errors, 0);
    assert_eq!(g.freezer.released, 1);
    assert!(!root.exists(), "the freezer's cgroups are removed at stop");
    report.accounting.unwrap();
}

#[test]
fn redeclared_drawing_thread_is_given_back() {
    let _serial = serial_adoption();
    // Made before the daemon so they are dropped (joined) after it, when nothing is frozen.
    let t1 = Spinner::start();
    let t2 = Spinner::start();
    let before = [t1.tid, t2.tid, gettid()].map(thread_cgroups);
    let (daemon, status) = start("redeclare", GuisConfig::default());
    if !status.kernel_enforced() {
        lull_testkit::skip(&status);
        daemon.stop();
        return;
    }
    let root = status.freezer().unwrap().1.to_owned();
    let domain = root.join(pid().to_string());
    let app = common::attach_small(&daemon.kds_path(), "redeclare", true);
    let mut admin = KdsAdmin::connect(&daemon.kds_path()).unwrap();
    let runtime_drawing = declared(&mut admin, &app, ThreadCategory::Drawing);
    let runtime_foreground = declared(&mut admin, &app, ThreadCategory::Foreground);
    // Drawing forbidden from here on: every spinner adopted as drawing thread is frozen.
    wait_until("runtime threads asleep", || {
        asleep(runtime_drawing) && asleep(runtime_foreground)
    });
    let pushes = app.counters().state_pushes;
    admin.background(app.app()).unwrap();
    app.wait_until(|c| c.state_pushes > pushes);
    // The push wakes them to re-check their gates; parked again, they are left alone (not
    // frozen) at each adoption below.
    wait_until("runtime threads parked again", || {
        asleep(runtime_drawing) && asleep(runtime_foreground)
    });

    let steps = [
        (t1.tid, runtime_drawing, None),
        (t2.tid, t1.tid, Some(&t1)),
        (t1.tid, t2.tid, Some(&t2)),
    ];
    for (tid, old, old_spinner) in steps {
        app.declare_thread(ThreadCategory::Drawing, tid).unwrap();
        // The daemon adopts right after answering THREAD, before it serves this request.
        assert_eq!(declared(&mut admin, &app, ThreadCategory::Drawing), tid);
        assert!(domain.join(format!("drawing-{tid}")).is_dir());
        assert!(!domain.join(format!("drawing-{old}")).exists());
        wait_until("the kernel freezes the new drawing thread", || {
            kernel_frozen(&status, ThreadCategory::Drawing, tid)
        });
        if let Some(s) = old_spinner {
            advances("the replaced thread runs again", || s.count());
        }
    }

    app.detach().unwrap();
    // Released right after DETACH is answered, before the next request is served.
    assert!(admin.windows().unwrap().is_empty());
    assert!(!domain.exists());
    assert!(subdirs(&root).is_empty(), "{:?}", subdirs(&root));
    advances("the last drawing thread is thawed", || t1.count());
    assert_eq!([t1.tid, t2.tid, gettid()].map(thread_cgroups), before);
    let g = daemon.stop().guis.unwrap().counters;
    println!("{g:?}");
    // The runtime's drawing and foreground threads, then T1, T2, T1.
    assert_eq!(g.freezer.adopted, 5);
    assert_eq!(g.freezer.adopt_failed, 0);
    assert_eq!(g.freezer.freezes, 3);
    assert_eq!(
        (
            g.freezer.released,
            g.freezer.release_errors,
            g.freezer.pid_reused
        ),
        (1, 0, 0)
    );
    assert!(!root.exists());
}

/// The runtime's drawing thread, drawing one frame per request and acknowledging it.
fn cooperative_drawer(app: &KdsApp) -> (mpsc::Sender<()>, mpsc::Receiver<()>) {
    let (req_tx, req_rx) = mpsc::channel::<()>();
    let (ack_tx, ack_rx) = mpsc::channel::<()>();
    app.run_on(ThreadCategory::Drawing, move |ctx| {
        while req_rx.recv().is_ok() {
            let s = Surface {
                width: 8,
                height: 8,
                layers: vec![Layer {
                    z: 0,
                    rect: Rect::new(0, 0, 8, 8),
                    fill: Fill::Solid(0xff00_80ff),
                }],
            };
            if ctx.compose(1, s).is_err() || ctx.draw(1, 0, 0).is_err() {
                return;
            }
            if ack_tx.send(()).is_err() {
                return;
            }
        }
    })
    .unwrap();
    (req_tx, ack_rx)
}

fn asleep(tid: i32) -> bool {
    sample_thread(pid(), tid).is_ok_and(|s| s.state == 'S')
}

#[test]
fn cooperative_drawing_thread_parks_and_never_draws_unseen() {
    let _serial = serial_adoption();
    let (daemon, status) = start("parks", GuisConfig::default());
    let app = common::attach_small(&daemon.kds_path(), "cooperative", true);
    let (frame, drawn) = cooperative_drawer(&app);
    let mut admin = KdsAdmin::connect(&daemon.kds_path()).unwrap();
    let drawing = declared(&mut admin, &app, ThreadCategory::Drawing);
    let foreground = declared(&mut admin, &app, ThreadCategory::Foreground);
    frame.send(()).unwrap();
    drawn.recv().unwrap();
    assert_eq!(app.counters().draws, 1);

    let id = app.app();
    type Wm = fn(&mut KdsAdmin, lull_model::AppId);
    let hide_show: [(&str, Wm, Wm, WindowState); 3] = [
        (
            "covered",
            |a, app| a.cover(app, true).unwrap(),
            |a, app| a.cover(app, false).unwrap(),
            WindowState {
                visibility: Visibility::Covered,
                ..WindowState::FRONT
            },
        ),
        (
            "background",
            |a, app| a.background(app).unwrap(),
            |a, app| a.foreground(app).unwrap(),
            WindowState {
                stacking: Stacking::Background,
                ..WindowState::FRONT
            },
        ),
        (
            "screen off",
            |a, _| a.set_screen(Screen::Off).unwrap(),
            |a, _| a.set_screen(Screen::On).unwrap(),
            WindowState {
                screen: Screen::Off,
                ..WindowState::FRONT
            },
        ),
    ];
    for (what, hide, show, hidden) in hide_show {
        // Both gated threads blocked in the runtime before the change: nothing to freeze.
        wait_until("gated threads asleep", || {
            asleep(drawing) && asleep(foreground)
        });
        let pushes = app.counters().state_pushes;
        hide(&mut admin, id);
        app.wait_until(|c| c.state_pushes > pushes);
        assert_eq!(app.window_state(), hidden, "{what}");
        let (parks, draws) = (app.counters().parks, app.counters().draws);
        frame.send(()).unwrap();
        wait_until("the drawing thread parks at its gate", || {
            app.counters().parks > parks
        });
        assert_eq!(app.counters().draws, draws, "drew while {what}");
        if status.kernel_enforced() {
            assert!(!kernel_frozen(&status, ThreadCategory::Drawing, drawing));
        }
        let pushes = app.counters().state_pushes;
        show(&mut admin, id);
        app.wait_until(|c| c.state_pushes > pushes);
        drawn.recv().unwrap();
        assert_eq!(app.counters().draws, draws + 1, "after {what}");
    }
    drop(frame);
    let counters = app.detach().unwrap();
    assert!(counters.parks >= 3, "{counters:?}");
    let report = daemon.stop();
    let g = report.guis.unwrap().counters;
    println!("{g:?}");
    if status.kernel_enforced() {
        assert_eq!(
            g.freezer.freezes, 0,
            "cooperative threads park; none is frozen"
        );
        assert_eq!(g.freezer.adopted, 2);
        // Drawing and foreground in the background, drawing when covered and screen off.
        assert_eq!(g.freezer.left_parked, 4);
    } else {
        lull_testkit::skip(format!("kernel part: {status}"));
    }
}

#[test]
fn guis_off_freezes_nothing() {
    let _serial = serial_adoption();
    let config = GuisConfig {
        enabled: false,
        ..GuisConfig::default()
    };
    let (daemon, status) = start("off", config.clone());
    assert!(!status.enabled());
    assert_eq!(status.kernel, KernelEnforcement::Off);
    let app = common::attach_small(&daemon.kds_path(), "ungated", false);
    let stop = Arc::new(AtomicBool::new(false));
    let (count, tid) = spin_on_drawing_thread(&app, &stop);
    let before = thread_cgroups(tid);
    let mut admin = KdsAdmin::connect(&daemon.kds_path()).unwrap();
    let pushes = app.counters().state_pushes;
    admin.background(app.app()).unwrap();
    app.wait_until(|c| c.state_pushes > pushes);
    assert_eq!(app.window_state().stacking, Stacking::Background);
    advances("drawing thread keeps running", || {
        count.load(Ordering::Relaxed)
    });
    assert_eq!(thread_cgroups(tid), before);
    let ns = namespace("off");
    for mount in [
        "/sys/fs/cgroup",
        "/sys/fs/cgroup/unified",
        "/sys/fs/cgroup/freezer",
    ] {
        assert!(!Path::new(mount).join(&ns).exists());
    }
    stop.store(true, Ordering::Relaxed);
    app.detach().unwrap();
    let report = daemon.stop();
    assert!(report.guis.is_none());
}

fn screen(admin: &mut KdsAdmin) -> Screen {
    let w = admin.windows().unwrap();
    w.first().map_or(Screen::On, |w| w.state.screen)
}

/// guiS turning the screen off when every app is idle.
fn screen_off_when_idle() -> GuisConfig {
    GuisConfig {
        idle_action: IdleAction::ScreenOff,
        ..GuisConfig::default()
    }
}

/// Waits until the ESM has `n` apps in `EV_WAIT`, so every `Wait` has been evaluated.
fn esm_waiting(d: &Running, n: u32) {
    let mut esm = EsmClient::connect(&d.path).unwrap();
    wait_until("event threads waiting", || {
        esm.stats().unwrap().waiting == n
    });
}

#[test]
fn idle_forcing_turns_the_screen_off_once() {
    let _serial = serial_adoption();
    let (daemon, _status) = start("idle", screen_off_when_idle());
    let app = common::attach_small(&daemon.kds_path(), "alone", true);
    esm_waiting(&daemon, 1);
    let mut admin = KdsAdmin::connect(&daemon.kds_path()).unwrap();
    assert_eq!(screen(&mut admin), Screen::On, "a visible app can draw");
    admin.background(app.app()).unwrap();
    // Every app waits and none may draw or do foreground work: the screen goes off at once.
    wait_until("screen off", || screen(&mut admin) == Screen::Off);
    let w = admin.windows().unwrap();
    assert_eq!(
        w[0].state,
        WindowState {
            stacking: Stacking::Background,
            visibility: Visibility::Visible,
            screen: Screen::Off,
        }
    );
    // Still idle: no second firing.
    admin.cover(app.app(), true).unwrap();
    assert_eq!(screen(&mut admin), Screen::Off);
    app.wait_until(|c| c.state_pushes >= 4);
    assert_eq!(app.window_state().screen, Screen::Off);
    app.detach().unwrap();
    let g = daemon.stop().guis.unwrap().counters;
    println!("{g:?}");
    assert_eq!(g.idle_forced, 1);
    assert_eq!(g.idle_screen_off, 1);
}

#[test]
fn idle_forcing_waits_while_a_drawing_thread_may_run() {
    let _serial = serial_adoption();
    let (daemon, _status) = start("busy", screen_off_when_idle());
    let back = common::attach_small(&daemon.kds_path(), "back", true);
    let front = common::attach_small(&daemon.kds_path(), "front", true);
    esm_waiting(&daemon, 2);
    let mut admin = KdsAdmin::connect(&daemon.kds_path()).unwrap();
    let w = admin.windows().unwrap();
    assert_eq!(w.len(), 2);
    assert_eq!(w[0].app, back.app());
    assert_eq!(w[0].state.stacking, Stacking::Background);
    // Both event threads wait, but the front app's drawing thread may run.
    assert_eq!(screen(&mut admin), Screen::On);
    // Covered, its foreground thread still may run.
    admin.cover(front.app(), true).unwrap();
    assert_eq!(screen(&mut admin), Screen::On);
    admin.background(front.app()).unwrap();
    wait_until("screen off", || screen(&mut admin) == Screen::Off);
    front.detach().unwrap();
    back.detach().unwrap();
    let g = daemon.stop().guis.unwrap().counters;
    println!("{g:?}");
    assert_eq!(g.idle_forced, 1);
}

#[test]
fn idle_exec_runs_the_command_with_the_app_count() {
    let _serial = serial_adoption();
    let scratch = lull_os::fileout::ScratchDir::new("lull-test-idle-exec").unwrap();
    let out = scratch.path().join("apps");
    let tmp = out.with_extension("tmp");
    let config = GuisConfig {
        idle_action: IdleAction::Exec(format!(
            "echo \"$LULL_IDLE_APPS\" > '{}' && mv '{}' '{}'",
            tmp.display(),
            tmp.display(),
            out.display()
        )),
        ..GuisConfig::default()
    };
    let (daemon, _status) = start("exec", config);
    let app = common::attach_small(&daemon.kds_path(), "exec", true);
    esm_waiting(&daemon, 1);
    let mut admin = KdsAdmin::connect(&daemon.kds_path()).unwrap();
    admin.background(app.app()).unwrap();
    wait_until("the idle command ran", || out.exists());
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "1\n");
    app.detach().unwrap();
    let g = daemon.stop().guis.unwrap().counters;
    assert_eq!(g.idle_forced, 1);
    assert_eq!(g.idle_exec_spawned, 1);
    assert_eq!(g.idle_exec_failed, 0);
}

/// Measures, on this machine, how long the kernel takes to confirm a freeze and a thaw of a
/// spinning thread, and the whole path from a window-manager request to a frozen thread. Prints
/// the figures; asserts nothing about them. Run with `--ignored --nocapture`.
#[test]
#[ignore = "measurement; run by hand"]
fn measure_freeze_thaw_latency() {
    use lull_actuate::freezer::Freezer;
    const ROUNDS: usize = 200;
    let _serial = serial_adoption();
    let med = |v: &mut Vec<Duration>| {
        v.sort();
        let at = |p| lull_model::stats::nearest_rank(v, p).expect("rounds were measured");
        (at(50), at(90))
    };
    for kind in [FreezerKind::V2Threaded, FreezerKind::V1] {
        let ns = namespace("latency");
        let mut f = match Freezer::open_kind(&ns, kind) {
            Ok(f) => f,
            Err(e) => {
                println!("SKIPPED {kind}: {e}");
                continue;
            }
        };
        let s = Spinner::start();
        let h = f.adopt(pid(), s.tid, "drawing").unwrap();
        let (mut freeze, mut thaw) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let t = Instant::now();
            f.freeze(&h).unwrap();
            f.wait_settled(&h, true, GIVE_UP).unwrap();
            freeze.push(t.elapsed());
            let t = Instant::now();
            f.thaw(&h).unwrap();
            f.wait_settled(&h, false, GIVE_UP).unwrap();
            thaw.push(t.elapsed());
        }
        f.close().unwrap();
        drop(s);
        let (fm, f9) = med(&mut freeze);
        let (tm, t9) = med(&mut thaw);
        println!(
            "{kind}: freeze confirmed median {fm:?} p90 {f9:?}; thaw confirmed median {tm:?} p90 {t9:?}"
        );
    }

    // Window-manager request to frozen drawing thread, through the daemon.
    let (daemon, status) = start("latency-wm", GuisConfig::default());
    if !status.kernel_enforced() {
        daemon.stop();
        return;
    }
    let app = common::attach_small(&daemon.kds_path(), "latency", true);
    let stop = Arc::new(AtomicBool::new(false));
    let (_count, tid) = spin_on_drawing_thread(&app, &stop);
    let mut admin = KdsAdmin::connect(&daemon.kds_path()).unwrap();
    let (mut to_frozen, mut to_thawed) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let t = Instant::now();
        admin.background(app.app()).unwrap();
        wait_until("frozen", || {
            kernel_frozen(&status, ThreadCategory::Drawing, tid)
        });
        to_frozen.push(t.elapsed());
        let t = Instant::now();
        admin.foreground(app.app()).unwrap();
        wait_until("thawed", || {
            !kernel_frozen(&status, ThreadCategory::Drawing, tid)
        });
        to_thawed.push(t.elapsed());
    }
    stop.store(true, Ordering::Relaxed);
    app.detach().unwrap();
    daemon.stop();
    println!(
        "WM request -> frozen median {:?} p90 {:?}; WM request -> thawed median {:?} p90 {:?}",
        med(&mut to_frozen).0,
        med(&mut to_frozen).1,
        med(&mut to_thawed).0,
        med(&mut to_thawed).1
    );
}
