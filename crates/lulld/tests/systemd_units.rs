//! The systemd units in `packaging/systemd/` agree with the daemon (socket names and types,
//! readiness), and `systemd-analyze verify` accepts them without a warning where it is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use lulld::activation::{ESM_FD_NAME, KDS_FD_NAME};

fn units_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/systemd")
}

fn unit(name: &str) -> String {
    let p = units_dir().join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The values of `key=` lines, comments skipped.
fn values<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .collect()
}

#[test]
fn the_units_name_and_type_the_sockets_as_lulld_expects() {
    let esm = unit("lulld.socket");
    assert_eq!(values(&esm, "FileDescriptorName"), [ESM_FD_NAME]);
    assert_eq!(
        values(&esm, "ListenSequentialPacket"),
        ["/run/lull/esm.sock"]
    );
    assert!(values(&esm, "ListenStream").is_empty());
    assert_eq!(values(&esm, "Accept"), ["no"]);

    let kds = unit("lulld-kds.socket");
    assert_eq!(values(&kds, "FileDescriptorName"), [KDS_FD_NAME]);
    assert_eq!(values(&kds, "ListenStream"), ["/run/lull/kds.sock"]);
    assert_eq!(values(&kds, "Service"), ["lulld.service"]);
    assert_eq!(values(&kds, "Accept"), ["no"]);

    // lulld's default display-server path is kds.sock beside the ESM socket; the units keep it.
    let service = unit("lulld.service");
    assert_eq!(values(&service, "Type"), ["notify"]);
    assert_eq!(values(&service, "Requires"), ["lulld.socket"]);
    assert_eq!(values(&service, "Wants"), ["lulld-kds.socket"]);
    assert_eq!(
        values(&service, "ExecStart"),
        ["/usr/local/bin/lulld $LULLD_ARGS"]
    );
    assert_eq!(values(&service, "EnvironmentFile"), ["-/etc/default/lulld"]);
    let defaults = unit("lulld.default");
    assert_eq!(values(&defaults, "LULLD_ARGS"), ["\"\""]);
}

#[test]
fn systemd_analyze_verify_accepts_the_units() {
    let Ok(out) = Command::new("systemd-analyze").arg("--version").output() else {
        lull_testkit::skip("systemd-analyze is not installed (Debian package systemd)");
        return;
    };
    assert!(out.status.success());
    // A copy whose ExecStart= names the binary just built: verify checks that it exists.
    // A private directory, removed on drop even when verification fails.
    let scratch = lull_os::fileout::ScratchDir::new("lulld-units").unwrap();
    let dir = scratch.path();
    let service = unit("lulld.service").replace(
        "ExecStart=/usr/local/bin/lulld",
        &format!("ExecStart={}", env!("CARGO_BIN_EXE_lulld")),
    );
    assert!(service.contains(env!("CARGO_BIN_EXE_lulld")));
    std::fs::write(dir.join("lulld.service"), service).unwrap();
    for name in ["lulld.socket", "lulld-kds.socket"] {
        std::fs::write(dir.join(name), unit(name)).unwrap();
    }
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .args(["lulld.service", "lulld.socket", "lulld-kds.socket"].map(|n| dir.join(n)))
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    // Unknown keys and bad values are only warnings to verify: any output is a failure here.
    assert!(
        out.status.success() && said.trim().is_empty(),
        "{}: {said}",
        out.status
    );
}
