//! What the workspace's tests share.
//!
//! A test that cannot run on this machine (no root, no cgroup controller, no tracefs, a package
//! missing) calls [`skip`] with the reason and returns. libtest hides a passing test's output
//! and has no "skipped" outcome, so a skip would otherwise count as a pass that tested
//! nothing: [`skip`] also appends one line to the file named by [`SKIP_LOG_ENV`] (set by
//! `./test.sh`, which prints the count and the reasons at the end), and fails the test instead
//! when [`REQUIRE_ALL_ENV`] is `1` (a machine that should run everything).
//!
//! [`c_abi`] reads a C header beside the Rust exports it declares, for the headers' tests;
//! [`c_build`] builds the workspace's C programs against a static library cargo built, as
//! strictly as every such test builds them; [`hang_guard`] fails a test whose program or call
//! blocks instead of hanging the run.

pub mod c_abi;
pub mod c_build;
pub mod hang_guard;

use std::fmt::Display;
use std::io::Write;

/// The file each skip appends `FILE:LINE TEST<TAB>REASON` to; unset, skips are only printed.
pub const SKIP_LOG_ENV: &str = "LULL_SKIP_LOG";
/// `1`: a skip fails the test (set where every prerequisite should be present, e.g. CI).
pub const REQUIRE_ALL_ENV: &str = "LULL_REQUIRE_ALL";

/// Records that the calling test cannot run here, and why; the caller then returns.
///
/// # Panics
/// When `LULL_REQUIRE_ALL=1`, so that the missing prerequisite fails the suite.
#[track_caller]
pub fn skip(reason: impl Display) {
    let at = std::panic::Location::caller();
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    let line = format!("{}:{} {test}\t{reason}", at.file(), at.line());
    println!("SKIPPED: {reason}");
    if std::env::var(REQUIRE_ALL_ENV).as_deref() == Ok("1") {
        panic!("{REQUIRE_ALL_ENV}=1 and this test cannot run here: {reason}");
    }
    if let Some(path) = std::env::var_os(SKIP_LOG_ENV) {
        // One write of one line with O_APPEND: lines from parallel tests do not interleave.
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(format!("{}\n", line.replace('\n', " ")).as_bytes()));
        if let Err(e) = written {
            panic!("cannot record the skip in {}: {e}", path.to_string_lossy());
        }
    }
}

/// True when this process is root; otherwise records a skip for `what` needs it.
#[track_caller]
pub fn require_root(what: &str) -> bool {
    if euid() == Some(0) {
        return true;
    }
    skip(format_args!("needs root: {what}"));
    false
}

/// Held by a live test that loads the machine (spinning threads, replaying a trace in real
/// time, a capacity thief) for as long as it measures, so that two such tests of one test
/// binary do not run at once and skew each other's figures (libtest runs a binary's tests on
/// parallel threads; `cargo test` runs the binaries one after another).
pub fn live_lock() -> std::sync::MutexGuard<'static, ()> {
    static LIVE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A test that failed while holding it leaves it poisoned; the next one may still run.
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The effective user id, from `/proc/self/status` (`Uid:` real, effective, …).
fn euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let uid = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    uid.split_whitespace().nth(1)?.parse().ok()
}

/// Refuses to run outside the lab guest (`lull lab vm --tests` sets `LULL_GUEST`): there, uinput,
/// evdev, sched_ext, BTF and kprobes are known to be present, so a failure means a bug; anywhere
/// else a guest test would only test the host's set-up.
///
/// # Panics
/// Outside the lab guest, saying how to run the test.
pub fn require_guest() {
    assert!(
        std::env::var_os("LULL_GUEST").is_some(),
        "this test runs only in the lab guest (LULL_GUEST is unset here): run it with \
         `lull lab vm --tests`, not `cargo test -- --ignored` on the host"
    );
}

/// The names in `dir`, sorted (a test's check of what a directory holds, e.g. that no temporary
/// file was left behind).
///
/// # Panics
/// When `dir` cannot be read.
#[must_use]
pub fn dir_names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Upper bound on a test's wait for the kernel or another process: it only keeps a broken one
/// from hanging the run; no assertion depends on how long anything takes.
pub const GIVE_UP: std::time::Duration = std::time::Duration::from_secs(10);

/// Waits, yielding, until `cond` holds; panics naming `what` after [`GIVE_UP`].
///
/// # Panics
/// When `cond` still does not hold after [`GIVE_UP`].
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + GIVE_UP;
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_appends_one_line_naming_the_test_and_the_reason() {
        let path = std::env::temp_dir().join(format!("lull-testkit-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        // Run in a child thread named like a test, with the variables set for it only.
        std::env::set_var(SKIP_LOG_ENV, &path);
        std::env::remove_var(REQUIRE_ALL_ENV);
        std::thread::Builder::new()
            .name("some::test".into())
            .spawn(|| {
                skip("no tracefs\nhere");
                skip(format_args!("needs {}", "root"));
            })
            .unwrap()
            .join()
            .unwrap();
        std::env::set_var(REQUIRE_ALL_ENV, "1");
        let required = std::thread::spawn(|| skip("anything")).join();
        std::env::remove_var(REQUIRE_ALL_ENV);
        std::env::remove_var(SKIP_LOG_ENV);
        assert!(
            required.is_err(),
            "LULL_REQUIRE_ALL=1 turns a skip into a failure"
        );
        let log = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 2, "{log}");
        assert!(
            lines[0].starts_with("crates/lull-testkit/src/lib.rs:"),
            "{log}"
        );
        assert!(lines[0].ends_with(" some::test\tno tracefs here"), "{log}");
        assert!(lines[1].ends_with("\tneeds root"), "{log}");
    }
}
