//! One interface for every kind of spec: [`Experiment::run`] with [`RunOpts`] gives a
//! [`Report`], whatever the kind. The command line, the Python package and the lab run specs
//! through it, so none of them needs to know how a kind runs.

use lull_audit::AuditLog;
use serde_json::{json, Value};

use crate::hackbench::{run_hackbench_spec, HackbenchResult, HackbenchRunError, HackbenchSpec};
use crate::interbench::{
    run_interbench_spec, InterbenchResult, InterbenchRunError, InterbenchSpec,
};
use crate::load::{Header, Kind, Spec};
use crate::report::ExperimentResult;
use crate::spec::FrameworkSpec;
use crate::spec_error::{Problem, SpecError};
use crate::toggling::{run_toggling_spec_audited, TogglingResult, TogglingRunError, TogglingSpec};
use crate::ucsg::{run_ucsg_spec_audited, UcsgResult, UcsgRunError, UcsgSpec};
use crate::vtcfs::{run_painting_spec, PaintingResult, PaintingRunError, PaintingSpec};
use crate::world::run_spec_audited;

/// How to run a spec: overrides of its own choices and what to record beside the figures. The
/// default runs the spec as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunOpts {
    /// Instead of the spec's seed.
    pub seed: Option<u64>,
    /// Only these of the spec's models, each one of them.
    pub models: Option<Vec<String>>,
    /// `[policy]` slots as a command line names them, `("scheduler", "eevdf")` (framework
    /// specs; the other kinds' models name their policies).
    pub policy: Vec<(String, String)>,
    /// The seed's size instead of the spec's (interbench: 30 s runs, ten of them; hackbench:
    /// 100 loops).
    pub seed_size: bool,
    /// Record each model's scheduling events as an audit log (framework, UCSG and toggling
    /// specs).
    pub audit: bool,
}

/// What a run of a spec gives: its figures and, when asked for, each model's audit log.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub figures: Figures,
    /// `(model, its scheduling events)` in the spec's model order; empty unless
    /// [`RunOpts::audit`].
    pub audit_logs: Vec<(String, AuditLog)>,
}

/// Each kind's figures.
#[derive(Clone, Debug, PartialEq)]
pub enum Figures {
    Framework(ExperimentResult),
    Ucsg(UcsgResult),
    Painting(PaintingResult),
    Interbench(InterbenchResult),
    Hackbench(HackbenchResult),
    Toggling(TogglingResult),
}

impl Figures {
    #[must_use]
    pub fn kind(&self) -> Kind {
        match self {
            Figures::Framework(_) => Kind::Framework,
            Figures::Ucsg(_) => Kind::Ucsg,
            Figures::Painting(_) => Kind::Painting,
            Figures::Interbench(_) => Kind::Interbench,
            Figures::Hackbench(_) => Kind::Hackbench,
            Figures::Toggling(_) => Kind::Toggling,
        }
    }

    /// The JSON `lull sim run --json` prints for the spec (with the seed's figures beside
    /// ours where a kind has them).
    #[must_use]
    pub fn to_json(&self) -> Value {
        match self {
            Figures::Framework(r) => r.to_json(),
            Figures::Ucsg(r) => json!(r),
            Figures::Painting(r) => r.to_json(),
            Figures::Interbench(r) => json!(r),
            Figures::Hackbench(r) => json!(r),
            Figures::Toggling(r) => json!(r),
        }
    }
}

/// Why a run failed: an option the spec refuses, or the kind's own run error.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Ucsg(#[from] UcsgRunError),
    #[error(transparent)]
    Painting(#[from] PaintingRunError),
    #[error(transparent)]
    Interbench(#[from] InterbenchRunError),
    #[error(transparent)]
    Hackbench(#[from] HackbenchRunError),
    #[error(transparent)]
    Toggling(#[from] TogglingRunError),
}

impl From<Problem> for RunError {
    fn from(p: Problem) -> RunError {
        RunError::Spec(SpecError::new(p))
    }
}

/// An experiment a spec describes.
pub trait Experiment {
    fn kind(&self) -> Kind;
    fn header(&self) -> &Header;
    /// The models it runs, in its order.
    fn model_names(&self) -> Vec<String>;
    /// Runs every model (or those `opts` names) and reports.
    ///
    /// # Errors
    /// An option the kind has no use for or the spec refuses ([`RunError::Spec`]), or the
    /// kind's run error.
    fn run(&self, opts: &RunOpts) -> Result<Report, RunError>;
}

/// Refuses the options a kind has no use for.
fn refuse(
    kind: Kind,
    opts: &RunOpts,
    policy: bool,
    seed_size: bool,
    audit: bool,
) -> Result<(), Problem> {
    for (given, allowed, option) in [
        (!opts.policy.is_empty(), policy, "a [policy] override"),
        (opts.seed_size, seed_size, "the seed's size"),
        (opts.audit, audit, "an audit log"),
    ] {
        if given && !allowed {
            return Err(Problem::NotApplicable { option, kind });
        }
    }
    Ok(())
}

/// Keeps only the models `opts` names, after checking each is one of `models`.
fn keep_models<M>(
    models: &mut Vec<M>,
    name: impl Fn(&M) -> String,
    opts: &RunOpts,
) -> Result<(), Problem> {
    let Some(names) = &opts.models else {
        return Ok(());
    };
    let known: Vec<String> = models.iter().map(&name).collect();
    if names.is_empty() {
        return Err(crate::spec_error::invalid("models", "no model to run"));
    }
    if let Some(n) = names.iter().find(|n| !known.contains(n)) {
        return Err(Problem::Invalid {
            field: "models",
            reason: format!(
                "`{n}` is not one of this spec's models ({})",
                known.join(", ")
            ),
        });
    }
    models.retain(|m| names.contains(&name(m)));
    Ok(())
}

fn with_seed(header: &mut Header, opts: &RunOpts) {
    if let Some(s) = opts.seed {
        header.seed = s;
    }
}

/// The accessors every kind's spec has alike: its kind, its header, its models' names.
macro_rules! accessors {
    ($kind:expr, |$m:ident| $name:expr) => {
        fn kind(&self) -> Kind {
            $kind
        }
        fn header(&self) -> &Header {
            &self.header
        }
        fn model_names(&self) -> Vec<String> {
            self.models.iter().map(|$m| $name).collect()
        }
    };
}

fn report(figures: Figures, audit_logs: Vec<(String, AuditLog)>) -> Report {
    Report {
        figures,
        audit_logs,
    }
}

impl Experiment for FrameworkSpec {
    accessors!(Kind::Framework, |m| m.name().to_owned());
    fn run(&self, opts: &RunOpts) -> Result<Report, RunError> {
        refuse(Kind::Framework, opts, true, false, true)?;
        let mut spec = self.clone();
        with_seed(&mut spec.header, opts);
        keep_models(&mut spec.models, |m| m.name().to_owned(), opts)?;
        for (slot, name) in &opts.policy {
            spec.set_policy(slot, name)?;
        }
        let (r, logs) = run_spec_audited(&spec, opts.audit)?;
        Ok(report(Figures::Framework(r), logs))
    }
}

impl Experiment for UcsgSpec {
    accessors!(Kind::Ucsg, |m| m.name().to_owned());
    fn run(&self, opts: &RunOpts) -> Result<Report, RunError> {
        refuse(Kind::Ucsg, opts, false, false, true)?;
        let mut spec = self.clone();
        with_seed(&mut spec.header, opts);
        keep_models(&mut spec.models, |m| m.name().to_owned(), opts)?;
        let (r, logs) = run_ucsg_spec_audited(&spec, opts.audit)?;
        Ok(report(Figures::Ucsg(r), logs))
    }
}

impl Experiment for PaintingSpec {
    accessors!(Kind::Painting, |m| m.name().to_owned());
    fn run(&self, opts: &RunOpts) -> Result<Report, RunError> {
        refuse(Kind::Painting, opts, false, false, false)?;
        let mut spec = self.clone();
        with_seed(&mut spec.header, opts);
        keep_models(&mut spec.models, |m| m.name().to_owned(), opts)?;
        let r = run_painting_spec(&spec)?;
        Ok(report(Figures::Painting(r), Vec::new()))
    }
}

impl Experiment for InterbenchSpec {
    accessors!(Kind::Interbench, |m| m.name.clone());
    fn run(&self, opts: &RunOpts) -> Result<Report, RunError> {
        refuse(Kind::Interbench, opts, false, true, false)?;
        let mut spec = self.clone();
        with_seed(&mut spec.header, opts);
        keep_models(&mut spec.models, |m| m.name.clone(), opts)?;
        if opts.seed_size {
            spec.seed_size();
        }
        let r = run_interbench_spec(&spec)?;
        Ok(report(Figures::Interbench(r), Vec::new()))
    }
}

impl Experiment for HackbenchSpec {
    accessors!(Kind::Hackbench, |m| m.name.clone());
    fn run(&self, opts: &RunOpts) -> Result<Report, RunError> {
        refuse(Kind::Hackbench, opts, false, true, false)?;
        let mut spec = self.clone();
        with_seed(&mut spec.header, opts);
        keep_models(&mut spec.models, |m| m.name.clone(), opts)?;
        if opts.seed_size {
            spec.seed_size();
        }
        let r = run_hackbench_spec(&spec)?;
        Ok(report(Figures::Hackbench(r), Vec::new()))
    }
}

impl Experiment for TogglingSpec {
    accessors!(Kind::Toggling, |m| m.name());
    fn run(&self, opts: &RunOpts) -> Result<Report, RunError> {
        refuse(Kind::Toggling, opts, false, false, true)?;
        let mut spec = self.clone();
        with_seed(&mut spec.header, opts);
        keep_models(&mut spec.models, |m| m.name(), opts)?;
        if !spec
            .models
            .contains(&lull_sched::controller::Scheme::Baseline)
        {
            return Err(crate::spec_error::invalid(
                "models",
                "keep `baseline` (the speedups are against it)",
            )
            .into());
        }
        let (r, logs) = run_toggling_spec_audited(&spec, opts.audit)?;
        Ok(report(Figures::Toggling(r), logs))
    }
}

impl Spec {
    fn experiment(&self) -> &dyn Experiment {
        match self {
            Spec::Framework(s) => s,
            Spec::Ucsg(s) => s,
            Spec::Painting(s) => s,
            Spec::Interbench(s) => s,
            Spec::Hackbench(s) => s,
            Spec::Toggling(s) => s,
        }
    }
}

impl Experiment for Spec {
    fn kind(&self) -> Kind {
        Spec::kind(self)
    }
    fn header(&self) -> &Header {
        self.experiment().header()
    }
    fn model_names(&self) -> Vec<String> {
        self.experiment().model_names()
    }
    fn run(&self, opts: &RunOpts) -> Result<Report, RunError> {
        self.experiment().run(opts)
    }
}
