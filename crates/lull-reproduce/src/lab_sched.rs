//! The `lab_sched` section: boots the lab guest (`lull-vm`) and runs `lull lab sched --json`
//! in it (`lull_lab::scx`: lull-scx against EEVDF, scx_lavd and scx_bpfland).

use lull_lab::scx::SchedReport;
use lull_vm::run::{DEFAULT_BOOT_TIMEOUT_S, DEFAULT_CPUS, DEFAULT_MEM_MIB};

use crate::data::LabSched;
use crate::{ReproduceOpts, SectionData, SectionError};

/// Painting events replayed per scenario (the stylus recording's first ones: enough strokes
/// for a p99 of a few hundred responses, short enough that twelve scenario runs fit a TCG
/// guest's hour).
pub const EVENTS: u64 = 300;
/// The file manager's scale (`lull live ucsg --scale`).
pub const SCALE: f64 = 0.1;
/// The longest the guest may run, s.
const TIMEOUT_S: u64 = 3_600;
/// Lines of the guest's standard error a failure quotes.
const ERROR_TAIL_LINES: usize = 5;

/// The guest's run and what it printed.
///
/// # Errors
/// Why no guest could run it, or what the run said.
pub fn section(opts: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let cache = lull_vm::Cache::locate()?;
    let config = lull_vm::GuestConfig {
        kernel: None,
        accel: None,
        tcg_threads: lull_vm::TcgThreads::default(),
        cpus: DEFAULT_CPUS,
        mem_mib: DEFAULT_MEM_MIB,
        boot_timeout_s: DEFAULT_BOOT_TIMEOUT_S,
        timeout_s: TIMEOUT_S,
    };
    let cwd = std::env::current_dir().map_err(|source| SectionError::Io {
        path: ".".into(),
        source,
    })?;
    // Private, and removed on every return (a guest that fails included).
    let scratch =
        lull_os::fileout::ScratchDir::new("lull-lab-sched").map_err(|source| SectionError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
    let req = lull_vm::RunRequest {
        argv: vec![
            opts.lull.clone().into_os_string(),
            "lab".into(),
            "sched".into(),
            "--json".into(),
            "--events".into(),
            EVENTS.to_string().into(),
            "--scale".into(),
            SCALE.to_string().into(),
        ],
        cwd,
        env: Vec::new(),
        out_dir: scratch.path().to_path_buf(),
        echo: false,
    };
    let mut log = |line: &str| lull_lab::progress::note(line);
    let outcome = lull_vm::run::run(&cache, &config, &req, &mut log)?;
    let stdout =
        std::fs::read_to_string(&outcome.stdout_path).map_err(|source| SectionError::Io {
            path: outcome.stdout_path.clone(),
            source,
        })?;
    let stderr = std::fs::read_to_string(&outcome.stderr_path).unwrap_or_default();
    if outcome.exit_code != 0 {
        return Err(SectionError::GuestFailed {
            code: outcome.exit_code,
            tail: tail(&stderr, ERROR_TAIL_LINES),
        });
    }
    let report: SchedReport = serde_json::from_str(&stdout).map_err(SectionError::GuestReport)?;
    Ok(SectionData::LabSched(Box::new(LabSched {
        report,
        accel: outcome.accel,
        tcg_threads: outcome.tcg_threads,
        guest_wall_ms: outcome.wall_ms,
    })))
}

/// The last `n` lines of `text`, joined by " / ".
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_failure_quotes_the_last_lines_in_order() {
        assert_eq!(super::tail("a\nb\nc\nd", 2), "c / d");
        assert_eq!(super::tail("a", 5), "a");
        assert_eq!(super::tail("", 5), "");
    }
}
