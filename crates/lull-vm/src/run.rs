//! Boots the guest, runs one command in it, and brings back its exit status, output and files.

use std::ffi::OsString;
use std::fs;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::boot::{self, run_files, Accel, QemuPlan, TcgThreads, RUN_DIR};
use crate::cache::Cache;
use crate::error::VmError;
use crate::kernel::{KernelImage, GUEST_MODULES};

/// The guest machine.
#[derive(Clone, Debug)]
pub struct GuestConfig {
    /// Kernel release (default [`crate::kernel::DEFAULT_RELEASE`]).
    pub kernel: Option<String>,
    /// `None`: KVM where a probe boot with it has succeeded on this machine, else TCG.
    pub accel: Option<Accel>,
    /// How TCG runs the guest's CPUs (single-threaded by default; see [`TcgThreads`]).
    pub tcg_threads: TcgThreads,
    pub cpus: u32,
    pub mem_mib: u32,
    /// How long the guest may take to reach the command.
    pub boot_timeout_s: u64,
    /// How long the command may run.
    pub timeout_s: u64,
}

/// Two CPUs, as the machines the project runs on have; memory enough for the workspace's test
/// binaries and a Chromium-free run, a twelfth of such a machine's 24 GiB.
pub const DEFAULT_CPUS: u32 = 2;
pub const DEFAULT_MEM_MIB: u32 = 2048;
/// A TCG boot takes about 3 s on an idle 2-CPU host; 30× that covers a loaded one.
pub const DEFAULT_BOOT_TIMEOUT_S: u64 = 90;
/// The longest command the default allows: a full guest test run is about a minute.
pub const DEFAULT_TIMEOUT_S: u64 = 1_800;
/// A KVM boot reaches the command in about a second; where nested KVM fails, QEMU stops the
/// guest with an emulation error and waits, so the probe gives up after this.
const KVM_PROBE_TIMEOUT_S: u64 = 10;
/// How often the host looks at the guest's files while it runs (output shown, deadlines).
const POLL_INTERVAL: Duration = Duration::from_millis(20);
/// Lines of the guest's console shown when a run fails.
const CONSOLE_TAIL_LINES: usize = 25;

impl Default for GuestConfig {
    fn default() -> Self {
        GuestConfig {
            kernel: None,
            accel: None,
            tcg_threads: TcgThreads::default(),
            cpus: DEFAULT_CPUS,
            mem_mib: DEFAULT_MEM_MIB,
            boot_timeout_s: DEFAULT_BOOT_TIMEOUT_S,
            timeout_s: DEFAULT_TIMEOUT_S,
        }
    }
}

/// One command for the guest.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// The command and its arguments, run as root with the host's `/bin/sh` and `PATH` lookup.
    pub argv: Vec<OsString>,
    /// Working directory inside the guest (the host's files, read-only).
    pub cwd: PathBuf,
    /// Extra environment beyond what every run gets (see [`base_env`]).
    pub env: Vec<(String, String)>,
    /// The writable directory shared with the guest at the same path; the command's result
    /// files go here. Created if missing.
    pub out_dir: PathBuf,
    /// Copy the command's output to this process's stdout and stderr while it runs.
    pub echo: bool,
}

/// What a run brought back.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunOutcome {
    /// The command's exit status (126/127 when it could not be run, 128 + N on signal N).
    pub exit_code: i32,
    pub kernel_release: String,
    pub accel: Accel,
    /// How TCG ran the guest's CPUs; `None` under KVM.
    pub tcg_threads: Option<TcgThreads>,
    pub cpus: u32,
    /// Host wall time from QEMU's start to the command's start (boot-to-first-command).
    pub boot_ms: u64,
    /// The guest's own uptime when the command started.
    pub guest_uptime_at_command_ms: u64,
    /// Host wall time of the whole run, QEMU's start to its exit.
    pub wall_ms: u64,
    pub out_dir: PathBuf,
    pub stdout_path: PathBuf,
    pub stderr_path: PathBuf,
    pub console_path: PathBuf,
}

impl RunOutcome {
    /// The execution engine in words: `kvm`, or `tcg` and its threading.
    #[must_use]
    pub fn engine(&self) -> String {
        boot::engine(self.accel, self.tcg_threads)
    }

    pub fn stdout(&self) -> Result<String, VmError> {
        fs::read_to_string(&self.stdout_path).map_err(|e| VmError::io("read", &self.stdout_path, e))
    }
}

/// The environment every command gets: the host's `PATH` with the directory of the running
/// `lull` first (so `lull` in the guest is the build that started it), `HOME`, and
/// `LULL_GUEST=1`, `LULL_VM_OUT=<out dir>`.
#[must_use]
pub fn base_env(out_dir: &Path) -> Vec<(String, String)> {
    let mut path = std::env::var("PATH").unwrap_or_else(|_| "/usr/sbin:/usr/bin:/sbin:/bin".into());
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        path = format!("{}:{path}", dir.display());
    }
    let mut env = vec![
        ("PATH".to_string(), path),
        (
            "HOME".to_string(),
            std::env::var("HOME").unwrap_or_else(|_| "/root".into()),
        ),
        ("LULL_GUEST".to_string(), "1".to_string()),
        ("LULL_VM_OUT".to_string(), out_dir.display().to_string()),
    ];
    for k in ["RUST_BACKTRACE", "RUST_LOG", "TERM", "LANG"] {
        if let Ok(v) = std::env::var(k) {
            env.push((k.to_string(), v));
        }
    }
    env
}

/// Runs `req` in a guest. `log` hears set-up steps (fetching the kernel); the command's output
/// is in the outcome's files, and on this process's stdout/stderr when `req.echo`.
pub fn run(
    cache: &Cache,
    config: &GuestConfig,
    req: &RunRequest,
    log: &mut dyn FnMut(&str),
) -> Result<RunOutcome, VmError> {
    validate(config, req)?;
    let qemu = qemu_binary()?;
    let busybox = busybox_binary()?;
    let kernel = KernelImage::ensure(cache, config.kernel.as_deref(), log)?;
    let accel = match config.accel {
        Some(a) => a,
        None => auto_accel(cache, config, &kernel, &qemu, &busybox),
    };
    boot_and_run(&qemu, &busybox, &kernel, accel, config, req)
}

fn validate(config: &GuestConfig, req: &RunRequest) -> Result<(), VmError> {
    if req.argv.is_empty() {
        return Err(VmError::Invalid("no command to run in the guest".into()));
    }
    if !(1..=64).contains(&config.cpus) {
        return Err(VmError::Invalid(format!(
            "--cpus {} is not within 1..=64",
            config.cpus
        )));
    }
    if !(256..=65_536).contains(&config.mem_mib) {
        return Err(VmError::Invalid(format!(
            "--mem-mib {} is not within 256..=65536",
            config.mem_mib
        )));
    }
    if config.boot_timeout_s == 0 || config.timeout_s == 0 {
        return Err(VmError::Invalid("timeouts must be at least 1 s".into()));
    }
    if !req.cwd.is_absolute() {
        return Err(VmError::Invalid(format!(
            "the guest's working directory must be absolute: {}",
            req.cwd.display()
        )));
    }
    Ok(())
}

fn qemu_binary() -> Result<String, VmError> {
    const QEMU: &str = "qemu-system-x86_64";
    if crate::on_path(QEMU) {
        Ok(QEMU.to_string())
    } else {
        Err(VmError::ToolMissing {
            tool: QEMU,
            remedy: "install Debian's qemu-system-x86 (scripts/setup.sh does)",
        })
    }
}

fn busybox_binary() -> Result<PathBuf, VmError> {
    ["/bin/busybox", "/usr/bin/busybox"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or(VmError::ToolMissing {
            tool: "busybox",
            remedy: "install Debian's busybox-static (scripts/setup.sh does)",
        })
}

/// KVM only where a probe boot with it has worked on this machine (nested KVM fails on some
/// hosts with an emulation error); the probe's answer is kept in the cache.
fn auto_accel(
    cache: &Cache,
    config: &GuestConfig,
    kernel: &KernelImage,
    qemu: &str,
    busybox: &Path,
) -> Accel {
    if fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_err()
    {
        return Accel::Tcg;
    }
    let verdict = cache.root().join(format!("kvm-probe-{}", kernel.release));
    if let Ok(v) = fs::read_to_string(&verdict) {
        return if v.trim() == "ok" {
            Accel::Kvm
        } else {
            Accel::Tcg
        };
    }
    let out = cache
        .root()
        .join(format!("kvm-probe-run-{}", std::process::id()));
    let probe = RunRequest {
        argv: vec!["true".into()],
        cwd: PathBuf::from("/"),
        env: Vec::new(),
        out_dir: out.clone(),
        echo: false,
    };
    let short = GuestConfig {
        boot_timeout_s: KVM_PROBE_TIMEOUT_S,
        timeout_s: KVM_PROBE_TIMEOUT_S,
        ..config.clone()
    };
    let ok = matches!(
        boot_and_run(qemu, busybox, kernel, Accel::Kvm, &short, &probe),
        Ok(o) if o.exit_code == 0
    );
    let _ = fs::remove_dir_all(&out);
    let _ = fs::write(&verdict, if ok { "ok\n" } else { "fails\n" });
    if ok {
        Accel::Kvm
    } else {
        Accel::Tcg
    }
}

fn boot_and_run(
    qemu: &str,
    busybox: &Path,
    kernel: &KernelImage,
    accel: Accel,
    config: &GuestConfig,
    req: &RunRequest,
) -> Result<RunOutcome, VmError> {
    fs::create_dir_all(&req.out_dir).map_err(|e| VmError::io("create", &req.out_dir, e))?;
    let out_dir = req
        .out_dir
        .canonicalize()
        .map_err(|e| VmError::io("resolve", &req.out_dir, e))?;
    let run_dir = out_dir.join(RUN_DIR);
    let _ = fs::remove_dir_all(&run_dir);
    fs::create_dir_all(&run_dir).map_err(|e| VmError::io("create", &run_dir, e))?;
    let files = |name: &str| run_dir.join(name);

    let mut env = base_env(&out_dir);
    env.extend(req.env.iter().cloned());
    let script = boot::command_script(&req.argv, &req.cwd, &env);
    write(&files(run_files::COMMAND), script.as_bytes())?;

    // The initramfs goes beside the run's files but is removed at the end: it is rebuilt each
    // run (in milliseconds) and is 4 MB of nothing the caller needs.
    let initrd = files("initrd.cpio");
    write(&initrd, &guest_initramfs(busybox, kernel, &out_dir)?)?;
    let qemu_stderr = files("qemu.stderr");
    let plan = QemuPlan {
        accel,
        tcg_threads: config.tcg_threads,
        cpus: config.cpus,
        mem_mib: config.mem_mib,
        vmlinuz: kernel.vmlinuz.clone(),
        initrd: initrd.clone(),
        out_dir: out_dir.clone(),
        console_log: files(run_files::CONSOLE),
    };
    let stderr_file =
        fs::File::create(&qemu_stderr).map_err(|e| VmError::io("create", &qemu_stderr, e))?;
    let mut cmd = Command::new(qemu);
    cmd.args(boot::qemu_args(&plan))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr_file);
    // The kernel kills QEMU if this process dies first, so no guest outlives the run that
    // started it.
    lull_os::sys::kill_with_parent(&mut cmd);
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|source| VmError::Spawn {
        qemu: qemu.to_string(),
        source,
    })?;

    let mut echo_out = Tail::new(files(run_files::STDOUT));
    let mut echo_err = Tail::new(files(run_files::STDERR));
    let mut booted_at: Option<Duration> = None;
    let boot_limit = Duration::from_secs(config.boot_timeout_s);
    let run_limit = Duration::from_secs(config.timeout_s);
    let qemu_status = loop {
        if req.echo {
            echo_out.copy_to(&mut std::io::stdout());
            echo_err.copy_to(&mut std::io::stderr());
        }
        if booted_at.is_none() && files(run_files::BOOTED).exists() {
            booted_at = Some(start.elapsed());
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(VmError::io("wait for", PathBuf::from(qemu), e)),
        }
        if let Some(phase) = overdue(start.elapsed(), booted_at, boot_limit, run_limit) {
            let _ = child.kill();
            let _ = child.wait();
            let _ = fs::remove_file(&initrd);
            let limit_s = match phase {
                Phase::Boot => config.boot_timeout_s,
                Phase::Command => config.timeout_s,
            };
            return Err(VmError::Timeout {
                phase: phase.name(),
                limit_s,
                console_tail: timeout_detail(
                    &fs::read_to_string(&qemu_stderr).unwrap_or_default(),
                    console_tail(&files(run_files::CONSOLE)),
                ),
            });
        }
        std::thread::sleep(POLL_INTERVAL);
    };
    let wall = start.elapsed();
    if req.echo {
        echo_out.copy_to(&mut std::io::stdout());
        echo_err.copy_to(&mut std::io::stderr());
    }
    let _ = fs::remove_file(&initrd);
    let console = console_tail(&files(run_files::CONSOLE));
    let Some(booted_at) = booted_at.or_else(|| files(run_files::BOOTED).exists().then_some(wall))
    else {
        return Err(VmError::BootFailed {
            status: qemu_status.to_string(),
            qemu_stderr: fs::read_to_string(&qemu_stderr).unwrap_or_default(),
            console_tail: console,
        });
    };
    let status_text = fs::read_to_string(files(run_files::STATUS)).unwrap_or_default();
    let exit_code = status_text
        .trim()
        .parse::<i32>()
        .map_err(|_| VmError::NoStatus {
            status: qemu_status.to_string(),
            console_tail: console,
        })?;
    let uptime = fs::read_to_string(files(run_files::BOOTED)).unwrap_or_default();
    Ok(RunOutcome {
        exit_code,
        kernel_release: kernel.release.clone(),
        accel,
        tcg_threads: (accel == Accel::Tcg).then_some(config.tcg_threads),
        cpus: config.cpus,
        boot_ms: millis(booted_at),
        guest_uptime_at_command_ms: parse_uptime_ms(&uptime).unwrap_or(0),
        wall_ms: millis(wall),
        out_dir,
        stdout_path: files(run_files::STDOUT),
        stderr_path: files(run_files::STDERR),
        console_path: files(run_files::CONSOLE),
    })
}

/// The guest's initramfs: busybox, the modules the guest loads, the kernel's configuration and
/// the init script that runs the command and writes its results under `out_dir`.
fn guest_initramfs(
    busybox: &Path,
    kernel: &KernelImage,
    out_dir: &Path,
) -> Result<Vec<u8>, VmError> {
    let read = |p: &Path| fs::read(p).map_err(|e| VmError::io("read", p, e));
    let mut modules = Vec::new();
    for m in GUEST_MODULES {
        modules.push((
            m.to_string(),
            read(&kernel.modules_dir.join(format!("{m}.ko")))?,
        ));
    }
    Ok(boot::initramfs(
        &read(busybox)?,
        &modules,
        &read(&kernel.config)?,
        &boot::init_script(out_dir),
    ))
}

/// The part of a run that can overrun its limit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// From QEMU's start to the guest's boot mark.
    Boot,
    /// From the boot mark to QEMU's exit.
    Command,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Boot => "boot",
            Phase::Command => "command",
        }
    }
}

/// The phase that overran at `elapsed` since QEMU started, if any: the boot until the guest
/// marked itself booted (at `booted_at`), then the command, each against its own limit.
fn overdue(
    elapsed: Duration,
    booted_at: Option<Duration>,
    boot_limit: Duration,
    run_limit: Duration,
) -> Option<Phase> {
    match booted_at {
        None if elapsed > boot_limit => Some(Phase::Boot),
        Some(b) if elapsed > b + run_limit => Some(Phase::Command),
        _ => None,
    }
}

/// What a timeout reports: QEMU's own words first (a KVM that cannot run the guest says so
/// there), at most [`CONSOLE_TAIL_LINES`] of them, then the console's tail.
fn timeout_detail(qemu_stderr: &str, console_tail: String) -> String {
    let qemu_said: Vec<&str> = qemu_stderr.lines().take(CONSOLE_TAIL_LINES).collect();
    if qemu_said.is_empty() {
        console_tail
    } else {
        format!("QEMU said: {}\n{console_tail}", qemu_said.join("\n"))
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), VmError> {
    fs::write(path, bytes).map_err(|e| VmError::io("write", path, e))
}

/// `/proc/uptime`'s first field in milliseconds.
fn parse_uptime_ms(text: &str) -> Option<u64> {
    let secs: f64 = text.split_whitespace().next()?.parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| (secs * 1e3).round() as u64)
}

/// The console's lines that explain a failed run: where the kernel reported a fault (an oops,
/// a `BUG:` or a panic), the first report from its start, which names the fault and its call
/// trace (a panic's last lines repeat only the second CPU's fall); otherwise the last lines.
fn console_tail(path: &Path) -> String {
    let text = fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return format!("(the guest's console, {}, is empty)", path.display());
    }
    let fault = lines
        .iter()
        .position(|l| KERNEL_FAULT_MARKS.iter().any(|m| l.contains(m)));
    if let Some(first) = fault {
        let to = (first + CONSOLE_TAIL_LINES).min(lines.len());
        return format!(
            "the guest's kernel failed; its first report (console {}):\n{}",
            path.display(),
            lines[first..to].join("\n")
        );
    }
    let from = lines.len().saturating_sub(CONSOLE_TAIL_LINES);
    format!(
        "last lines of the guest's console ({}):\n{}",
        path.display(),
        lines[from..].join("\n")
    )
}

/// How the kernel's console begins a fault report (`oops_begin`, `BUG()`, `panic()`).
const KERNEL_FAULT_MARKS: [&str; 3] = ["Oops: ", "BUG: ", "Kernel panic - "];

/// Follows a file the guest appends to.
struct Tail {
    path: PathBuf,
    offset: u64,
}

impl Tail {
    fn new(path: PathBuf) -> Tail {
        Tail { path, offset: 0 }
    }

    fn copy_to(&mut self, out: &mut dyn std::io::Write) {
        let Ok(mut f) = fs::File::open(&self.path) else {
            return;
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut buf = Vec::new();
        if f.read_to_end(&mut buf).is_ok() && !buf.is_empty() {
            self.offset += buf.len() as u64;
            let _ = out.write_all(&buf);
            let _ = out.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boot_then_the_command_each_overrun_their_own_limit() {
        let s = Duration::from_secs;
        let (boot, run) = (s(60), s(10));
        assert_eq!(overdue(s(60), None, boot, run), None);
        assert_eq!(overdue(s(61), None, boot, run), Some(Phase::Boot));
        // Booted at 50 s: the command has until 60 s, past the boot's limit.
        assert_eq!(overdue(s(60), Some(s(50)), boot, run), None);
        assert_eq!(overdue(s(61), Some(s(50)), boot, run), Some(Phase::Command));
        assert_eq!(Phase::Boot.name(), "boot");
        assert_eq!(Phase::Command.name(), "command");
    }

    #[test]
    fn a_timeout_says_what_qemu_said_first() {
        assert_eq!(timeout_detail("", "console".into()), "console");
        assert_eq!(
            timeout_detail("kvm: no\nsecond\n", "console".into()),
            "QEMU said: kvm: no\nsecond\nconsole"
        );
        let long: String = (0..100).map(|i| format!("{i}\n")).collect();
        let detail = timeout_detail(&long, String::new());
        assert_eq!(detail.lines().count(), CONSOLE_TAIL_LINES);
    }

    #[test]
    fn uptime_parses_the_first_field() {
        assert_eq!(parse_uptime_ms("3.25 5.10\n"), Some(3250));
        assert_eq!(parse_uptime_ms(""), None);
        assert_eq!(parse_uptime_ms("-1 0"), None);
        assert_eq!(parse_uptime_ms("x"), None);
    }

    #[test]
    fn bad_requests_are_refused_before_anything_starts() {
        let req = RunRequest {
            argv: vec![],
            cwd: "/".into(),
            env: vec![],
            out_dir: "/tmp".into(),
            echo: false,
        };
        let c = GuestConfig::default();
        assert!(matches!(validate(&c, &req), Err(VmError::Invalid(m)) if m.contains("no command")));
        let req = RunRequest {
            argv: vec!["true".into()],
            cwd: "rel".into(),
            ..req
        };
        assert!(matches!(validate(&c, &req), Err(VmError::Invalid(m)) if m.contains("absolute")));
        let req = RunRequest {
            cwd: "/".into(),
            ..req
        };
        assert!(validate(&c, &req).is_ok());
        let c0 = GuestConfig {
            cpus: 0,
            ..GuestConfig::default()
        };
        assert!(validate(&c0, &req).is_err());
        let t0 = GuestConfig {
            timeout_s: 0,
            ..GuestConfig::default()
        };
        assert!(validate(&t0, &req).is_err());
    }

    #[test]
    fn console_tail_keeps_the_last_lines() {
        let scratch = lull_os::fileout::ScratchDir::new("lull-vm-tail").unwrap();
        let dir = scratch.path();
        let p = dir.join("console.log");
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        fs::write(&p, text).unwrap();
        let t = console_tail(&p);
        assert!(t.contains("line 99") && t.contains("line 75") && !t.contains("line 74\n"));
        let mut oops = String::from("boot 1\nboot 2\n[ 28.1] Oops: int3: 0000 [#1] SMP\n");
        oops += &(0..40).map(|i| format!("trace {i}\n")).collect::<String>();
        oops += "[ 28.2] Kernel panic - not syncing: Fatal exception\n";
        fs::write(&p, oops).unwrap();
        let t = console_tail(&p);
        assert!(t.contains("first report") && t.contains("Oops: int3") && t.contains("trace 0"));
        assert!(!t.contains("boot 2") && !t.contains("Kernel panic"), "{t}");
        let missing = console_tail(&dir.join("none"));
        assert!(missing.contains("is empty"));
    }
}
