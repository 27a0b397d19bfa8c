//! The report opened in headless Chromium: every plot's image loads with a size, the page logs
//! nothing to the console, and a screenshot is taken. Skips with a message where Chromium is not
//! installed (Debian package `chromium`).
//!
//! The results are fixture sections cut from real `lull reproduce` output
//! (`tests/fixtures/*.json`: each section's data, trimmed to a few experiments) and one section
//! that failed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use lull_report::{render, write, Label, Machine, Outcome, Provenance, ResultFile};

const CHROMIUM: &str = "/usr/bin/chromium";

/// (section, label, fixture file) in `lull reproduce`'s order.
const FIXTURES: [(&str, Label, &str); 9] = [
    ("live_esm", Label::Measured, "live_esm.json"),
    ("live_apps", Label::Measured, "live_apps.json"),
    ("marz_sim", Label::Modelled, "marz_sim.json"),
    ("ucsg_sim", Label::Modelled, "ucsg_sim.json"),
    ("validation", Label::MeasuredAndModelled, "validation.json"),
    ("toggling_sim", Label::Modelled, "toggling_sim.json"),
    ("tlp_table", Label::MeasuredAndModelled, "tlp_table.json"),
    ("controller_live", Label::Measured, "controller_live.json"),
    ("dispatch_bench", Label::Measured, "dispatch_bench.json"),
];

fn provenance() -> Provenance {
    Provenance {
        machine: Machine {
            hostname: "fixture".into(),
            arch: "x86_64".into(),
            cpus: 2,
            cpu_model: "fixture CPU".into(),
            memory_mib: 2048,
        },
        kernel: "6.18.0".into(),
        commit: "fixture".into(),
        date: "2026-11-25T00:00:00Z".into(),
    }
}

/// The fixtures written as a results directory, inside a private directory removed on drop.
fn results_dir() -> (lull_os::fileout::ScratchDir, PathBuf) {
    let scratch = lull_os::fileout::ScratchDir::new("lull-report-chromium").unwrap();
    let dir = scratch.path().join("results");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for (i, (section, label, name)) in FIXTURES.iter().enumerate() {
        let text = std::fs::read_to_string(fixtures.join(name)).unwrap();
        let data: serde_json::Value = serde_json::from_str(&text).unwrap();
        let file = ResultFile::new(
            section,
            i + 1,
            &format!("{section} (fixture)"),
            *label,
            provenance(),
            1.0,
            Outcome::Data(data),
        );
        write(&dir, &file).unwrap();
    }
    let failed = ResultFile::new(
        "audit",
        FIXTURES.len() + 1,
        "a section that did not run",
        Label::Measured,
        provenance(),
        0.1,
        Outcome::Error("tracefs is not mounted".into()),
    );
    write(&dir, &failed).unwrap();
    (scratch, dir)
}

/// Runs Chromium headless on `page` with `extra` flags, a fresh profile and no network use.
fn chromium(profile: &Path, page: &Path, extra: &[&str]) -> Output {
    let url = format!("file://{}", page.display());
    Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            // The load event (and the page's count of loaded plots) before the DOM is dumped.
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .unwrap()
}

/// The value of `attr="N"` in the dumped DOM.
fn count(dom: &str, attr: &str) -> Option<usize> {
    let at = dom.find(&format!("{attr}=\""))? + attr.len() + 2;
    dom[at..].split('"').next()?.parse().ok()
}

/// Console messages Chromium logged (`CONSOLE` lines of its log).
fn console_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.contains("CONSOLE"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_plot_renders_in_headless_chromium() {
    if !Path::new(CHROMIUM).exists() {
        lull_testkit::skip(format!("{CHROMIUM} not found (Debian package `chromium`)"));
        return;
    }
    let (_scratch, dir) = results_dir();
    let summary = render(&dir).unwrap();
    // Every fixture section with data has at least one plot except the benchmark's table; the
    // toggling section has one core-over-time plot per program and scheme (2 × 7).
    assert!(summary.plots >= 27, "{summary:?}");
    let index = std::fs::read_to_string(&summary.index).unwrap();
    assert_eq!(
        index.matches("class=\"plot\" src=\"toggling_sim-").count(),
        2 + 14,
        "the toggling section's plots: two speedup charts and fourteen core-over-time plots"
    );
    assert_eq!(summary.missing_plots, 0, "{summary:?}");
    assert_eq!(summary.failed_sections, 1);
    let profile = dir.join("chromium-profile");

    let out = chromium(&profile, &summary.index, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        count(&dom, "data-plots-total"),
        Some(summary.plots),
        "{dom}"
    );
    assert_eq!(count(&dom, "data-plots-loaded"), Some(summary.plots));
    let console = console_lines(&out.stderr);
    assert!(console.is_empty(), "console messages: {console:#?}");

    let shot = dir.join("report.png");
    let out = chromium(
        &profile,
        &summary.index,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1400,2400",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.len() > 10_000 && png.starts_with(b"\x89PNG"),
        "{} bytes",
        png.len()
    );
    if let Some(to) = std::env::var_os("LULL_REPORT_SCREENSHOT") {
        std::fs::copy(&shot, to).unwrap();
    }

    // The check can fail: a plot whose file is gone is counted as not loaded.
    let first_svg = std::fs::read_dir(summary.index.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "svg"))
        .unwrap();
    std::fs::remove_file(first_svg).unwrap();
    let out = chromium(&profile, &summary.index, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&out.stdout);
    assert_eq!(count(&dom, "data-plots-loaded"), Some(summary.plots - 1));
}
