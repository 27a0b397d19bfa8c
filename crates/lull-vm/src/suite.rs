//! The workspace's guest tests: integration-test files named `guest_*.rs`, whose tests are
//! `#[ignore]`d on the host (libtest counts them there as ignored) and run here, all in one
//! guest boot, with `--ignored`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::boot::shell_quote;
use crate::error::VmError;

/// The prefix that marks a test target as a guest test.
pub const GUEST_TEST_PREFIX: &str = "guest_";
/// Marks the guest script prints around each binary's run.
const BEGIN: &str = "== lull-vm test binary ";
const END: &str = "== lull-vm test exit ";

/// Builds the workspace's tests (a no-op when `cargo test` just did) and lists the executables
/// of the guest test targets.
pub fn find_guest_tests(workspace: &Path) -> Result<Vec<PathBuf>, VmError> {
    let out = Command::new("cargo")
        .args([
            "test",
            "--workspace",
            "--locked",
            "--no-run",
            "--message-format=json",
        ])
        .current_dir(workspace)
        .output()
        .map_err(|e| VmError::io("run cargo in", workspace, e))?;
    if !out.status.success() {
        return Err(VmError::Invalid(format!(
            "cargo test --no-run failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )));
    }
    Ok(guest_executables(&String::from_utf8_lossy(&out.stdout)))
}

/// Test executables of `guest_*` targets in cargo's JSON messages, sorted.
#[must_use]
pub fn guest_executables(cargo_json: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = cargo_json
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact")
        .filter(|m| {
            m["target"]["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|x| x == "test"))
                && m["target"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(GUEST_TEST_PREFIX))
        })
        .filter_map(|m| m["executable"].as_str().map(PathBuf::from))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The guest's command: every binary with `--ignored`, one test at a time (they share the
/// kernel's global state: the loaded scheduler, the input devices), each bracketed by marks.
#[must_use]
pub fn guest_command(binaries: &[PathBuf]) -> Vec<OsString> {
    let mut script = String::new();
    for b in binaries {
        let q = shell_quote(&b.display().to_string());
        script.push_str(&format!(
            "echo {}; {q} --ignored --test-threads=1; echo {}$?\n",
            shell_quote(&format!("{BEGIN}{}", b.display())),
            shell_quote(END),
        ));
    }
    vec!["/bin/sh".into(), "-c".into(), script.into()]
}

/// One binary's result.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct BinaryResult {
    pub binary: String,
    pub passed: u32,
    pub failed: u32,
    pub exit_code: Option<i32>,
}

/// All binaries' results.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, Default)]
pub struct SuiteResult {
    pub binaries: Vec<BinaryResult>,
}

impl SuiteResult {
    #[must_use]
    pub fn passed(&self) -> u32 {
        self.binaries.iter().map(|b| b.passed).sum()
    }

    /// Failed tests, plus one for each binary that crashed or never reported.
    #[must_use]
    pub fn failed(&self) -> u32 {
        self.binaries
            .iter()
            .map(|b| b.failed + u32::from(b.failed == 0 && b.exit_code != Some(0)))
            .sum()
    }
}

/// Reads the guest's output: marks and libtest's `test result:` lines. A binary that started
/// and never printed its end mark (the guest stopped) counts as failed.
#[must_use]
pub fn parse_output(text: &str, binaries: &[PathBuf]) -> SuiteResult {
    let mut result = SuiteResult::default();
    let mut current: Option<BinaryResult> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix(BEGIN) {
            result.binaries.extend(current.take());
            current = Some(BinaryResult {
                binary: name.to_string(),
                passed: 0,
                failed: 0,
                exit_code: None,
            });
        } else if let Some(code) = line.strip_prefix(END) {
            if let Some(mut b) = current.take() {
                b.exit_code = code.trim().parse().ok();
                result.binaries.push(b);
            }
        } else if let Some((p, f)) = libtest_summary(line) {
            if let Some(b) = current.as_mut() {
                b.passed += p;
                b.failed += f;
            }
        }
    }
    result.binaries.extend(current);
    // A binary the guest never reached is a failure too.
    for b in binaries {
        let name = b.display().to_string();
        if !result.binaries.iter().any(|r| r.binary == name) {
            result.binaries.push(BinaryResult {
                binary: name,
                passed: 0,
                failed: 0,
                exit_code: None,
            });
        }
    }
    result
}

/// `test result: ok. 5 passed; 1 failed; 0 ignored; …` → (5, 1).
#[must_use]
pub fn libtest_summary(line: &str) -> Option<(u32, u32)> {
    let rest = line.trim().strip_prefix("test result: ")?;
    let (_, counts) = rest.split_once(". ")?;
    let mut passed = None;
    let mut failed = None;
    for part in counts.split(';') {
        let mut words = part.split_whitespace();
        let (Some(n), Some(what)) = (words.next(), words.next()) else {
            continue;
        };
        match what {
            "passed" => passed = Some(n.parse::<u32>().ok()?),
            "failed" => failed = Some(n.parse::<u32>().ok()?),
            _ => {}
        }
    }
    Some((passed?, failed?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_lines_parse() {
        assert_eq!(
            libtest_summary("test result: ok. 5 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 1.2s"),
            Some((5, 0))
        );
        assert_eq!(
            libtest_summary("test result: FAILED. 3 passed; 1 failed; 0 ignored"),
            Some((3, 1))
        );
        assert_eq!(libtest_summary("test foo ... ok"), None);
        assert_eq!(libtest_summary("test result: ok. x passed; 0 failed"), None);
    }

    #[test]
    fn output_is_split_per_binary_and_unreached_binaries_fail() {
        let bins: Vec<PathBuf> = ["/t/guest_a", "/t/guest_b", "/t/guest_c"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let text = format!(
            "{BEGIN}/t/guest_a\nrunning 2 tests\ntest result: ok. 2 passed; 0 failed; 0 ignored\n{END}0\n\
             {BEGIN}/t/guest_b\nthread panicked\n"
        );
        let r = parse_output(&text, &bins);
        assert_eq!(r.binaries.len(), 3);
        assert_eq!(r.passed(), 2);
        // guest_b started and never ended; guest_c never started.
        assert_eq!(r.failed(), 2);
        assert_eq!(r.binaries[0].exit_code, Some(0));
    }

    #[test]
    fn a_binary_that_exits_non_zero_without_failed_tests_counts_as_failed() {
        let bins = vec![PathBuf::from("/t/guest_a")];
        let text = format!(
            "{BEGIN}/t/guest_a\ntest result: ok. 1 passed; 0 failed; 0 ignored\n{END}101\n"
        );
        assert_eq!(parse_output(&text, &bins).failed(), 1);
    }

    #[test]
    fn guest_targets_are_picked_from_cargo_messages() {
        let json = r#"{"reason":"compiler-artifact","target":{"kind":["test"],"name":"guest_input"},"executable":"/w/target/debug/deps/guest_input-1"}
{"reason":"compiler-artifact","target":{"kind":["test"],"name":"evdev"},"executable":"/w/target/debug/deps/evdev-2"}
{"reason":"compiler-artifact","target":{"kind":["lib"],"name":"guest_lib"},"executable":null}
{"reason":"build-finished","success":true}
not json"#;
        assert_eq!(
            guest_executables(json),
            vec![PathBuf::from("/w/target/debug/deps/guest_input-1")]
        );
    }

    #[test]
    fn the_guest_command_runs_each_binary_ignored_and_marked() {
        let cmd = guest_command(&[PathBuf::from("/t/guest_a")]);
        let script = cmd[2].to_string_lossy();
        assert!(script.contains("'/t/guest_a' --ignored --test-threads=1"));
        assert!(script.contains(BEGIN) && script.contains(END));
    }
}
