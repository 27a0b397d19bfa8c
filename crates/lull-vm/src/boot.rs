//! What the guest is made of, as data: its initramfs (busybox, the modules, the kernel config and
//! an init script) and QEMU's command line. Pure, so that what the guest does is tested without
//! booting it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::cpio::Cpio;
use crate::kernel::GUEST_MODULES;

/// The 9p tags of the two shares: the host's root, read-only, and the run's output directory.
pub const ROOT_TAG: &str = "hostroot";
pub const OUT_TAG: &str = "out";
/// The directory inside the output directory that holds the run's own files.
pub const RUN_DIR: &str = ".lull-vm";
/// 9p's largest message: larger messages mean fewer round trips for the host's binaries, which
/// the guest reads over the share (virtio's ring limits it to about 500 KiB).
const NINEP_MSIZE: u32 = 512_000;

/// How the guest executes instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    /// QEMU's own translator: works everywhere, about 10–50× slower than the host.
    Tcg,
    /// Hardware virtualisation through /dev/kvm (nested KVM fails on some hosts).
    Kvm,
}

impl Accel {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Accel::Tcg => "tcg",
            Accel::Kvm => "kvm",
        }
    }
}

/// How QEMU's translator runs the guest's CPUs (TCG only).
///
/// Multi-threaded TCG gives each guest CPU a host thread; it is faster, but under it the guest
/// kernel sometimes executes a stale `int3` left by its own live code patching and panics
/// ("Oops: int3" in `__schedule` or `update_rq_clock`). Loading or unloading a sched_ext
/// scheduler flips static keys, so the lull-scx guest test (about 8 loads a run) hit it in 3 of 9
/// runs (QEMU 7.2, Debian's 7.3.4 kernel); single-threaded TCG passed 7 runs of 7. One host thread runs all guest CPUs in turn, which halves a guest's
/// throughput but not the comparisons made within one guest run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TcgThreads {
    #[default]
    Single,
    Multi,
}

impl TcgThreads {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            TcgThreads::Single => "single",
            TcgThreads::Multi => "multi",
        }
    }
}

/// The execution engine in words: `kvm`, or `tcg` and its threading (`tcg_threads` is `None`
/// under KVM).
#[must_use]
pub fn engine(accel: Accel, tcg_threads: Option<TcgThreads>) -> String {
    match tcg_threads {
        Some(t) => format!("{}, {}-threaded", accel.name(), t.name()),
        None => accel.name().to_string(),
    }
}

/// Files of the run inside the output directory's [`RUN_DIR`].
pub mod run_files {
    pub const COMMAND: &str = "cmd.sh";
    pub const STDOUT: &str = "stdout";
    pub const STDERR: &str = "stderr";
    pub const STATUS: &str = "status";
    pub const BOOTED: &str = "booted";
    pub const CONSOLE: &str = "console.log";
    pub const DMESG: &str = "dmesg";
}

/// The init script: mounts the host's root read-only with writable `/tmp`, `/run`, `/var/tmp`,
/// `/dev/shm` and `/boot` over it, the kernel's filesystems (bpffs, tracefs, debugfs, cgroup2),
/// the output directory at its host path; loads the modules; runs the command chrooted as root
/// with its output in files of the share; records its exit status; powers off. A step that fails
/// is said on the console, which the host shows when the run fails.
#[must_use]
pub fn init_script(out_dir: &Path) -> String {
    let out = shell_quote(&out_dir.display().to_string());
    let modules = GUEST_MODULES.join(" ");
    format!(
        r#"#!/bin/busybox sh
B=/bin/busybox
R=/newroot
$B mount -t devtmpfs dev /dev
$B mount -t proc proc /proc
$B mount -t sysfs sys /sys
say() {{ $B echo "lull-vm: $*" > /dev/console; }}
stop() {{ say "$*"; $B sync; $B poweroff -f; }}
for m in {modules}; do $B insmod /modules/$m.ko || say "insmod $m failed"; done
$B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize={NINEP_MSIZE} {ROOT_TAG} $R || stop "cannot mount the host's root"
$B mount --rbind /dev $R/dev && $B mount --rbind /proc $R/proc && $B mount --rbind /sys $R/sys || stop "cannot bind /dev, /proc, /sys"
$B mkdir -p /dev/pts /dev/shm
$B mount -t devpts devpts $R/dev/pts
$B mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm
# /tmp and /var/tmp show the host's files (a checkout or a build may live there) with the
# guest's writes kept in memory: an overlay on the read-only share, or a bare tmpfs without one.
$B mount -t tmpfs -o mode=0755 tmpfs /ovl
for d in tmp var/tmp; do
  [ -d $R/$d ] || continue
  u=/ovl/$($B echo $d | $B tr / _)
  $B mkdir -p $u/upper $u/work && $B chmod 1777 $u/upper
  $B mount -t overlay overlay -o lowerdir=$R/$d,upperdir=$u/upper,workdir=$u/work $R/$d \
    || {{ say "no overlay on /$d: a bare tmpfs hides the host's files there"; $B mount -t tmpfs -o mode=1777 tmpfs $R/$d; }}
done
for d in run boot; do [ -d $R/$d ] && $B mount -t tmpfs -o mode=0755 tmpfs $R/$d; done
[ -d $R/boot ] && $B cp /config $R/boot/config-$($B uname -r)
$B mount -t bpf bpf $R/sys/fs/bpf || say "no bpffs"
$B mount -t tracefs tracefs $R/sys/kernel/tracing || say "no tracefs"
$B mount -t debugfs debugfs $R/sys/kernel/debug || say "no debugfs"
$B mount -t cgroup2 cgroup2 $R/sys/fs/cgroup || say "no cgroup2"
# No network, but the loopback interface is up: experiments run local servers (the FTP of
# `lull live ucsg`) on 127.0.0.1.
$B ip link set lo up || say "no loopback"
O={out}
$B mkdir -p $R$O 2>/dev/null
$B mount -t 9p -o trans=virtio,version=9p2000.L,msize={NINEP_MSIZE} {OUT_TAG} $R$O || stop "cannot mount the output directory"
M=$R$O/{RUN_DIR}
$B cat /proc/uptime > $M/{booted}
$B chroot $R /bin/sh $O/{RUN_DIR}/{command} > $M/{stdout} 2> $M/{stderr} < /dev/null
echo $? > $M/{status}.part && $B mv $M/{status}.part $M/{status}
$B dmesg > $M/{dmesg}
$B sync
$B poweroff -f
"#,
        booted = run_files::BOOTED,
        command = run_files::COMMAND,
        stdout = run_files::STDOUT,
        stderr = run_files::STDERR,
        status = run_files::STATUS,
        dmesg = run_files::DMESG,
    )
}

/// The command file the init script runs: the environment, the working directory, the command.
#[must_use]
pub fn command_script(argv: &[OsString], cwd: &Path, env: &[(String, String)]) -> String {
    let mut s = String::new();
    for (k, v) in env {
        s.push_str(&format!("export {k}={}\n", shell_quote(v)));
    }
    s.push_str(&format!(
        "cd {} || exit 125\nexec",
        shell_quote(&cwd.display().to_string())
    ));
    for a in argv {
        s.push(' ');
        s.push_str(&shell_quote(&a.to_string_lossy()));
    }
    s.push('\n');
    s
}

/// The initramfs: busybox, the modules, the kernel's config, the init script.
#[must_use]
pub fn initramfs(
    busybox: &[u8],
    modules: &[(String, Vec<u8>)],
    config: &[u8],
    init: &str,
) -> Vec<u8> {
    let mut c = Cpio::new();
    for d in ["bin", "dev", "proc", "sys", "newroot", "modules", "ovl"] {
        c.dir(d, 0o755);
    }
    c.file("bin/busybox", 0o755, busybox);
    for (name, bytes) in modules {
        c.file(&format!("modules/{name}.ko"), 0o644, bytes);
    }
    c.file("config", 0o644, config);
    c.file("init", 0o755, init.as_bytes());
    c.finish()
}

/// What QEMU is asked to run.
#[derive(Clone, Debug)]
pub struct QemuPlan {
    pub accel: Accel,
    /// Ignored under KVM.
    pub tcg_threads: TcgThreads,
    pub cpus: u32,
    pub mem_mib: u32,
    pub vmlinuz: PathBuf,
    pub initrd: PathBuf,
    pub out_dir: PathBuf,
    pub console_log: PathBuf,
}

/// QEMU's arguments for `plan`: no default devices, no network, no display; the serial port is
/// the kernel's console, written to a file; two 9p shares.
#[must_use]
pub fn qemu_args(plan: &QemuPlan) -> Vec<OsString> {
    let (accel, cpu) = match plan.accel {
        Accel::Tcg => (format!("tcg,thread={}", plan.tcg_threads.name()), "max"),
        Accel::Kvm => ("kvm".to_string(), "host"),
    };
    let mut a: Vec<String> = vec![
        "-accel".into(),
        accel,
        "-cpu".into(),
        cpu.into(),
        "-smp".into(),
        plan.cpus.to_string(),
        "-m".into(),
        format!("{}M", plan.mem_mib),
        "-nodefaults".into(),
        "-no-user-config".into(),
        "-no-reboot".into(),
        "-display".into(),
        "none".into(),
        "-kernel".into(),
        plan.vmlinuz.display().to_string(),
        "-initrd".into(),
        plan.initrd.display().to_string(),
        // panic=-1 reboots at once on a panic, and -no-reboot turns that into QEMU's exit.
        // no_timer_check: under TCG on a busy host the kernel's boot-time check that the timer
        // interrupt arrives through the IO-APIC can time out and panic ("IO-APIC + timer doesn't
        // work"), which happened in 3 boots of a loaded host; the emulated timer works.
        "-append".into(),
        "console=ttyS0 panic=-1 quiet no_timer_check".into(),
        "-serial".into(),
        format!("file:{}", plan.console_log.display()),
    ];
    for (tag, path, ro) in [
        (ROOT_TAG, Path::new("/"), true),
        (OUT_TAG, plan.out_dir.as_path(), false),
    ] {
        a.push("-fsdev".into());
        a.push(format!(
            "local,id={tag},path={},security_model=none,multidevs=remap{}",
            qemu_escape(&path.display().to_string()),
            if ro { ",readonly=on" } else { "" }
        ));
        a.push("-device".into());
        a.push(format!("virtio-9p-pci,fsdev={tag},mount_tag={tag}"));
    }
    a.into_iter().map(OsString::from).collect()
}

/// QEMU's option syntax doubles a comma inside a value.
fn qemu_escape(s: &str) -> String {
    s.replace(',', ",,")
}

/// `s` as one POSIX shell word.
#[must_use]
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_mounts_the_shares_and_records_the_status() {
        let s = init_script(Path::new("/tmp/run 1"));
        assert!(s.starts_with("#!/bin/busybox sh\n"));
        assert!(s.contains("O='/tmp/run 1'"), "the out dir is quoted");
        assert!(s.contains(&format!("ro,msize={NINEP_MSIZE} hostroot $R")));
        assert!(s.contains("insmod /modules/$m.ko"));
        for m in ["9pnet_virtio", "evdev", "uinput", "uhid"] {
            assert!(s.contains(m), "{m} loaded");
        }
        // The output directory is mounted after the tmpfs over /tmp, or /tmp would hide it.
        let tmpfs = s.find("for d in tmp var/tmp").unwrap();
        assert!(
            s.contains("-t overlay overlay -o lowerdir=$R/$d"),
            "the host's /tmp stays visible"
        );
        let out = s.find("$R$O || stop").unwrap();
        assert!(tmpfs < out);
        assert!(s.contains("echo $? > $M/status.part && $B mv $M/status.part $M/status"));
        assert!(s.trim_end().ends_with("$B poweroff -f"));
    }

    #[test]
    fn command_script_quotes_every_word() {
        let argv: Vec<OsString> = ["printf", "%s\\n", "it's", "a b"]
            .iter()
            .map(OsString::from)
            .collect();
        let s = command_script(
            &argv,
            Path::new("/work/x"),
            &[
                ("LULL_GUEST".into(), "1".into()),
                ("P".into(), "a'b".into()),
            ],
        );
        assert_eq!(
            s,
            "export LULL_GUEST='1'\nexport P='a'\\''b'\ncd '/work/x' || exit 125\n\
             exec 'printf' '%s\\n' 'it'\\''s' 'a b'\n"
        );
    }

    #[test]
    fn qemu_shares_root_read_only_and_out_read_write() {
        let plan = QemuPlan {
            accel: Accel::Tcg,
            tcg_threads: TcgThreads::Single,
            cpus: 2,
            mem_mib: 2048,
            vmlinuz: "/c/vmlinuz".into(),
            initrd: "/c/initrd".into(),
            out_dir: "/o,ut".into(),
            console_log: "/o,ut/.lull-vm/console.log".into(),
        };
        let a: Vec<String> = qemu_args(&plan)
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect();
        let joined = a.join(" ");
        assert!(joined.contains("-accel tcg,thread=single -cpu max -smp 2 -m 2048M"));
        assert!(joined.contains("path=/,security_model=none,multidevs=remap,readonly=on"));
        assert!(joined.contains("path=/o,,ut,security_model=none,multidevs=remap -device"));
        assert!(!joined.contains("-netdev"), "no network in the guest");
        let multi = qemu_args(&QemuPlan {
            tcg_threads: TcgThreads::Multi,
            ..plan.clone()
        });
        assert!(multi.iter().any(|s| s == "tcg,thread=multi"));
        let kvm = qemu_args(&QemuPlan {
            accel: Accel::Kvm,
            ..plan
        });
        assert!(kvm.iter().any(|s| s == "host"));
        assert!(kvm.iter().any(|s| s == "kvm"), "no TCG option under KVM");
    }

    #[test]
    fn initramfs_holds_init_busybox_and_modules() {
        let mods = vec![("evdev".to_string(), b"ko".to_vec())];
        let bytes = initramfs(b"bb", &mods, b"CONFIG_X=y\n", "#!/bin/busybox sh\n");
        let text = String::from_utf8_lossy(&bytes);
        for name in [
            "bin/busybox",
            "modules/evdev.ko",
            "config",
            "init",
            "newroot",
        ] {
            assert!(text.contains(name), "{name}");
        }
    }
}
