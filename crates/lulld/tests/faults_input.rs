//! Fault injection at lulld's inputs: a replay source that never ends
//! or never opens, absurd trace times, event sources that are no input device, options that mean
//! nothing in the mode, a directory where the socket goes. Each case runs the built `lulld`, under
//! its own hang guard, and asserts what the user sees: the exit status, a message naming the path
//! and the problem, and that nothing was created (start-up validates before it creates).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use lull_os::fileout::ScratchDir;
use lull_testkit::hang_guard::output_within;

/// Hang guard per case: each refusal happens before the daemon creates anything, in
/// milliseconds; a minute means it blocked (a FIFO's open, a read of /dev/zero).
const GUARD: Duration = Duration::from_secs(60);

/// A scratch directory of this test's own, removed on drop.
struct Scratch(ScratchDir);

impl Scratch {
    fn new(case: &str) -> Scratch {
        Scratch(ScratchDir::new(&format!("lulld-faults-input-{case}")).unwrap())
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    /// The names in the directory besides `keep` (what the daemon left behind).
    fn left_behind(&self, keep: &[&str]) -> Vec<String> {
        std::fs::read_dir(self.0.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !keep.contains(&n.as_str()))
            .collect()
    }
}

/// Runs lulld with `args` (its ESM socket in `dir`), killed if it outlives [`GUARD`].
fn lulld(dir: &Scratch, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lulld"));
    cmd.arg("--socket").arg(dir.path("esm.sock")).args(args);
    output_within(&mut cmd, GUARD)
}

/// Asserts lulld refused to start with exactly `message` and created nothing in `dir`.
fn refused(dir: &Scratch, args: &[&str], message: &str, keep: &[&str]) {
    let out = lulld(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end(), format!("lulld: {message}"), "{args:?}");
    assert_eq!(dir.left_behind(keep), Vec::<String>::new(), "{args:?}");
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn replay_of_dev_zero_is_refused_at_once() {
    let dir = Scratch::new("zero");
    refused(
        &dir,
        &["--replay", "/dev/zero"],
        "--replay: trace /dev/zero: is a character device, not a regular file",
        &[],
    );
}

#[test]
fn replay_of_a_fifo_is_refused_without_waiting_for_a_writer() {
    let dir = Scratch::new("fifo");
    let fifo = dir.path("trace.fifo");
    lull_os::fs::make_fifo(&fifo, 0o600).unwrap();
    refused(
        &dir,
        &["--replay", s(&fifo)],
        &format!(
            "--replay: trace {}: is a FIFO, not a regular file",
            fifo.display()
        ),
        &["trace.fifo"],
    );
}

#[test]
fn replay_of_an_event_at_u64_max_ns_is_refused() {
    let dir = Scratch::new("umax");
    let trace = dir.path("far.trace");
    std::fs::write(
        &trace,
        format!("lull-trace 1\n0 timer 0\n{} timer 1\n", u64::MAX),
    )
    .unwrap();
    let out = lulld(&dir, &["--no-kds", "--replay", s(&trace)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "lulld: --replay {}: line 3: time 18446744073709551615 ns is past the longest trace",
            trace.display()
        )),
        "{stderr}"
    );
    assert_eq!(dir.left_behind(&["far.trace"]), Vec::<String>::new());
}

#[test]
fn evdev_paths_that_are_no_input_device_are_named() {
    let dir = Scratch::new("evdev");
    let file = dir.path("records.bin");
    std::fs::write(&file, [0u8; 24]).unwrap();
    let tail =
        "not an input device (give /dev/input/eventN, or a pipe of struct input_event records)";
    for (path, found) in [
        ("/dev/null", "a character device that is not evdev"),
        (s(dir.0.path()), "a directory"),
        (s(&file), "a regular file"),
    ] {
        refused(
            &dir,
            &["--no-kds", "--evdev", path],
            &format!("evdev source {path}: is {found}, {tail}"),
            &["records.bin"],
        );
    }
}

#[test]
fn options_that_mean_nothing_in_the_mode_are_refused() {
    let dir = Scratch::new("options");
    let kds = dir.path("kds.sock");
    refused(
        &dir,
        &["--no-kds", "--kds-socket", s(&kds)],
        "--kds-socket names the display server's socket, which --no-kds turns off; drop one",
        &[],
    );
    refused(
        &dir,
        &["--no-kds", "--net-channel", "3"],
        "--net-channel is the channel of --udp's datagrams; it needs --udp",
        &[],
    );
}

#[test]
fn a_directory_at_the_socket_path_is_named_as_such() {
    let dir = Scratch::new("sockdir");
    let sock_dir = dir.path("esm.sock");
    std::fs::create_dir(&sock_dir).unwrap();
    refused(
        &dir,
        &["--no-kds"],
        &format!(
            "{} exists and is a directory, not a socket; refusing to remove it (give the path \
             of the socket file to create)",
            sock_dir.display()
        ),
        &["esm.sock"],
    );
    assert!(sock_dir.is_dir(), "the directory is left as it was");
}
