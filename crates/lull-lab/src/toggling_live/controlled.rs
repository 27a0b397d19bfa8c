//! One workload run under one policy through the live controller.

use std::ffi::OsString;

use lull_sched::controller::{CoreSets, Scheme};

use super::RunOutcome;

pub(super) fn run(
    _command: Vec<OsString>,
    scheme: Scheme,
    _sets: CoreSets,
    _sample_period_ns: u64,
) -> Result<RunOutcome, String> {
    Err(format!(
        "{}: the live controller (lull-ctl) is not part of this build",
        scheme.name()
    ))
}
