//! `lull doctor`: what this machine has and lacks for each part of Lull, what a missing piece
//! makes skip, and how to get it. Each check reads the same things the commands and tests
//! that need it read (effective uid, mounts, `/sys`, `PATH`).

use std::path::Path;

use serde::Serialize;

use crate::toggling_live::find_on_path;

/// One thing a part of Lull needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Short name: `root`, `tracefs`, `rt-app`, ….
    pub name: &'static str,
    pub ok: bool,
    /// What was found, or why it is missing.
    pub detail: String,
    /// The commands and tests that need it (and skip or refuse without it).
    pub needed_by: &'static str,
    /// How to get it (empty when present).
    pub remedy: String,
}

impl Check {
    /// `found` is what was found, or (why it is missing, how to get it).
    #[must_use]
    pub fn new(
        name: &'static str,
        needed_by: &'static str,
        found: Result<String, (String, String)>,
    ) -> Check {
        match found {
            Ok(detail) => Check {
                name,
                ok: true,
                detail,
                needed_by,
                remedy: String::new(),
            },
            Err((detail, remedy)) => Check {
                name,
                ok: false,
                detail,
                needed_by,
                remedy,
            },
        }
    }
}

/// A program on `PATH`, or the Debian package that brings it.
fn program(name: &'static str, program: &str, package: &str, needed_by: &'static str) -> Check {
    Check::new(
        name,
        needed_by,
        find_on_path(program)
            .map(|p| p.display().to_string())
            .ok_or_else(|| {
                (
                    format!("{program} not found on PATH"),
                    format!("apt-get install {package} (scripts/setup.sh installs it)"),
                )
            }),
    )
}

/// A check passed by a path that exists: the path, else what is missing and the remedy.
fn present(path: &str, missing: &str, remedy: &str) -> Result<String, (String, String)> {
    if Path::new(path).exists() {
        Ok(path.to_owned())
    } else {
        Err((missing.to_owned(), remedy.to_owned()))
    }
}

/// Every check, in the order `lull doctor` prints them.
#[must_use]
pub fn checks() -> Vec<Check> {
    let root = lull_os::sys::geteuid() == 0;
    let mut out = vec![Check::new(
        "root",
        "audit record, tlp-table, validate/perturbation; live ucsg, vtcfs, toggling; ctl run/set-mask on other processes; guiS's kernel half (cgroup freezer); negative nice",
        if root {
            Ok("running as root".into())
        } else {
            Err((
                format!("effective uid {}", lull_os::sys::geteuid()),
                "run the command (or ./test.sh) as root, e.g. with sudo".into(),
            ))
        },
    )];
    let cgroup2 = lull_actuate::freezer::cgroup2_controllers();
    out.push(Check::new(
        "cgroup v2",
        "guiS's kernel half (the cgroup v2 freezer: lulld --guis on, live apps' section 5), the fault tests of lulld's state",
        match &cgroup2 {
            Ok((mount, _)) => Ok(format!("mounted at {}", mount.display())),
            Err(why) => Err((
                why.to_string(),
                "mount cgroup2 (mount -t cgroup2 none /sys/fs/cgroup), or boot a systemd with the unified hierarchy".into(),
            )),
        },
    ));
    out.push(Check::new(
        "cgroup cpu",
        "lulld's cpu.weight actuation (UCSG's and guiS's weights; without it they are refused, and the weight's test runs in the lab guest)",
        match &cgroup2 {
            Ok((mount, controllers)) if controllers.iter().any(|c| c == "cpu") => {
                Ok(format!("{} has the cpu controller", mount.display()))
            }
            Ok((mount, controllers)) => Err((
                format!(
                    "{} lacks the cpu controller (has: {})",
                    mount.display(),
                    if controllers.is_empty() { "none".to_owned() } else { controllers.join(" ") }
                ),
                "a unified cgroup v2 hierarchy (systemd.unified_cgroup_hierarchy=1): on a hybrid one cgroup v1 holds the cpu controller".into(),
            )),
            Err(why) => Err((why.to_string(), "mount cgroup2 with the cpu controller enabled".into())),
        },
    ));
    out.push(Check::new(
        "tracefs",
        "lull audit record, tlp-table, validate, perturbation, two-phase (the IPSA recorder)",
        match lull_os::tracefs::available() {
            Ok(()) => Ok("writable".into()),
            Err(e) => Err((
                e.to_string(),
                "as root: mount -t tracefs nodev /sys/kernel/tracing".into(),
            )),
        },
    ));
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    out.push(Check::new(
        "two CPUs",
        "audit two-phase, live toggling (a capacity thief on CPU 1), ctl toggling",
        if cpus >= 2 {
            Ok(format!("{cpus} CPUs"))
        } else {
            Err((
                format!("{cpus} CPU"),
                "a machine (or VM) with two CPUs or more".into(),
            ))
        },
    ));
    out.push(program(
        "rt-app",
        "rt-app",
        "rt-app",
        "lull validate kernel (section 11)",
    ));
    out.push(program(
        "cc",
        "cc",
        "gcc",
        "the C examples (apps/), kds demo figure18, the C ABI tests",
    ));
    out.push(program(
        "chromium",
        "chromium",
        "chromium",
        "lull report's rendering check (crates/lull-report/tests/chromium.rs)",
    ));
    out.push(program(
        "hackbench",
        "hackbench",
        "rt-tests",
        "lull live vtcfs-overhead",
    ));
    out.push(program(
        "xz",
        "xz",
        "xz-utils",
        "lull live toggling's xz workload",
    ));
    out.push(program(
        "qemu",
        "qemu-system-x86_64",
        "qemu-system-x86",
        "lull lab vm (the lab guest)",
    ));
    out.push(Check::new(
        "KVM",
        "lull lab vm at full speed (without it the guest runs under TCG, slower, counts still exact)",
        match std::fs::OpenOptions::new().read(true).write(true).open("/dev/kvm") {
            Ok(_) => Ok("/dev/kvm usable".into()),
            Err(e) => Err((
                format!("/dev/kvm: {e}"),
                "enable virtualisation (or nested virtualisation) and load kvm_intel/kvm_amd".into(),
            )),
        },
    ));
    out.push(Check::new(
        "sched_ext",
        "sched_ext policies on this host (tests/guest_*.rs run them in the lab guest instead)",
        present(
            "/sys/kernel/sched_ext",
            "this kernel has no sched_ext (/sys/kernel/sched_ext missing)",
            "Linux 6.12 or later with CONFIG_SCHED_CLASS_EXT, or use the lab guest (lull lab vm)",
        ),
    ));
    out.push(Check::new(
        "uinput",
        "injecting input as a device (the lab guest's input tests)",
        present(
            "/dev/uinput",
            "/dev/uinput missing",
            "modprobe uinput (as root), or use the lab guest (lull lab vm)",
        ),
    ));
    let devices = std::fs::read_dir("/dev/input")
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("event"))
                .count()
        })
        .unwrap_or(0);
    out.push(Check::new(
        "input devices",
        "lulld --evdev (real input); without it lulld replays traces",
        if devices > 0 {
            Ok(format!("{devices} /dev/input/event* devices"))
        } else {
            Err((
                "no /dev/input/event* devices".into(),
                "a machine with input devices, or the lab guest (lull lab vm)".into(),
            ))
        },
    ));
    out.push(Check::new(
        "cpufreq",
        "lulld's frequency actuation (cpufreq); the simulator models frequency without it",
        present(
            "/sys/devices/system/cpu/cpu0/cpufreq",
            "no cpufreq on this machine (common in VMs)",
            "bare metal with a cpufreq driver",
        ),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_missing_piece_has_a_remedy_and_every_check_says_what_needs_it() {
        let all = checks();
        assert!(all.len() >= 10);
        for c in &all {
            assert!(!c.detail.is_empty(), "{c:?}");
            assert!(!c.needed_by.is_empty(), "{c:?}");
            assert_eq!(c.ok, c.remedy.is_empty(), "{c:?}");
        }
        let root = all.iter().find(|c| c.name == "root").unwrap();
        assert_eq!(root.ok, lull_os::sys::geteuid() == 0);
    }

    #[test]
    fn a_program_is_found_on_path_or_named_with_its_package() {
        let sh = program("sh", "sh", "dash", "x");
        assert!(sh.ok, "{sh:?}");
        let none = program("none", "lull-no-such-program", "lull-pkg", "x");
        assert!(!none.ok);
        assert!(none.remedy.contains("apt-get install lull-pkg"), "{none:?}");
    }
}
