//! The controller interface on this machine: registering, following threads born later, a
//! process exiting mid-watch, the errors, and `run` under toggling.
//!
//! The processes watched are this test binary run again with `LULL_CTL_ROLE` set (see
//! [`role_entry`]): each role waits on its standard input or a deadline it reports, never on a
//! sleep. Tests that need root skip with a message when not root.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use lull_ctl::{run, watch, Ctl, CtlError, FollowMode, Registry, RunOptions, WatchOptions};
use lull_os::sys;
use lull_sched::controller::{CoreSets, Scheme};
use lull_sched::seam::CpuMask;

const ROLE: &str = "LULL_CTL_ROLE";

fn is_root() -> bool {
    if sys::geteuid() == 0 {
        return true;
    }
    lull_testkit::skip("needs root (the proc connector and setting other processes' masks)");
    false
}

/// Not a test of its own: the entry of this binary run as a helper process, ignored so that it
/// is not counted as a test that passed. Without `LULL_CTL_ROLE` it does nothing.
/// A thread of this process parked until `finish`.
struct Parked {
    tid: i32,
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Parked {
    fn start() -> Parked {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, stop_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            tx.send(sys::gettid()).unwrap();
            let _ = stop_rx.recv();
        });
        let tid = rx.recv().unwrap();
        Parked { tid, stop, thread }
    }

    fn finish(self) {
        self.stop.send(()).unwrap();
        self.thread.join().unwrap();
    }
}

#[test]
#[ignore = "the helper process's entry, run by the tests with LULL_CTL_ROLE set"]
fn role_entry() {
    match std::env::var(ROLE).as_deref() {
        // One more thread per line read, answered `thread-ready` once it exists; ends at end of input.
        Ok("threads") => {
            let stdin = std::io::stdin();
            let mut out = std::io::stdout();
            let mut keep = Vec::new();
            for line in stdin.lock().lines() {
                if line.is_err() {
                    break;
                }
                let (r, w) = sys::pipe(false).unwrap();
                keep.push(w);
                std::thread::spawn(move || {
                    let mut b = [0u8; 1];
                    let _ = sys::read(std::os::fd::AsRawFd::as_raw_fd(&r), &mut b);
                });
                writeln!(out, "thread-ready").unwrap();
                out.flush().unwrap();
            }
            std::process::exit(0);
        }
        // Busy until its CPU mask has been seen to change three times (writes the masks seen to
        // `LULL_CTL_OUT`), or `LULL_CTL_BUSY_MS` have passed. Ending at the third change, not
        // the second, keeps it running through a whole period on the second set, so the
        // controller's samples see it there whatever the timing.
        Ok("busy") => {
            let limit_ns: u64 = std::env::var("LULL_CTL_BUSY_MS")
                .unwrap()
                .parse::<u64>()
                .unwrap()
                * 1_000_000;
            let tid = sys::gettid();
            let first = sys::sched_getaffinity(tid).unwrap().low_mask();
            let start = sys::monotonic_ns();
            let mut masks = vec![first];
            let mut x = 1u64;
            while sys::monotonic_ns() - start < limit_ns {
                for _ in 0..100_000 {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
                let m = sys::sched_getaffinity(tid).unwrap().low_mask();
                if masks.last() != Some(&m) {
                    masks.push(m);
                }
                if masks.len() >= 4 {
                    break;
                }
            }
            let path = std::env::var("LULL_CTL_OUT").unwrap();
            std::fs::write(path, format!("{masks:?}")).unwrap();
            std::process::exit(0);
        }
        // As the unprivileged user: set the mask of the thread named, report the error kind.
        Ok("nobody") => {
            let tid: i32 = std::env::var("LULL_CTL_TID").unwrap().parse().unwrap();
            let mut ctl = Ctl::new();
            let follow = match ctl.registry().follow_mode() {
                FollowMode::Connector => "connector".to_owned(),
                FollowMode::Rescan { reason } => format!("rescan: {reason}"),
            };
            let r = ctl.set_mask(tid, 1);
            let kind = match &r {
                Err(CtlError::PermissionDenied { .. }) => "permission",
                Err(_) => "other",
                Ok(()) => "ok",
            };
            println!(
                "{kind}|{follow}|{}",
                r.err().map(|e| e.to_string()).unwrap_or_default()
            );
            std::process::exit(0);
        }
        // Runs a command that prints its pid and sleeps for ever; the test then kills this
        // process and checks the command went with it.
        Ok("starter") => {
            let report = run(&RunOptions {
                command: vec![
                    "sh".into(),
                    "-c".into(),
                    "echo command-pid=$$; exec sleep 1000".into(),
                ],
                scheme: Scheme::Baseline,
                sets: CoreSets {
                    fast: CpuMask(0b01),
                    slow: CpuMask(0),
                },
                sample_period_ns: 0,
                discard_output: false,
            });
            println!("run ended: {report:?}");
            std::process::exit(0);
        }
        _ => {}
    }
}

/// This test binary run again as the helper process `role` (see [`role_entry`]).
fn role_command(role: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        "role_entry",
        "--ignored",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(ROLE, role);
    c
}

struct Helper {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Helper {
    fn threads() -> Helper {
        let mut child = role_command("threads")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Helper {
            child,
            stdin,
            stdout,
        }
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Asks for one more thread and waits until it exists.
    fn spawn_thread(&mut self) {
        writeln!(self.stdin.as_mut().unwrap(), "go").unwrap();
        let mut line = String::new();
        // The harness prints its own text first, on the same line.
        while !line.trim_end().ends_with("thread-ready") {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "helper ended"
            );
        }
    }

    fn end(mut self) {
        drop(self.stdin.take());
        assert!(self.child.wait().unwrap().success());
    }
}

fn tids_of(samples: &[lull_ctl::Sample]) -> Vec<i32> {
    samples.iter().map(|s| s.tid).collect()
}

fn follows_threads_born_later(mut ctl: Ctl, want: &FollowMode) {
    let mut h = Helper::threads();
    h.spawn_thread();
    let adopted = ctl.register(h.pid()).unwrap();
    assert!(adopted.iter().any(|t| t.tid == h.pid()));
    assert_eq!(
        std::mem::discriminant(ctl.registry().follow_mode()),
        std::mem::discriminant(want)
    );
    let before = tids_of(ctl.sample().unwrap());
    assert_eq!(before.len(), adopted.len());
    h.spawn_thread();
    h.spawn_thread();
    let after = tids_of(ctl.sample().unwrap());
    assert_eq!(after.len(), before.len() + 2, "{before:?} → {after:?}");
    let s = ctl.sample().unwrap();
    assert!(s.iter().all(|s| s.pid == h.pid() && s.state != 'Z'));
    h.end();
    // Gone: the next samples end.
    assert!(ctl.sample().is_none() || ctl.sample().is_none());
}

#[test]
fn threads_born_after_registration_are_followed_through_the_connector() {
    if !is_root() {
        return;
    }
    follows_threads_born_later(Ctl::new(), &FollowMode::Connector);
}

#[test]
fn threads_born_after_registration_are_found_by_listing_without_it() {
    let mut reg = Registry::rescanning(false, "test");
    let mut h = Helper::threads();
    // One answered thread first: the helper is then inside its role, past the harness's own
    // thread start, so the count registered is the count the next sample starts from.
    h.spawn_thread();
    let n = reg.register(h.pid()).unwrap().len();
    h.spawn_thread();
    let (mut out, mut changes) = (Vec::new(), Vec::new());
    reg.sample(&mut out, &mut changes);
    assert_eq!(out.len(), n + 1);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(reg.counters().rescans, 1);
    h.end();
}

#[test]
fn a_process_exiting_mid_watch_is_a_clean_end() {
    let mut h = Helper::threads();
    h.spawn_thread();
    let mut stdin = h.stdin.take();
    let mut seen = 0;
    let summary = watch(
        WatchOptions {
            pid: h.pid(),
            interval_ns: 2_000_000,
            duration_ns: None,
        },
        |s| {
            assert_eq!(s.pid, h.pid());
            seen += 1;
            // After the first sample, let the helper end.
            drop(stdin.take());
        },
    )
    .unwrap();
    assert!(summary.process_exited);
    assert!(seen >= 2, "{seen}");
    assert!(summary.registry.samples >= 1);
    assert!(h.child.wait().unwrap().success());
}

#[test]
fn bad_pids_and_kernel_threads_are_refused() {
    let mut reg = Registry::rescanning(false, "test");
    for pid in [0, -1, 0x3fff_ffff] {
        assert!(
            matches!(reg.register(pid), Err(CtlError::NoSuchProcess { .. })),
            "{pid}"
        );
    }
    match reg.register(2) {
        Err(CtlError::KernelThread { pid: 2, comm }) => assert_eq!(comm, "kthreadd"),
        other => panic!("kthreadd: {other:?}"),
    }
    // A thread id that is not a process's.
    let parked = Parked::start();
    let tid = parked.tid;
    match reg.register(tid) {
        Err(CtlError::NotAProcess { tid: t, pid }) => {
            assert_eq!((t, pid), (tid, std::process::id() as i32));
        }
        other => panic!("a thread id: {other:?}"),
    }
    parked.finish();
    let mut ctl = Ctl::new();
    assert!(matches!(
        ctl.set_mask(0x3fff_ffff, 1),
        Err(CtlError::NoSuchThread { .. })
    ));
}

#[test]
fn an_unprivileged_caller_gets_a_permission_error() {
    if !is_root() {
        return;
    }
    // A root-owned thread the unprivileged user may not move: one parked in this process.
    let parked = Parked::start();
    let tid = parked.tid;
    let out = role_command("nobody")
        .env("LULL_CTL_TID", tid.to_string())
        .uid(65534)
        .gid(65534)
        .output();
    parked.finish();
    let out = match out {
        Ok(o) if o.status.success() => o,
        other => {
            lull_testkit::skip(format!(
                "the test binary cannot run as nobody here: {other:?}"
            ));
            return;
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains('|'))
        .unwrap_or_else(|| panic!("no answer from the helper: {text}"));
    // The harness prints `test role_entry ... ` first, on the same line.
    let line = line.rsplit("... ").next().unwrap_or(line);
    let mut parts = line.splitn(3, '|');
    assert_eq!(parts.next(), Some("permission"), "{line}");
    // Whether the connector opens for an unprivileged user depends on the kernel (Linux 6.x
    // lets any user listen); either way the mode is said.
    let follow = parts.next().unwrap();
    assert!(
        follow == "connector" || follow.starts_with("rescan: "),
        "{follow}"
    );
    assert!(parts.next().unwrap().contains("run as root"), "{line}");
}

use std::os::unix::process::CommandExt;

fn busy_run(scheme: Scheme, busy_ms: u64) -> (lull_ctl::RunReport, String) {
    // The busy program's report file, in a private directory removed on return.
    let scratch = lull_os::fileout::ScratchDir::new("lull-ctl-busy").unwrap();
    let out = scratch.path().join(format!("{}.masks", scheme.name()));
    let exe = std::env::current_exe().unwrap();
    // `env` sets the role: the command is what `lull ctl run -- …` would be given.
    let command = vec![
        "env".into(),
        format!("{ROLE}=busy").into(),
        format!("LULL_CTL_OUT={}", out.display()).into(),
        format!("LULL_CTL_BUSY_MS={busy_ms}").into(),
        exe.into_os_string(),
        "--exact".into(),
        "role_entry".into(),
        "--ignored".into(),
        "--nocapture".into(),
        "--test-threads".into(),
        "1".into(),
    ];
    let report = run(&RunOptions {
        command,
        scheme,
        sets: CoreSets {
            fast: CpuMask(0b01),
            slow: CpuMask(0b10),
        },
        sample_period_ns: 0,
        discard_output: true,
    })
    .unwrap();
    let masks = std::fs::read_to_string(&out).unwrap_or_default();
    (report, masks)
}

#[test]
fn run_under_toggling_moves_a_busy_thread_between_the_sets() {
    if !is_root() {
        return;
    }
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        lull_testkit::skip("toggling needs two CPUs");
        return;
    }
    let (report, masks) = busy_run(Scheme::parse("toggle-0.1s").unwrap(), 5000);
    assert_eq!(report.exit_code, Some(0), "{report:?}");
    assert_eq!(report.scheme, "toggle-0.1s");
    // The busy thread saw its own mask go from all CPUs to one set and then to the other.
    assert!(
        masks.contains(", 1") && masks.contains(", 2"),
        "masks seen: {masks}"
    );
    let applied = report.counter("masks_applied").unwrap();
    assert!(applied >= 2, "{:?}", report.controller);
    let busy = report
        .threads
        .iter()
        .max_by_key(|t| t.cpu_ns)
        .expect("a thread");
    let cpus: std::collections::BTreeSet<u32> = busy.placements.iter().map(|p| p.1).collect();
    assert_eq!(cpus.len(), 2, "{:?}", busy.placements);
    assert!(report.samples > 0 && report.sample_cost_ns_mean > 0);
}

#[test]
fn run_under_baseline_only_watches() {
    if !is_root() {
        return;
    }
    // Under baseline nothing moves the thread: the helper's own deadline (0.4 s) ends it, with
    // samples taken and no mask asked.
    let (report, masks) = busy_run(Scheme::Baseline, 400);
    assert_eq!(report.exit_code, Some(0));
    assert!(!masks.contains(','), "one mask only: {masks}");
    let masks_asked = report.counter("masks").unwrap();
    assert_eq!(masks_asked, 0);
    assert!(report.samples > 10);
}

fn run_sh(script: &str) -> lull_ctl::RunReport {
    run(&RunOptions {
        command: vec!["sh".into(), "-c".into(), script.into()],
        scheme: Scheme::Baseline,
        sets: CoreSets {
            fast: CpuMask(0b01),
            slow: CpuMask(0),
        },
        sample_period_ns: 0,
        discard_output: true,
    })
    .unwrap()
}

#[test]
fn a_run_ends_as_its_command_did() {
    let failed = run_sh("exit 3");
    assert_eq!((failed.exit_code, failed.signal), (Some(3), None));
    assert_eq!(failed.shell_status(), 3);
    let killed = run_sh("kill -TERM $$");
    assert_eq!((killed.exit_code, killed.signal), (None, Some(15)));
    assert_eq!(killed.shell_status(), 128 + 15);
    assert_eq!(run_sh("true").shell_status(), 0);
}

#[test]
fn the_command_does_not_outlive_the_process_that_runs_it() {
    let mut starter = role_command("starter")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(starter.stdout.take().unwrap());
    // The test harness writes its own text around it (on the same line, too).
    let pid: i32 = loop {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the starter ended early"
        );
        if let Some((_, p)) = line.trim().split_once("command-pid=") {
            break p.parse().unwrap();
        }
    };
    let pidfd = sys::pidfd_open(pid).expect("the command is running");
    starter.kill().unwrap();
    starter.wait().unwrap();
    // The command's pidfd turns readable when it exits; the bound only keeps a broken build
    // from hanging the suite.
    let mut ready = [false];
    let fd = std::os::fd::AsRawFd::as_raw_fd(&pidfd);
    let n = sys::poll_readable(&[fd], Some(60_000), &mut ready).unwrap();
    if n != 1 {
        // Do not leave it holding the suite's output open.
        let _ = sys::signal_process(u32::try_from(pid).unwrap(), 9);
    }
    assert_eq!(n, 1, "the command ({pid}) outlived the process that ran it");
}
