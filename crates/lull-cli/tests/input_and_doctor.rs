//! `lull input show` and `lull doctor` as a user runs them.

use std::process::Command;

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
    let dir = std::env::temp_dir().join(format!("lull-input-show-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.trace");
    std::fs::write(&bad, "lull-trace 1\n5 key 30 down\n3 key 30 up\n").unwrap();
    let out = lull(&["input", "show", bad.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
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
