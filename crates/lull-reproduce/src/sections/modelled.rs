//! The modelled sections: the shipped specs under `experiments/`, run in the simulator.

use std::path::Path;
use std::time::Instant;

use lull_sim::hackbench::{run_hackbench_spec, HackbenchSpec};
use lull_sim::interbench::{run_interbench_spec, InterbenchSpec};
use lull_sim::toggling::{run_toggling_spec, TogglingSpec};
use lull_sim::ucsg::{run_ucsg_spec, UcsgSpec};
use lull_sim::vtcfs::{run_painting_spec, PaintingSpec};
use lull_sim::{run_spec, FrameworkSpec};

use super::files_in;
use crate::data::{Marz, MarzPolicies, Toggling, Ucsg, Vtcfs, POLICY_SETS};
use crate::spec_file::read_spec_of;
use crate::{ReproduceOpts, SectionData, SectionError};

/// Where the seed-000 specs live, relative to the working directory.
pub const MARZ_DIR: &str = "experiments/marz";
/// Where the UCSG specs live.
pub const UCSG_DIR: &str = "experiments/ucsg";
/// Where seed 003's specs live (painting, interbench, hackbench).
pub const VTCFS_DIR: &str = "experiments/vtcfs";
/// The painting spec `vtcfs_sim` runs.
pub const PAINTING_SPEC: &str = "experiments/vtcfs/painting.toml";
/// The toggling specs `toggling_sim` runs.
pub const TOGGLING_SPECS: [&str; 2] = [
    "experiments/toggling/blackscholes.toml",
    "experiments/toggling/vips.toml",
];

/// `marz_sim`: every spec under [`MARZ_DIR`], in name order.
///
/// # Errors
/// The directory or a spec cannot be read, or a spec cannot run.
pub fn marz(_: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let paths = files_in(MARZ_DIR, "", "toml", "seed-000 specs")?;
    let started = Instant::now();
    let mut results = Vec::new();
    for p in &paths {
        let spec: FrameworkSpec = read_spec_of(p)?;
        results.push(run_spec(&spec).map_err(|e| SectionError::sim(p, e))?);
    }
    Ok(SectionData::Marz(Box::new(Marz {
        results,
        wall_s: started.elapsed().as_secs_f64(),
    })))
}

/// `marz_policies`: every spec under [`MARZ_DIR`] under each of [`POLICY_SETS`].
///
/// # Errors
/// As [`marz`], or a policy set the spec refuses.
pub fn marz_policies(_: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let mut experiments = Vec::new();
    for p in &files_in(MARZ_DIR, "", "toml", "seed-000 specs")? {
        let base: FrameworkSpec = read_spec_of(p)?;
        let mut runs = Vec::new();
        for (set, scheduler, governor) in POLICY_SETS {
            let mut spec = base.clone();
            spec.set_policy("scheduler", scheduler)
                .and_then(|()| spec.set_policy("governor", governor))
                .map_err(|e| SectionError::sim(p, e))?;
            runs.push((set, run_spec(&spec).map_err(|e| SectionError::sim(p, e))?));
        }
        experiments.push((base.header.experiment.clone(), runs));
    }
    Ok(SectionData::MarzPolicies(Box::new(MarzPolicies {
        experiments,
    })))
}

/// `ucsg_sim`: every spec under [`UCSG_DIR`], in name order.
///
/// # Errors
/// The directory or a spec cannot be read, or a spec cannot run.
pub fn ucsg(_: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let started = Instant::now();
    let mut results = Vec::new();
    for p in files_in(UCSG_DIR, "", "toml", "UCSG specs")? {
        let spec: UcsgSpec = read_spec_of(&p)?;
        results.push(run_ucsg_spec(&spec).map_err(|e| SectionError::sim(&p, e))?);
    }
    Ok(SectionData::Ucsg(Box::new(Ucsg {
        results,
        wall_s: started.elapsed().as_secs_f64(),
    })))
}

/// `vtcfs_sim`: [`PAINTING_SPEC`], then every `interbench-*` and `hackbench*` spec under
/// [`VTCFS_DIR`].
///
/// # Errors
/// A spec cannot be read or run.
pub fn vtcfs(_: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let path = Path::new(PAINTING_SPEC);
    let spec: PaintingSpec = read_spec_of(path)?;
    let started = Instant::now();
    let painting = run_painting_spec(&spec).map_err(|e| SectionError::sim(path, e))?;
    let painting_wall_s = started.elapsed().as_secs_f64();
    let mut interbench = Vec::new();
    for p in files_in(VTCFS_DIR, "interbench-", "toml", "interbench-*.toml")? {
        let spec: InterbenchSpec = read_spec_of(&p)?;
        interbench.push(run_interbench_spec(&spec).map_err(|e| SectionError::sim(&p, e))?);
    }
    let mut hackbench = Vec::new();
    for p in files_in(VTCFS_DIR, "hackbench", "toml", "hackbench*.toml")? {
        let spec: HackbenchSpec = read_spec_of(&p)?;
        hackbench.push(run_hackbench_spec(&spec).map_err(|e| SectionError::sim(&p, e))?);
    }
    Ok(SectionData::Vtcfs(Box::new(Vtcfs {
        painting,
        painting_wall_s,
        interbench,
        hackbench,
    })))
}

/// `toggling_sim`: both [`TOGGLING_SPECS`].
///
/// # Errors
/// A spec cannot be read or run.
pub fn toggling(_: &ReproduceOpts) -> Result<SectionData, SectionError> {
    let mut results = Vec::new();
    for path in TOGGLING_SPECS {
        let spec: TogglingSpec = read_spec_of(Path::new(path))?;
        results.push(run_toggling_spec(&spec).map_err(|e| SectionError::sim(path, e))?);
    }
    Ok(SectionData::Toggling(Box::new(Toggling { results })))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sections read their specs relative to the repository root.
    fn at_root() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        std::env::set_current_dir(root).unwrap();
    }

    #[test]
    fn toggling_runs_both_specs_and_keys_its_json_by_experiment() {
        at_root();
        let opts = ReproduceOpts::new("lull".into());
        let data = toggling(&opts).unwrap();
        let json = data.to_json().unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 2, "{keys:?}");
        let SectionData::Toggling(t) = data else {
            panic!("toggling_sim returned another section's data")
        };
        assert!(t
            .results
            .iter()
            .all(|r| keys.contains(&&r.header.experiment)));
    }
}
