//! Lull's lab machine: a QEMU guest on Debian's newest packaged kernel, for what the host's
//! kernel may lack and users' kernels have (sched_ext, `/dev/input` and uinput, HID-BPF, BTF).
//!
//! The guest boots Debian's kernel with a busybox initramfs, mounts the host's root read-only
//! over 9p (so the host's binaries and libraries run unchanged), gives the command writable
//! `/tmp`, `/run` and an output directory shared with the host at the same path, runs the
//! command as root and powers off. The host gets back the exit status, stdout, stderr, the
//! guest's console and dmesg, and whatever the command wrote to the output directory.
//!
//! Under TCG (QEMU's translator; nested KVM fails on the machines the project runs on) the
//! guest is 10–50× slower than the host: counts it measures are exact, times compare only as
//! ratios within one guest run (`docs/lab-vm.md`).

pub mod boot;
pub mod cache;
mod cpio;
pub mod error;
pub mod kernel;
pub mod probe;
pub mod run;
pub mod suite;

use std::path::Path;

pub use boot::{Accel, TcgThreads};
pub use cache::Cache;
pub use error::VmError;
pub use kernel::KernelImage;
pub use probe::{GuestFacts, ProbeReport};
pub use run::{GuestConfig, RunOutcome, RunRequest};
pub use suite::SuiteResult;

/// True when `tool` is an executable file in a `PATH` directory.
pub(crate) fn on_path(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            std::fs::metadata(d.join(tool))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// Boots the guest once and reports what it has.
pub fn probe(
    cache: &Cache,
    config: &GuestConfig,
    log: &mut dyn FnMut(&str),
) -> Result<ProbeReport, VmError> {
    let out = probe::scratch_dir(cache.root());
    let req = RunRequest {
        argv: vec!["/bin/sh".into(), "-c".into(), probe::PROBE_SCRIPT.into()],
        cwd: "/".into(),
        env: Vec::new(),
        out_dir: out.clone(),
        echo: false,
    };
    let result = run::run(cache, config, &req, log).and_then(|o| {
        let text = o.stdout()?;
        if o.exit_code != 0 {
            return Err(VmError::Parse {
                what: "probe output",
                detail: format!("the probe exited with {}", o.exit_code),
            });
        }
        Ok(ProbeReport {
            facts: probe::parse_facts(&text)?,
            accel: o.accel,
            boot_ms: o.boot_ms,
            wall_ms: o.wall_ms,
            cache_dir: cache.root().display().to_string(),
            cache_bytes: 0,
        })
    });
    let _ = std::fs::remove_dir_all(&out);
    result.map(|mut r| {
        r.cache_bytes = cache.size_bytes();
        r
    })
}

/// The result of the workspace's guest tests, with how the guest ran.
#[derive(Clone, Debug, serde::Serialize)]
pub struct GuestTestReport {
    pub suite: SuiteResult,
    pub kernel_release: String,
    pub accel: Accel,
    /// How TCG ran the guest's CPUs; `None` under KVM.
    pub tcg_threads: Option<TcgThreads>,
    pub boot_ms: u64,
    pub wall_ms: u64,
}

impl GuestTestReport {
    /// The execution engine in words ([`boot::engine`]).
    #[must_use]
    pub fn engine(&self) -> String {
        boot::engine(self.accel, self.tcg_threads)
    }
}

/// Finds the workspace's guest test binaries, runs them all in one guest (their output shown as
/// it comes), and counts what passed.
pub fn run_guest_tests(
    cache: &Cache,
    config: &GuestConfig,
    workspace: &Path,
    out_dir: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<GuestTestReport, VmError> {
    let binaries = suite::find_guest_tests(workspace)?;
    if binaries.is_empty() {
        return Err(VmError::Invalid(format!(
            "no {}* test targets in the workspace at {}",
            suite::GUEST_TEST_PREFIX,
            workspace.display()
        )));
    }
    log(&format!("lab vm: {} guest test binaries", binaries.len()));
    let req = RunRequest {
        argv: suite::guest_command(&binaries),
        cwd: workspace.to_path_buf(),
        env: Vec::new(),
        out_dir: out_dir.to_path_buf(),
        echo: true,
    };
    let outcome = run::run(cache, config, &req, log)?;
    let suite = suite::parse_output(&outcome.stdout()?, &binaries);
    Ok(GuestTestReport {
        suite,
        tcg_threads: outcome.tcg_threads,
        kernel_release: outcome.kernel_release,
        accel: outcome.accel,
        boot_ms: outcome.boot_ms,
        wall_ms: outcome.wall_ms,
    })
}
