//! `lull input show` and `lull doctor` as a user runs them.

use std::process::Command;

use lull_os::fileout::ScratchDir;

fn lull(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lull"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .unwrap()
}

#[test]
fn input_show_summarises_and_lists_a_trace() {
    let out = lull(&["input", "show", "traces/stylus-spiral.trace", "--head", "2"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "traces/stylus-spiral.trace: lull-trace 1, 1614 events over 17.351 s (1614 touch)"
    );
    assert_eq!(lines[1].trim(), "0.006770 s  touch move at (965, 543)");
    assert_eq!(lines[3], "… 1612 more");
}

#[test]
fn input_show_names_the_bad_line() {
    let scratch = ScratchDir::new("lull-input-show").unwrap();
    let dir = scratch.path();
    let bad = dir.join("bad.trace");
    std::fs::write(&bad, "lull-trace 1\n5 key 30 down\n3 key 30 up\n").unwrap();
    let out = lull(&["input", "show", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("line 3: time 3 ns is before the previous event's 5 ns"),
        "{err}"
    );
}

#[test]
fn doctor_gives_a_remedy_for_every_missing_piece() {
    let out = lull(&["doctor", "--json"]);
    assert!(out.status.success());
    let checks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = checks.as_array().unwrap();
    assert!(checks.iter().any(|c| c["name"] == "lab-guest kernel"));
    for c in checks {
        let ok = c["ok"].as_bool().unwrap();
        assert_eq!(ok, c["remedy"].as_str().unwrap().is_empty(), "{c}");
        assert!(!c["needed_by"].as_str().unwrap().is_empty(), "{c}");
    }
}

/// `lull input record --device` on a pipe of `struct input_event` records (what an evdev
/// device gives; the lab guest's test records a real uinput device): the trace holds the
/// events, timed from the first.
#[test]
fn input_record_writes_a_trace_from_a_pipe_of_input_events() {
    use lull_model::{RawEvent, TouchPhase};
    let scratch = ScratchDir::new("lull-input-record").unwrap();
    let dir = scratch.path();
    let fifo = dir.join("events");
    let out_file = dir.join("out.trace");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let child = Command::new(env!("CARGO_BIN_EXE_lull"))
        .args(["input", "record", "--count", "3", "--device"])
        .arg(&fifo)
        .arg("-o")
        .arg(&out_file)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let events = [
        (
            5_000_000_000u64,
            RawEvent::Key {
                code: 30,
                pressed: true,
            },
        ),
        (
            5_020_000_000,
            RawEvent::Key {
                code: 30,
                pressed: false,
            },
        ),
        (
            5_500_000_000,
            RawEvent::Touch {
                phase: TouchPhase::Down,
                x: 10,
                y: 20,
            },
        ),
        // Past --count: not recorded.
        (
            6_000_000_000,
            RawEvent::Key {
                code: 31,
                pressed: true,
            },
        ),
    ];
    let mut bytes = Vec::new();
    let mut enc = lull_os::evdev::EvdevEncoder::new();
    for (t, raw) in events {
        enc.encode(raw, t, &mut bytes).unwrap();
    }
    // Opening for writing waits for the recorder to open the pipe for reading.
    std::fs::write(&fifo, &bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert!(err.contains("3 events over 0.500 s"), "{err}");
    let text = std::fs::read_to_string(&out_file).unwrap();
    let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        body,
        [
            "lull-trace 1",
            "0 key 30 down",
            "20000000 key 30 up",
            "500000000 touch down 10 20"
        ]
    );
}

/// `lull input record -o` never writes through a symbolic link (run as root, a planted link
/// would aim the trace at any file): it refuses before reading anything, and the link's target
/// is left as it was.
#[test]
fn input_record_refuses_to_write_through_a_symlink() {
    let scratch = ScratchDir::new("lull-input-link").unwrap();
    let dir = scratch.path();
    let target = dir.join("precious");
    std::fs::write(&target, "keep me").unwrap();
    let link = dir.join("out.trace");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lull"))
        .args([
            "input",
            "record",
            "--count",
            "1",
            "--device",
            "/dev/null",
            "-o",
        ])
        .arg(&link)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let kept = std::fs::read_to_string(&target).unwrap();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    assert_eq!(kept, "keep me");
}

#[test]
fn input_inject_without_a_daemon_names_the_socket_and_the_remedy() {
    let scratch = ScratchDir::new("lull-input-inject").unwrap();
    let dir = scratch.path();
    let out = lull(&[
        "input",
        "inject",
        "traces/stylus-spiral.trace",
        "--socket",
        dir.join("esm.sock").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("esm.sock"), "{err}");
    assert!(err.contains("is lulld running?"), "{err}");
}
