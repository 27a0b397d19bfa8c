//! Fault injection at the files `lull` writes and the results it reads back: a
//! device (`/dev/full`), a planted symbolic link or a FIFO where an output or a
//! results file goes. Each case runs the built `lull` under its own hang guard and asserts the
//! exit status, the message naming the path and the problem, that whatever was at the path is
//! untouched, and that no temporary file is left behind.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::{lull, refusal_of};
use lull_os::fileout::ScratchDir;
use lull_testkit::dir_names;

/// What a planted symlink's target holds; it must hold it still after every refusal.
const VICTIM_TEXT: &str = "not Lull's\n";

/// A scratch directory of this test's own, removed on drop.
fn scratch(case: &str) -> ScratchDir {
    ScratchDir::new(&format!("lull-cli-faults-output-{case}")).unwrap()
}

/// A regular file that is not Lull's in `dir`, outside the output directories.
fn victim(dir: &Path) -> PathBuf {
    let p = dir.join("victim.txt");
    std::fs::write(&p, VICTIM_TEXT).unwrap();
    p
}

/// Asserts `lull args` failed with status 1 and its stderr holds `message`.
fn refused(args: &[&str], message: &str) {
    let stderr = refusal_of(args);
    assert!(stderr.contains(message), "{args:?}: {stderr}");
}

fn refusal(path: &Path, what: &str) -> String {
    format!(
        "{}: exists and is {what}, not a regular file; refusing to replace it",
        path.display()
    )
}

fn assert_untouched(victim: &Path, link: &Path) {
    assert_eq!(std::fs::read_to_string(victim).unwrap(), VICTIM_TEXT);
    assert!(std::fs::symlink_metadata(link)
        .unwrap()
        .file_type()
        .is_symlink());
}

/// Makes a character device like `/dev/full` (1, 7) at `path`, where root may; `false` if not.
fn mknod_full(path: &Path) -> bool {
    Command::new("mknod")
        .arg(path)
        .args(["c", "1", "7"])
        .status()
        .is_ok_and(|s| s.success())
}

const FTRACE: &str = "# tracer: nop\n#P:2\n          <idle>-0       [001] d..3.  2630.829789: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=29792 next_prio=120\n             app-29792   [001] d..3.  2630.839789: sched_switch: prev_comm=app prev_pid=29792 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n";

#[test]
fn perfetto_export_refuses_dev_full_and_a_symlink() {
    let dir = scratch("perfetto");
    let input = dir.path().join("trace.txt");
    std::fs::write(&input, FTRACE).unwrap();
    let input = input.to_str().unwrap();
    let export = |out: &Path| {
        vec![
            "audit".to_owned(),
            "export".to_owned(),
            "--ftrace".to_owned(),
            input.to_owned(),
            "--perfetto".to_owned(),
            out.display().to_string(),
        ]
    };
    let run = |out: &Path, message: &str| {
        let args = export(out);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&args, message);
    };

    run(
        Path::new("/dev/full"),
        &refusal(Path::new("/dev/full"), "a character device"),
    );

    let victim = victim(dir.path());
    let link = dir.path().join("trace.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    run(&link, &refusal(&link, "a symbolic link"));
    assert_untouched(&victim, &link);

    // A regular destination is replaced whole, with nothing left beside it.
    let out = dir.path().join("real.json");
    std::fs::write(&out, "old").unwrap();
    let args = export(&out);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = lull(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("traceEvents"));
    assert_eq!(
        dir_names(dir.path()),
        ["real.json", "trace.json", "trace.txt", "victim.txt"]
    );
}

#[test]
fn audit_record_refuses_dev_full_and_a_symlink_before_tracing() {
    let dir = scratch("record");
    refused(
        &["audit", "record", "--seconds", "1", "--out", "/dev/full"],
        &refusal(Path::new("/dev/full"), "a character device"),
    );
    let victim = victim(dir.path());
    let link = dir.path().join("sched.audit");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let l = link.display().to_string();
    refused(
        &["audit", "record", "--seconds", "1", "--out", &l],
        &refusal(&link, "a symbolic link"),
    );
    assert_untouched(&victim, &link);
    assert_eq!(dir_names(dir.path()), ["sched.audit", "victim.txt"]);

    // Where tracefs lets it record (root), the log appears whole under its name; where it
    // does not, the refusal leaves nothing. Either way no temporary remains.
    let real = dir.path().join("real.audit");
    let r = real.display().to_string();
    let o = lull(&["audit", "record", "--seconds", "1", "--out", &r]);
    if o.status.success() {
        let bytes = std::fs::read(&real).unwrap();
        assert!(
            bytes.starts_with(b"LULLAUDT"),
            "{:?}",
            &bytes[..bytes.len().min(8)]
        );
        assert_eq!(
            dir_names(dir.path()),
            ["real.audit", "sched.audit", "victim.txt"]
        );
    } else {
        assert_eq!(dir_names(dir.path()), ["sched.audit", "victim.txt"]);
    }
}

/// Runs `lull sim run SPEC FLAG DIR` with a symlink, then a device, planted at `name` in DIR.
fn sim_output_refuses_what_is_not_lulls(case: &str, spec: &str, flag: &str, name: &str) {
    let dir = scratch(case);
    let spec = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(spec);
    let spec = spec.to_str().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let o = out.display().to_string();
    let victim = victim(dir.path());
    let link = out.join(name);
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    refused(
        &["sim", "run", spec, flag, &o],
        &refusal(&link, "a symbolic link"),
    );
    assert_untouched(&victim, &link);
    assert!(
        !dir_names(&out).iter().any(|n| n.ends_with(".tmp")),
        "{:?}",
        dir_names(&out)
    );

    std::fs::remove_file(&link).unwrap();
    if mknod_full(&link) {
        refused(
            &["sim", "run", spec, flag, &o],
            &refusal(&link, "a character device"),
        );
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_char_device());
        assert!(!dir_names(&out).iter().any(|n| n.ends_with(".tmp")));
    }
}

#[test]
fn sim_audit_dir_refuses_a_symlink_and_a_device() {
    sim_output_refuses_what_is_not_lulls(
        "audit-dir",
        "experiments/marz/esm-alone.toml",
        "--audit-dir",
        "esm-alone-esm.audit",
    );
}

#[test]
fn sim_plot_refuses_a_symlink_and_a_device() {
    sim_output_refuses_what_is_not_lulls(
        "plot",
        "experiments/toggling/vips.toml",
        "--plot",
        "vips-baseline.svg",
    );
}

#[test]
fn sim_footprint_dir_refuses_a_symlink_and_a_device() {
    sim_output_refuses_what_is_not_lulls(
        "footprint",
        "experiments/ucsg/fig5-idle-screen-off.toml",
        "--footprint-dir",
        "fig5-idle-screen-off.svg",
    );
}

#[test]
fn report_refuses_results_files_that_are_not_regular_files() {
    let dir = scratch("report");
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let d = dir.path().display().to_string();
    let x = results.join("x.json");

    assert!(Command::new("mkfifo").arg(&x).status().unwrap().success());
    refused(
        &["report", &d],
        &format!(
            "lull report: results file {}: is a FIFO, not a regular file",
            x.display()
        ),
    );
    std::fs::remove_file(&x).unwrap();

    std::os::unix::fs::symlink("/dev/zero", &x).unwrap();
    refused(
        &["report", &d],
        &format!(
            "lull report: results file {}: is a character device, not a regular file",
            x.display()
        ),
    );
    std::fs::remove_file(&x).unwrap();

    std::fs::create_dir(&x).unwrap();
    refused(
        &["report", &d],
        &format!(
            "lull report: results file {}: is a directory, not a regular file",
            x.display()
        ),
    );
    assert_eq!(dir_names(dir.path()), ["results"]);
}
