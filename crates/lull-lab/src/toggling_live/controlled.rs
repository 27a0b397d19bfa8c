//! One workload run under one policy through the live controller (`lull_ctl::run`).

use std::ffi::OsString;

use lull_ctl::RunOptions;
use lull_sched::controller::{CoreSets, Scheme};

use super::failure::RunFailure;
use super::RunOutcome;

/// The controller's counter of CPU masks it applied (`lull_ctl::RunReport::controller`).
const MASKS_APPLIED: &str = "masks_applied";

pub(super) fn run(
    command: Vec<OsString>,
    scheme: Scheme,
    sets: CoreSets,
    sample_period_ns: u64,
) -> Result<RunOutcome, RunFailure> {
    let report = lull_ctl::run(&RunOptions {
        command,
        scheme,
        sets,
        sample_period_ns,
        discard_output: true,
    })?;
    if report.exit_code != Some(0) {
        return Err(match (report.signal, report.exit_code) {
            (Some(s), _) => RunFailure::Killed(s),
            (None, Some(code)) => RunFailure::Exited(code),
            (None, None) => RunFailure::NoExitStatus,
        });
    }
    Ok(RunOutcome {
        completion_ns: report.completion_ns,
        samples: Some(report.samples),
        sample_cost_ns_mean: Some(report.sample_cost_ns_mean),
        scaled: Some(report.scaled),
        masks: report.counter(MASKS_APPLIED),
    })
}
