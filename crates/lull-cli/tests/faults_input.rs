//! Fault injection at the `lull` command's input files: devices,
//! FIFOs and directories where a file goes, absurd spec values, ftrace text whose time goes
//! back. Each case runs the built `lull` under its own hang guard and asserts the exit status and
//! the message naming the path and the problem.

use std::process::Command;

mod common;

use common::{lull, refusal_of};
use lull_os::fileout::ScratchDir;

/// A scratch directory of this test's own, removed on drop.
fn scratch(case: &str) -> ScratchDir {
    ScratchDir::new(&format!("lull-cli-faults-input-{case}")).unwrap()
}

/// Writes `text` to `dir/name`; the path as an argument.
fn write(dir: &ScratchDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// Asserts `lull args` failed with status 1 and exactly `message` on stderr.
fn refused(args: &[&str], message: &str) {
    assert_eq!(refusal_of(args).trim_end(), message, "{args:?}");
}

#[test]
fn readers_refuse_dev_zero() {
    let dev = "is a character device, not a regular file";
    refused(
        &["audit", "tlp", "--ftrace", "/dev/zero"],
        &format!("lull audit: ftrace text /dev/zero: {dev}"),
    );
    refused(
        &["audit", "dump", "/dev/zero"],
        &format!("lull audit: audit log /dev/zero: {dev}"),
    );
    refused(
        &["sim", "run", "/dev/zero"],
        &format!("lull sim run: spec /dev/zero: {dev}"),
    );
    refused(
        &["sim", "rtapp", "/dev/zero"],
        &format!("lull sim rtapp: rt-app workload /dev/zero: {dev}"),
    );
}

#[test]
fn readers_refuse_a_fifo_and_a_directory() {
    let dir = scratch("fifo");
    let fifo = dir.path().join("spec.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let fifo = fifo.display().to_string();
    refused(
        &["sim", "run", &fifo],
        &format!("lull sim run: spec {fifo}: is a FIFO, not a regular file"),
    );
    let d = dir.path().display().to_string();
    refused(
        &["audit", "tlp", &d],
        &format!("lull audit: audit log {d}: is a directory, not a regular file"),
    );
}

#[test]
fn a_spec_with_handler_cycles_at_u64_max_is_refused() {
    let dir = scratch("spec");
    let spec = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../experiments/marz/tracking-10s.toml"
    ))
    .unwrap();
    let at = spec
        .find("handler_cycles = ")
        .expect("the shipped spec sets handler_cycles");
    let end = at + spec[at..].find('\n').unwrap();
    let absurd = format!(
        "{}handler_cycles = {}{}",
        &spec[..at],
        u64::MAX,
        &spec[end..]
    );
    let path = write(&dir, "absurd.toml", &absurd);
    let out = lull(&["sim", "run", &path]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The file, the line of the key at fault and the key.
    let line = spec[..at].matches('\n').count() + 1;
    assert!(
        stderr.contains(&format!("{path}:{line}:1: app.handler_cycles")),
        "{stderr}"
    );
}

const SWITCH_AT: &str = "          <idle>-0       [001] d..3.  TS: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=app next_pid=29792 next_prio=120\n";
const BACK_AT: &str = "             app-29792   [001] d..3.  TS: sched_switch: prev_comm=app prev_pid=29792 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n";

fn two_lines(first: &str, second: &str) -> String {
    format!(
        "# tracer: nop\n#P:2\n{}{}",
        SWITCH_AT.replace("TS", first),
        BACK_AT.replace("TS", second)
    )
}

#[test]
fn ftrace_time_going_back_is_an_error_not_a_tlp() {
    let dir = scratch("ftrace-back");
    let path = write(&dir, "joined.txt", &two_lines("2630.829789", "2628.000000"));
    refused(
        &["audit", "tlp", "--ftrace", &path],
        &format!(
            "lull audit: {path}: not ftrace text: line 4: CPU 1's time goes back from \
             2630829789000 ns to 2628000000000 ns, more than the 10000000 ns nested events \
             explain (are two traces joined?)"
        ),
    );
}

#[test]
fn a_nested_events_small_step_back_is_counted() {
    let dir = scratch("ftrace-nested");
    let path = write(&dir, "nested.txt", &two_lines("2630.829789", "2630.829788"));
    let out = lull(&["audit", "tlp", "--ftrace", &path]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("1 lines stepped back in their CPU's time"),
        "{stdout}"
    );
}

/// `lull bench fanout` answers settings out of range, and curve lists without `--curve`, with
/// clap's usage error (status 2) naming the argument, before anything runs.
#[test]
fn fanout_settings_out_of_range_are_refused() {
    for (args, names) in [
        (&["bench", "fanout", "--clients", "0"][..], "--clients"),
        (&["bench", "fanout", "--rate", "0"][..], "--rate"),
        (&["bench", "fanout", "--seconds", "601"][..], "--seconds"),
        (&["bench", "fanout", "--curve-rates", "1000"][..], "--curve"),
        (
            &["bench", "fanout", "--curve", "--curve-clients", "1,0"][..],
            "--curve-clients",
        ),
        (
            &["bench", "fanout", "--curve", "--curve-rates", "x"][..],
            "--curve-rates",
        ),
    ] {
        let out = lull(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(names), "{args:?}: {stderr}");
    }
}
