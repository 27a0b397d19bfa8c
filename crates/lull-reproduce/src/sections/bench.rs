//! The in-process benchmarks' sections.

use lull_lab::bench::{self, ComposeBenchConfig, DispatchBenchConfig};

use crate::{ReproduceOpts, SectionData, SectionError};

/// `dispatch_bench`: ESM dispatch throughput with the bench's defaults.
///
/// # Errors
/// None; the signature is every section's.
pub fn dispatch(_: &ReproduceOpts) -> Result<SectionData, SectionError> {
    Ok(SectionData::Dispatch(Box::new(bench::dispatch(
        &DispatchBenchConfig::default(),
    ))))
}

/// `kds_compose`: the compositor against `memcpy` with the bench's defaults.
///
/// # Errors
/// The bench's.
pub fn compose(_: &ReproduceOpts) -> Result<SectionData, SectionError> {
    Ok(SectionData::Compose(Box::new(bench::compose(
        &ComposeBenchConfig::default(),
    )?)))
}
