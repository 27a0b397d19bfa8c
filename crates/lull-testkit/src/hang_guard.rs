//! A hang guard for a test that runs something which could block for ever (a read of a FIFO, a
//! program that waits on its input): the work runs on a thread of its own, and the test fails,
//! naming what hung, when it outlives the guard. The guard only keeps a broken case from hanging
//! the run; no assertion depends on how long anything takes.

use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// `f()` on a thread of its own; `None` when it is still running after `guard` (the thread is
/// left behind, blocked; the caller fails the test).
pub fn within<T: Send + 'static>(
    guard: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(guard).ok()
}

/// Runs `cmd` with no standard input, its output captured, and returns how it ended; killed
/// (`SIGKILL`) when it outlives `guard`.
///
/// # Panics
/// When the program cannot be started, or after killing it when it outlived `guard`.
pub fn output_within(cmd: &mut Command, guard: Duration) -> Output {
    let what = format!("{cmd:?}");
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let pid = child.id();
    match within(guard, move || child.wait_with_output()) {
        Some(out) => out.unwrap_or_else(|e| panic!("waiting for {what}: {e}")),
        None => {
            // The child has not been reaped (the waiting thread is still blocked in wait), so
            // its pid still names it.
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("{what} still running after {guard:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_program_gives_its_output() {
        let out = output_within(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(60),
        );
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn a_program_past_its_guard_is_killed_and_fails_the_test() {
        // `sleep` outlives a guard of zero; the guard fires whatever the machine's load.
        let failed =
            std::thread::spawn(|| output_within(Command::new("sleep").arg("600"), Duration::ZERO))
                .join();
        let msg = *failed.unwrap_err().downcast::<String>().unwrap();
        assert!(msg.contains("still running after"), "{msg}");
    }

    #[test]
    fn work_within_its_guard_gives_its_value() {
        assert_eq!(within(Duration::from_secs(60), || 6 * 7), Some(42));
    }
}
