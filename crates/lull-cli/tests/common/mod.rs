//! What the `lull` command's fault-injection tests share: running the built `lull` under a hang
//! guard and reading its refusal.

use std::process::{Command, Output};
use std::time::Duration;

use lull_testkit::hang_guard::output_within;

/// Hang guard per case: each refusal comes before any read or write, and the slowest run here
/// (a toggling simulation) takes under a second; a minute means something blocked.
pub const GUARD: Duration = Duration::from_secs(60);

/// Runs `lull args`, killed if it outlives [`GUARD`].
pub fn lull(args: &[&str]) -> Output {
    output_within(Command::new(env!("CARGO_BIN_EXE_lull")).args(args), GUARD)
}

/// Runs `lull args`, asserts it failed with status 1, and returns its stderr.
pub fn refusal_of(args: &[&str]) -> String {
    let out = lull(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    stderr
}
