//! The `validation` section: every shipped rt-app workload live and in the simulator (the
//! comparison's JSON, which `lull validate kernel --json` prints too, is
//! [`crate::data::validation_json`]).

use lull_lab::validate::collection::validate_all;

use super::files_in;
use crate::data::Validation;
use crate::{ReproduceOpts, SectionData, SectionError};

/// Where the shipped validation workloads live, relative to the working directory.
pub const VALIDATION_DIR: &str = "experiments/validation";

/// The simulator's random seed in the section (`lull validate kernel`'s default).
const SECTION_SEED: u64 = 1;

/// The shipped workloads, in name order.
///
/// # Errors
/// The directory cannot be listed or holds no workload.
pub fn shipped() -> Result<Vec<std::path::PathBuf>, SectionError> {
    files_in(VALIDATION_DIR, "", "json", ".json workloads")
}

/// `validation`: every shipped workload both ways, live `opts.validation_runs` times.
///
/// # Errors
/// The workloads cannot be listed, or the comparison fails.
pub fn section(opts: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let (machine, profile, workloads) =
        validate_all(&shipped()?, SECTION_SEED, opts.validation_runs, |what| {
            lull_lab::progress::note(&format!("lull validate kernel: {what} …"));
        })?;
    Ok(SectionData::Validation(Box::new(Validation {
        machine,
        profile,
        workloads,
    })))
}
