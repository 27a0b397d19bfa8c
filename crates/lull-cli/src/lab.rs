//! `lull lab …`: the lab machine, a QEMU guest on Debian's newest kernel (`lull_vm`). This
//! parses and prints.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use lull_vm::run::{DEFAULT_BOOT_TIMEOUT_S, DEFAULT_CPUS, DEFAULT_MEM_MIB, DEFAULT_TIMEOUT_S};
use lull_vm::{Accel, Cache, GuestConfig, RunRequest, TcgThreads, VmError};

/// The exit status when the lab machine itself failed (no guest, a hung guest), as opposed to
/// the command in it; 125 as `docker run` and `git bisect run` use it.
const EXIT_LAB_FAILED: u8 = 125;

#[derive(Subcommand, Debug)]
pub enum LabCommand {
    /// Run one command as root in a QEMU guest on Debian's newest kernel (sched_ext, uinput,
    /// evdev, HID-BPF, BTF), with the host's files read-only and DIR shared writable; ends as
    /// the command did. `--probe` prints what the guest has; `--tests` runs the workspace's
    /// guest tests (tests/guest_*.rs) there.
    Vm(VmArgs),
    /// Inside the lab guest: Lull's sched_ext scheduler (lull-scx) against EEVDF, scx_lavd and
    /// scx_bpfland on seed 003's painting (2 and 10 hogs) and seed 001's file manager with ZIP
    /// and FTP; figures as ratios to EEVDF in the same run. Run it as
    /// `lull lab vm -- lull lab sched`.
    Sched(crate::lab_sched::SchedArgs),
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TcgThreadsArg {
    Single,
    Multi,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum AccelArg {
    /// KVM where a probe boot with it works on this machine, else TCG.
    Auto,
    Tcg,
    Kvm,
}

#[derive(Args, Debug)]
pub struct VmArgs {
    /// Print what the guest has: kernel, CPUs, sched_ext state, BTF, uinput, input devices.
    #[arg(long, conflicts_with_all = ["tests", "fetch", "command"])]
    probe: bool,
    /// Run the workspace's guest tests (integration tests in tests/guest_*.rs) in one guest and
    /// count them; skipped, with the reason, where no guest can be had.
    #[arg(long, conflicts_with_all = ["fetch", "command"])]
    tests: bool,
    /// Fetch the guest's kernel into the cache (once) and print the cache's place and size.
    #[arg(long, conflicts_with = "command")]
    fetch: bool,
    /// JSON instead of text (--probe, --tests, --fetch, and a command's run summary on stderr).
    #[arg(long)]
    json: bool,
    /// The writable directory shared with the guest at the same path, for result files
    /// (default: a new directory under the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Kernel release from Debian's trixie-backports (default: the pinned one).
    #[arg(long, value_name = "RELEASE")]
    kernel: Option<String>,
    #[arg(long, value_enum, default_value_t = AccelArg::Auto)]
    accel: AccelArg,
    /// How TCG runs the guest's CPUs: `single` (one host thread, the default) or `multi` (a host
    /// thread each, faster, but the guest kernel's live code patching, as loading a sched_ext
    /// scheduler does, sometimes panics it; see docs/lab-vm.md).
    #[arg(long, value_enum, default_value_t = TcgThreadsArg::Single)]
    tcg_threads: TcgThreadsArg,
    #[arg(long, default_value_t = DEFAULT_CPUS, value_parser = clap::value_parser!(u32).range(1..=64))]
    cpus: u32,
    #[arg(long, default_value_t = DEFAULT_MEM_MIB, value_parser = clap::value_parser!(u32).range(256..=65_536))]
    mem_mib: u32,
    /// Seconds the guest may take to reach the command before it is stopped.
    #[arg(long, default_value_t = DEFAULT_BOOT_TIMEOUT_S, value_parser = clap::value_parser!(u64).range(1..=3_600))]
    boot_timeout_s: u64,
    /// Seconds the command may run before the guest is stopped.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_S, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout_s: u64,
    /// The command and its arguments (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

pub fn run(cmd: LabCommand) -> ExitCode {
    match cmd {
        LabCommand::Vm(args) => vm(&args),
        LabCommand::Sched(args) => crate::lab_sched::run(&args),
    }
}

fn fail(e: &VmError) -> ExitCode {
    eprintln!("lull lab vm: {e}");
    ExitCode::from(EXIT_LAB_FAILED)
}

fn vm(args: &VmArgs) -> ExitCode {
    let config = GuestConfig {
        kernel: args.kernel.clone(),
        accel: match args.accel {
            AccelArg::Auto => None,
            AccelArg::Tcg => Some(Accel::Tcg),
            AccelArg::Kvm => Some(Accel::Kvm),
        },
        tcg_threads: match args.tcg_threads {
            TcgThreadsArg::Single => TcgThreads::Single,
            TcgThreadsArg::Multi => TcgThreads::Multi,
        },
        cpus: args.cpus,
        mem_mib: args.mem_mib,
        boot_timeout_s: args.boot_timeout_s,
        timeout_s: args.timeout_s,
    };
    let cache = match Cache::locate() {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let mut log = |line: &str| eprintln!("{line}");
    if args.fetch {
        return match lull_vm::KernelImage::ensure(&cache, config.kernel.as_deref(), &mut log) {
            Ok(k) => {
                let bytes = cache.size_bytes();
                if args.json {
                    let v = serde_json::json!({"kernel": k, "cache_dir": cache.root(), "cache_bytes": bytes});
                    println!("{v}");
                } else {
                    println!(
                        "Linux {} ({}) in {}; cache {:.1} MB",
                        k.release,
                        k.package_version,
                        cache.root().display(),
                        bytes as f64 / 1e6
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        };
    }
    if args.probe {
        return match lull_vm::probe(&cache, &config, &mut log) {
            Ok(r) => crate::output::print_report(&r, args.json, |r| r.to_text() + "\n"),
            Err(e) => fail(&e),
        };
    }
    if !args.tests && args.command.is_empty() {
        eprintln!(
            "lull lab vm: nothing to do: give a command after `--`, or --probe, --tests or --fetch"
        );
        return ExitCode::from(2);
    }
    // Without --out, the run's files go to a new private directory (mode 0700, unpredictable
    // name, never one planted in the shared temporary directory), kept for the user.
    let out = match &args.out {
        Some(o) => o.clone(),
        None => match lull_os::fileout::ScratchDir::new("lull-vm") {
            Ok(d) => d.keep(),
            Err(e) => {
                eprintln!("lull lab vm: output directory: {e}");
                return ExitCode::from(EXIT_LAB_FAILED);
            }
        },
    };
    if args.tests {
        return tests(&cache, &config, &out, args.json);
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let req = RunRequest {
        argv: args.command.clone(),
        cwd,
        env: Vec::new(),
        out_dir: out,
        echo: true,
    };
    match lull_vm::run::run(&cache, &config, &req, &mut log) {
        Ok(o) => {
            if args.json {
                eprintln!("{}", serde_json::to_string(&o).unwrap_or_default());
            } else {
                eprintln!(
                    "lab vm: Linux {} ({}, {} CPUs): boot to command {:.1} s, whole run {:.1} s; \
                     exit {}; output and results in {}",
                    o.kernel_release,
                    o.engine(),
                    o.cpus,
                    o.boot_ms as f64 / 1e3,
                    o.wall_ms as f64 / 1e3,
                    o.exit_code,
                    o.out_dir.display()
                );
            }
            ExitCode::from(u8::try_from(o.exit_code.clamp(0, 255)).unwrap_or(u8::MAX))
        }
        Err(e) => fail(&e),
    }
}

fn tests(cache: &Cache, config: &GuestConfig, out: &std::path::Path, json: bool) -> ExitCode {
    let workspace = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut log = |line: &str| eprintln!("{line}");
    match lull_vm::run_guest_tests(cache, config, &workspace, out, &mut log) {
        Ok(r) => {
            let (passed, failed) = (r.suite.passed(), r.suite.failed());
            if json {
                println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
            } else {
                for b in r.suite.binaries.iter().filter(|b| b.exit_code != Some(0)) {
                    let status = b
                        .exit_code
                        .map_or_else(|| "no exit status".to_owned(), |c| format!("exit {c}"));
                    eprintln!("lab guest: {} failed ({status})", b.binary);
                }
                println!(
                    "lab guest (Linux {}, {}): {} binaries, boot {:.1} s, run {:.1} s",
                    r.kernel_release,
                    r.engine(),
                    r.suite.binaries.len(),
                    r.boot_ms as f64 / 1e3,
                    r.wall_ms as f64 / 1e3
                );
                println!("lab-guest: {passed} passed, {failed} failed");
            }
            if failed == 0 && passed > 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) if e.is_unavailable() => {
            println!("lab guest tests SKIPPED (no guest on this machine): {e}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}
