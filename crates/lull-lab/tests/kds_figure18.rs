//! Seed 000's figure 18 as separate processes: `apps/kds-c/figure18.c` built against this
//! crate's static library, and its Rust twin (`examples/figure18.rs`), each run against a real
//! display server; every pixel of the screen checked while the window is up, and the window gone
//! after it detaches; `apps/kds-c/figure19.c` likewise, with a key typed to its handler. Also
//! `kds_demo::figure18`, which does the figure-18 run for `lull kds demo`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use lull::kds_client::KdsAdmin;
use lull_esm::EsmConfig;
use lull_kds::figure18;
use lull_kds::server::BACKDROP_ARGB;
use lull_lab::c_client::{C_LINK_LIBS, STATIC_LIB};
use lull_lab::kds_demo::{self, Figure18Config};
use lull_os::fileout::ScratchDir;
use lull_os::sys;
use lull_testkit::c_build;
use lulld::test_support::TestDaemon;
use serde_json::json;

const SCREEN_W: u32 = 64;
const SCREEN_H: u32 = 48;

/// A fresh private directory for a test's files, removed on drop (even when the test fails).
fn scratch() -> ScratchDir {
    ScratchDir::new("lull-fig18").unwrap()
}

/// Builds `apps/kds-c/<name>.c` against `lib` into `dir`.
fn build_c_example(lib: &Path, name: &str, dir: &ScratchDir) -> PathBuf {
    let source = c_build::workspace_root().join(format!("apps/kds-c/{name}.c"));
    c_build::build(&source, lib, &C_LINK_LIBS, &dir.path().join(name))
}

/// The screen with figure 18 in a 25 × 25 window at (19, 11): green where layer 2 lies, red
/// where only layer 1 does, transparent elsewhere in the window, backdrop outside.
fn expected(x: u32, y: u32) -> u32 {
    let (wx, wy) = (x.wrapping_sub(19), y.wrapping_sub(11));
    if wx < figure18::WINDOW_PX && wy < figure18::WINDOW_PX {
        figure18::pixel(wx, wy)
    } else {
        BACKDROP_ARGB
    }
}

fn check_screen(admin: &mut KdsAdmin) {
    let shot = admin.snapshot().unwrap();
    assert_eq!((shot.width(), shot.height()), (SCREEN_W, SCREEN_H));
    for y in 0..SCREEN_H {
        for x in 0..SCREEN_W {
            assert_eq!(shot.get(x, y), Some(expected(x, y)), "pixel ({x}, {y})");
        }
    }
}

/// Starts `program --socket …` against `daemon`'s display server, its standard input and output
/// piped to the test.
fn start_example(program: &Path, daemon: &TestDaemon) -> Child {
    Command::new(program)
        .arg("--socket")
        .arg(daemon.kds_path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs `program --socket …` against a fresh server and checks its line, the screen while it
/// waits, its exit, and the screen after it detached.
fn run_example(tag: &str, program: &Path) {
    let daemon = TestDaemon::start_kds(tag, SCREEN_W, SCREEN_H);
    let mut child = start_example(program, &daemon);
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let mut admin = KdsAdmin::connect(&daemon.kds_path()).unwrap();
    let windows = admin.windows().unwrap();
    assert_eq!(windows.len(), 1);
    let app = windows[0].app;
    let got: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        got,
        json!({
            "app": u64::from(app.generation) << 32 | u64::from(app.index),
            "window": {"x": 19, "y": 11, "width": 25, "height": 25},
            "layers": [
                {"z": 0, "x": 0, "y": 0, "width": 15, "height": 15, "argb": "0xffff0000"},
                {"z": 1, "x": 10, "y": 10, "width": 15, "height": 15, "argb": "0xff00ff00"},
            ],
        })
    );
    check_screen(&mut admin);
    child.stdin.take().unwrap().write_all(b"\n").unwrap();
    assert!(child.wait().unwrap().success());
    assert!(admin.windows().unwrap().is_empty());
    let after = admin.snapshot().unwrap();
    assert!(after.pixels().iter().all(|p| *p == BACKDROP_ARGB));
    drop(admin);
    let report = daemon.stop();
    let kds = report.kds.unwrap();
    assert_eq!((kds.server.attached, kds.server.detached), (1, 1));
    assert_eq!((kds.server.composes, kds.server.draws), (1, 1));
    report.accounting.unwrap();
}

#[test]
fn the_c_example_draws_exactly_figure_18() {
    let Some(lib) = c_build::require(STATIC_LIB) else {
        return;
    };
    let dir = scratch();
    let bin = build_c_example(&lib, "figure18", &dir);
    run_example("fig18-c", &bin);
}

#[test]
fn the_rust_twin_draws_exactly_figure_18() {
    let exe = std::env::current_exe().unwrap();
    let Some(bin) = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("examples/figure18"))
        .filter(|p| p.is_file())
    else {
        lull_testkit::skip("the figure18 example is not built (cargo test builds it)");
        return;
    };
    run_example("fig18-rust", &bin);
}

#[test]
fn the_demo_verifies_every_pixel_and_writes_the_png() {
    let Some(lib) = c_build::require(STATIC_LIB) else {
        return;
    };
    let lib_dir = lib.parent().unwrap().to_path_buf();
    let dir = scratch();
    let png = dir.path().join("demo.png");
    let r = kds_demo::figure18(&Figure18Config {
        screen_width: SCREEN_W,
        screen_height: SCREEN_H,
        lib_dir: lib_dir.clone(),
        cc: "cc".into(),
        png: png.clone(),
    })
    .unwrap();
    assert_eq!(r.verified_pixels, u64::from(SCREEN_W * SCREEN_H));
    assert_eq!((r.window.x, r.window.y), (19, 11));
    assert_eq!(r.layers.len(), 2);
    let doc = serde_json::to_value(&r).unwrap();
    assert_eq!(doc["layers"][1]["argb"], "0xff00ff00");
    assert_eq!(doc["window"]["width"], 25);
    let shot = lull_lab::png::decode_png(&std::fs::read(&png).unwrap()).unwrap();
    for y in 0..SCREEN_H {
        for x in 0..SCREEN_W {
            assert_eq!(shot.get(x, y), Some(expected(x, y)), "png pixel ({x}, {y})");
        }
    }

    // What is missing is named.
    let e = kds_demo::figure18(&Figure18Config {
        screen_width: SCREEN_W,
        screen_height: SCREEN_H,
        lib_dir: dir.path().join("nowhere"),
        cc: "cc".into(),
        png: dir.path().join("never.png"),
    })
    .unwrap_err();
    assert!(e.to_string().contains("cargo build"), "{e}");
    let e = kds_demo::figure18(&Figure18Config {
        screen_width: SCREEN_W,
        screen_height: SCREEN_H,
        lib_dir,
        cc: "no-such-cc-for-lull".into(),
        png: dir.path().join("never.png"),
    })
    .unwrap_err();
    assert!(e.to_string().contains("install gcc"), "{e}");
}

/// Figure 19 in C: the keyboard handler on the event thread, figure 18 drawn from the drawing
/// thread, a background function; a key typed on the daemon's evdev source reaches the handler.
#[test]
fn the_c_figure_19_draws_on_its_drawing_thread_and_handles_keys() {
    let Some(lib) = c_build::require(STATIC_LIB) else {
        return;
    };
    let dir = scratch();
    let bin = build_c_example(&lib, "figure19", &dir);
    let (r, keys) = sys::pipe(false).unwrap();
    let daemon = TestDaemon::start("fig19-c", EsmConfig::default(), move |d| {
        d.add_evdev(r)?;
        lulld::test_support::enable_headless_kds(d, SCREEN_W, SCREEN_H)
    });
    let mut child = start_example(&bin, &daemon);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let got: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(got["drawn"], true, "{line}");
    assert_eq!(
        got["window"],
        json!({"x": 19, "y": 11, "width": 25, "height": 25})
    );
    let mut admin = KdsAdmin::connect(&daemon.kds_path()).unwrap();
    check_screen(&mut admin);
    // Its handler is registered before it draws, so the key reaches it.
    common::press_key(&keys, common::KEY_A);
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&line).unwrap(),
        json!({"key": 30, "pressed": 1})
    );
    child.stdin.take().unwrap().write_all(b"\n").unwrap();
    assert!(child.wait().unwrap().success());
    assert!(admin.windows().unwrap().is_empty());
    drop(admin);
    let report = daemon.stop();
    assert_eq!(report.esm.dispatched, 1);
    report.accounting.unwrap();
}
