//! The lab machine, booted for real: a command's status, output and files come back; bad input
//! and a hung guest get clear errors within a bounded wait and leave no QEMU behind.
//!
//! These boot QEMU with Debian's kernel (fetched into the cache on first use, about 120 MB);
//! `scripts/setup.sh` installs QEMU and busybox. Each boot takes about 5 s under TCG.

use std::path::{Path, PathBuf};

use lull_vm::{Accel, Cache, GuestConfig, RunRequest, VmError};

fn cache() -> Cache {
    Cache::locate().expect("the lab machine's cache")
}

fn config() -> GuestConfig {
    // TCG always: these check the runner, not the accelerator.
    GuestConfig {
        accel: Some(Accel::Tcg),
        ..GuestConfig::default()
    }
}

/// An output directory not yet made, inside a private one removed on drop.
fn out_dir(name: &str) -> (lull_os::fileout::ScratchDir, PathBuf) {
    let scratch = lull_os::fileout::ScratchDir::new("lull-vm-test").unwrap();
    let d = scratch.path().join(name);
    (scratch, d)
}

fn request(argv: &[&str], out: &Path) -> RunRequest {
    RunRequest {
        argv: argv.iter().map(Into::into).collect(),
        cwd: "/".into(),
        env: vec![("LULL_TEST_VALUE".into(), "it's here".into())],
        out_dir: out.to_path_buf(),
        echo: false,
    }
}

fn quiet(_: &str) {}

/// QEMU processes whose command line names `out` (this test's guest).
fn qemu_processes_for(out: &Path) -> Vec<String> {
    let needle = out.display().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.starts_with("qemu-system") && c.contains(&needle))
        .collect()
}

#[test]
fn status_output_and_result_files_come_back() {
    let (_out_scratch, out) = out_dir("run");
    // A host file under the host's /tmp (where a checkout may live) is visible in the guest.
    let (_host_scratch, host) = out_dir("host-file");
    std::fs::create_dir_all(&host).unwrap();
    std::fs::write(host.join("f"), "from-the-host\n").unwrap();
    let script = format!(
        "echo to-stdout; echo to-stderr >&2; echo \"$LULL_TEST_VALUE\"; \
         cat /sys/kernel/sched_ext/state; cat '{}/f'; echo result > \"$LULL_VM_OUT/result.txt\"; \
         test \"$LULL_GUEST\" = 1 && exit 7",
        host.display()
    );
    let o = lull_vm::run::run(
        &cache(),
        &config(),
        &request(&["sh", "-c", &script], &out),
        &mut quiet,
    )
    .expect("the guest runs");
    assert_eq!(o.exit_code, 7);
    assert_eq!(
        o.stdout().unwrap(),
        "to-stdout\nit's here\ndisabled\nfrom-the-host\n"
    );
    std::fs::remove_dir_all(&host).unwrap();
    assert_eq!(
        std::fs::read_to_string(&o.stderr_path).unwrap(),
        "to-stderr\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("result.txt")).unwrap(),
        "result\n"
    );
    assert!(o.kernel_release.starts_with('7'), "{}", o.kernel_release);
    assert!(o.boot_ms > 0 && o.boot_ms <= o.wall_ms);
    assert!(qemu_processes_for(&out).is_empty(), "QEMU has exited");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn an_unknown_command_ends_with_127_and_says_why() {
    let (_out_scratch, out) = out_dir("unknown");
    let o = lull_vm::run::run(
        &cache(),
        &config(),
        &request(&["no-such-command-lull"], &out),
        &mut quiet,
    )
    .expect("the guest runs");
    assert_eq!(o.exit_code, 127);
    let err = std::fs::read_to_string(&o.stderr_path).unwrap();
    assert!(
        err.contains("no-such-command-lull") && err.contains("not found"),
        "{err}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_hung_command_is_stopped_at_its_timeout_and_no_qemu_is_left() {
    let (_out_scratch, out) = out_dir("hang");
    let config = GuestConfig {
        timeout_s: 2,
        ..config()
    };
    let err = lull_vm::run::run(
        &cache(),
        &config,
        &request(&["sleep", "3600"], &out),
        &mut quiet,
    )
    .expect_err("the command outlives its limit");
    match &err {
        VmError::Timeout { phase, limit_s, .. } => assert_eq!((*phase, *limit_s), ("command", 2)),
        other => panic!("expected a timeout, got {other}"),
    }
    assert!(
        err.to_string().contains("did not finish within 2 s"),
        "{err}"
    );
    assert!(
        qemu_processes_for(&out).is_empty(),
        "QEMU was killed and reaped"
    );
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn an_unknown_kernel_release_is_refused_with_the_available_ones() {
    let config = GuestConfig {
        kernel: Some("0.0.1+bogus-amd64".into()),
        ..config()
    };
    let (_out_scratch, out) = out_dir("kernel");
    let err = lull_vm::run::run(&cache(), &config, &request(&["true"], &out), &mut quiet)
        .expect_err("no such kernel");
    match &err {
        VmError::UnknownKernel {
            release, available, ..
        } => {
            assert_eq!(release, "0.0.1+bogus-amd64");
            assert!(available.contains("-amd64"), "{available}");
        }
        other => panic!("expected UnknownKernel, got {other}"),
    }
    assert!(err.is_unavailable());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_probe_finds_what_the_host_lacks() {
    let r = lull_vm::probe(&cache(), &config(), &mut quiet).expect("the probe runs");
    let f = &r.facts;
    assert_eq!(
        f.sched_ext, "disabled",
        "sched_ext supported, nothing loaded"
    );
    assert!(
        f.btf && f.uinput && f.bpffs && f.tracefs && f.cgroup2 && f.hid_bpf,
        "{f:?}"
    );
    assert_eq!(f.cpus, 2);
    assert!(r.to_text().contains("sched_ext       disabled"));
}
