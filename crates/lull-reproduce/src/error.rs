//! Why a section could not run: one error type for every section of the registry.

use std::path::PathBuf;

use crate::spec_file::SpecFileError;

/// A simulator run of one spec that failed, by the spec's kind.
#[derive(Debug, thiserror::Error)]
pub enum SimRunError {
    #[error(transparent)]
    Framework(#[from] lull_sim::SpecError),
    #[error(transparent)]
    Policy(#[from] lull_sim::Problem),
    #[error(transparent)]
    Ucsg(#[from] lull_sim::ucsg::UcsgRunError),
    #[error(transparent)]
    Painting(#[from] lull_sim::vtcfs::PaintingRunError),
    #[error(transparent)]
    Interbench(#[from] lull_sim::interbench::InterbenchRunError),
    #[error(transparent)]
    Hackbench(#[from] lull_sim::hackbench::HackbenchRunError),
    #[error(transparent)]
    Toggling(#[from] lull_sim::toggling::TogglingRunError),
}

/// Why a section could not run.
#[derive(Debug, thiserror::Error)]
pub enum SectionError {
    /// A directory of specs or workloads could not be listed.
    #[error("{}: {source} (run from the repository root)", dir.display())]
    Dir {
        dir: PathBuf,
        source: std::io::Error,
    },
    /// A directory holds none of the files the section runs.
    #[error("{}: no {what}", dir.display())]
    NoFiles { dir: PathBuf, what: &'static str },
    /// A spec file could not be read or was refused.
    #[error("{0} (run from the repository root)")]
    SpecFile(#[from] SpecFileError),
    /// The simulator refused to run a spec.
    #[error("{}: {source}", path.display())]
    Sim {
        path: PathBuf,
        source: Box<SimRunError>,
    },
    #[error(transparent)]
    ComposeBench(#[from] lull_lab::bench::ComposeBenchError),
    #[error(transparent)]
    Figure18(#[from] lull_lab::kds_demo::DemoError),
    /// A live run of one delivery model (`what` names it).
    #[error("{what}: {source}")]
    Live {
        what: String,
        source: lull_lab::live::LiveError,
    },
    #[error(transparent)]
    Apps(#[from] lull_lab::experiment::ExperimentError),
    #[error(transparent)]
    Audit(#[from] lull_lab::audit::AuditError),
    #[error(transparent)]
    Validate(#[from] lull_lab::validate::compare::ValidateError),
    #[error(transparent)]
    Controller(#[from] lull_ctl::CtlError),
    #[error(transparent)]
    Toggling(#[from] lull_lab::toggling_live::TogglingError),
    /// The lab guest could not be run.
    #[error(transparent)]
    Vm(#[from] lull_vm::VmError),
    /// `lull lab sched` ran in the guest and failed (the last lines it wrote).
    #[error("lull lab sched in the guest ended with {code}: {tail}")]
    GuestFailed { code: i32, tail: String },
    /// What the guest printed was not a scheduler report.
    #[error("the guest's report: {0}")]
    GuestReport(serde_json::Error),
    /// A section's results did not serialise.
    #[error("the section's JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A file the section reads or writes.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl SectionError {
    /// A simulator run's error, naming the spec.
    pub(crate) fn sim(path: impl Into<PathBuf>, e: impl Into<SimRunError>) -> SectionError {
        SectionError::Sim {
            path: path.into(),
            source: Box::new(e.into()),
        }
    }
}
