//! The two programs as a harness starts them: bad arguments give exit status 2 and a message
//! naming what was expected, and `lull-work` reports every thread. Being an integration test of
//! this package also makes `cargo test --workspace` build both programs where the live tests of
//! `lull-lab` find them (`target/debug/`).

use std::process::{Command, Stdio};

const APP: &str = env!("CARGO_BIN_EXE_lull-app");
const WORK: &str = env!("CARGO_BIN_EXE_lull-work");

fn stderr_of(program: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_app_program_rejects_bad_arguments_with_what_it_expected() {
    let socket = ["--kds-socket", "/nonexistent/kds"];
    for (args, expected) in [
        (vec![], "required arguments"),
        (vec!["--bogus"], "unexpected argument '--bogus'"),
        (
            [&["--model", "esm"][..], &socket, &["tracking"]].concat(),
            "expected one of esm-kds-guis",
        ),
        (
            [&["--model", "pull-16ms"][..], &socket, &["nope"]].concat(),
            "expected tracking, messaging",
        ),
        (
            [
                &["--model", "pull-16ms", "--video-size", "0x0"][..],
                &socket,
                &["video"],
            ]
            .concat(),
            "from 1 to 8192",
        ),
        (
            [
                &["--model", "pull-16ms", "--scale", "2"][..],
                &socket,
                &["filemanager"],
            ]
            .concat(),
            "\"2\": expected a number in (0, 1]",
        ),
    ] {
        let (code, err) = stderr_of(APP, &args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

#[test]
fn the_app_program_without_a_display_server_says_so_and_fails() {
    let (code, err) = stderr_of(
        APP,
        &[
            "--model",
            "esm-kds-guis",
            "--kds-socket",
            "/nonexistent/kds",
            "tracking",
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.starts_with("lull-app tracking: display server"),
        "{err}"
    );
    assert!(err.contains("/nonexistent/kds"), "{err}");
}

#[test]
fn the_work_program_rejects_bad_arguments() {
    for args in [
        &[][..],
        &["--threads", "0", "--work-ms", "1"][..],
        &["--threads", "2"][..],
        &["--threads", "2", "--work-ms", "1", "--barrier-ms", "2"][..],
        &["--threads", "2", "--work-ms", "ten"][..],
        &["--bogus"][..],
    ] {
        let (code, err) = stderr_of(WORK, args);
        assert_eq!(code, Some(2), "{args:?}");
        assert!(err.starts_with("lull-work: "), "{args:?}: {err}");
    }
}

#[test]
fn the_work_program_reports_every_thread() {
    let scratch = lull_os::fileout::ScratchDir::new("lull-work-test").unwrap();
    let report = scratch.path().join("r.json");
    let st = Command::new(WORK)
        .args([
            "--threads",
            "3",
            "--work-ms",
            "2",
            "--barrier-ms",
            "1",
            "--report",
        ])
        .arg(&report)
        .status()
        .unwrap();
    assert!(st.success());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(v["finish_ns"].as_array().unwrap().len(), 3);
}
