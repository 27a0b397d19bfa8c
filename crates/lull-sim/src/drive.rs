//! One run of a workload's threads on the simulated kernel, with no devices, display or window
//! manager: the event loop rt-app workloads, interbench and hackbench share — the spec's
//! policies, the platform's main cores, the power manager, until a time limit or until every
//! thread is done.

use crate::engine::Engine;
use crate::event::Ev;
use crate::kernel::{Cx, Kernel, Userspace};
use crate::platform::Platform;
use crate::pm::IdleForcing;
use crate::policy::{PolicyError, PolicySpec, RunPolicies};
use crate::seam::{SeamCounters, SeamDriver};
use crate::soc::Soc;
use crate::spec::CpuSpec;

/// A benchmark's user space as the loop drives it.
pub(crate) trait Workload: Userspace + IdleForcing {
    /// Wakes the threads that run from the start.
    fn start(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>);
    /// Whether every thread has finished (benchmarks that end by themselves: hackbench).
    fn finished(&self) -> bool;
    /// Threads that finished since the last call (told to a seam policy as exited).
    fn take_exited(&mut self) -> Vec<usize> {
        Vec::new()
    }
}

/// What a run may have beyond the spec's policies on the platform's main cluster.
#[derive(Debug, Default)]
pub(crate) struct Machine {
    /// Every core of every cluster online at once (a platform with `both_clusters_online`).
    pub all_clusters: bool,
    /// A placement that replaces the one the policies name (one that needs the platform's
    /// core types, such as `lull_sched::hmp::Hmp`).
    pub placement: Option<Box<dyn lull_sched::placement::Placement>>,
    /// A seam policy driven alongside the kernel.
    pub seam: Option<SeamDriver>,
    /// Record the scheduling events in the audit log format of `lull-audit`.
    pub audit: bool,
}

/// What the loop reports besides the workload's own figures.
#[derive(Clone, PartialEq, Debug)]
pub(crate) struct Drive {
    /// When the run ended: the limit, or the instant the last thread finished.
    pub ended_ns: u64,
    /// Whether the workload finished before the limit.
    pub finished: bool,
    /// Per kernel thread: CPU time and switch-ins.
    pub exec_ns: Vec<u64>,
    pub switches: Vec<u64>,
    /// Discrete events the engine processed.
    pub events: u64,
    /// Energy of the CPU clusters over the run.
    pub cpu_energy_mj: f64,
    /// Per kernel thread: CPU time scaled by the speed it ran at (see `Task::work_ns`).
    pub work_ns: Vec<u64>,
    /// Per kernel thread: switch-ins on another core than the previous one.
    pub migrations: Vec<u64>,
    /// The seam driver's and its policy's counters, if the run had one.
    pub seam: Option<(SeamCounters, Vec<(&'static str, u64)>)>,
    /// The scheduling events, if the machine asked for them.
    pub audit: Option<lull_audit::AuditLog>,
}

/// Runs the workload `make` builds on `plat`'s main cluster with the policies `policy` names,
/// until `limit_ns`, or earlier once the workload has finished if `until_finished`.
///
/// # Errors
/// A [`PolicyError`] when the policies do not fit the platform.
pub(crate) fn drive<W: Workload>(
    plat: &Platform,
    policy: &PolicySpec,
    seed: u64,
    limit_ns: u64,
    until_finished: bool,
    make: impl FnOnce(&mut Kernel<'_>, &mut Engine<Ev>) -> W,
) -> Result<(W, Drive), PolicyError> {
    drive_on(
        plat,
        policy,
        Machine::default(),
        seed,
        limit_ns,
        until_finished,
        make,
    )
}

/// As [`drive`], on the machine `machine` describes.
///
/// # Errors
/// As [`drive`].
pub(crate) fn drive_on<W: Workload>(
    plat: &Platform,
    policy: &PolicySpec,
    machine: Machine,
    seed: u64,
    limit_ns: u64,
    until_finished: bool,
    make: impl FnOnce(&mut Kernel<'_>, &mut Engine<Ev>) -> W,
) -> Result<(W, Drive), PolicyError> {
    let main = plat.main_cluster();
    let cpu = CpuSpec {
        main_cores: plat.clusters[main].cores,
        companion: false,
    };
    let mut p = if machine.all_clusters {
        let all: usize = plat.clusters.iter().map(|c| c.cores as usize).sum();
        RunPolicies::build_for(policy, plat, all, all, false)?
    } else {
        RunPolicies::build(policy, plat, cpu.main_cores, false)?
    };
    if p.boost.is_some() {
        // The boost favours the task a framework names when it hands it an input event; these
        // workloads have none, so a boost asked for would silently change nothing.
        let field = if policy.boost_c_ms.is_some() {
            "boost_c_ms"
        } else {
            "boost_slice_us"
        };
        return Err(PolicyError::Invalid {
            field,
            reason: "the interactive boost acts on the task a framework hands an input event; \
                     this workload has no framework (use a framework or painting spec)"
                .into(),
        });
    }
    if let Some(placement) = machine.placement {
        p.placement = placement;
    }
    let mut seam = machine.seam;
    let mut eng = Engine::new(seed);
    let mut soc = if machine.all_clusters {
        Soc::all_clusters(plat)
    } else {
        Soc::new(plat, cpu)
    };
    let (mut kernel, mut pm) = p.kernel_and_pm(plat, soc.cores.len());
    if machine.audit {
        kernel.record_audit();
    }
    let mut user = make(&mut kernel, &mut eng);
    let mut cx = Cx {
        eng: &mut eng,
        soc: &mut soc,
    };
    cx.eng.schedule_at(limit_ns, Ev::End);
    pm.start(&mut cx);
    user.start(&mut kernel, &mut cx);
    if let Some(s) = &mut seam {
        s.start(&mut kernel, &mut cx);
    }
    kernel.arm_periodic_ticks(&mut cx);
    let mut ended_ns = limit_ns;
    let mut finished = false;
    while let Some((now, ev)) = cx.eng.pop() {
        cx.soc.account(now, 0.0);
        let k = &mut kernel;
        match ev {
            Ev::End => break,
            Ev::Kernel(e) => k.handle(e, &mut user, &mut cx),
            Ev::Governor => pm.sample(k, &mut user, &mut cx),
            Ev::Seam { gen } => {
                if let Some(s) = &mut seam {
                    s.deadline(gen, k, &mut cx);
                }
            }
            // No devices, display or window manager in these runs.
            Ev::Inject(_) | Ev::Vsync | Ev::Window(_) => {}
        }
        if let Some(s) = &mut seam {
            for t in user.take_exited() {
                s.exited(t, k, &mut cx);
            }
        }
        pm.after_event(k, &mut cx);
        cx.soc.update_power(0.0);
        if until_finished && user.finished() {
            ended_ns = now;
            finished = true;
            break;
        }
    }
    kernel.sync_all(&mut cx);
    let drive = Drive {
        ended_ns,
        finished,
        exec_ns: kernel.tasks.iter().map(|t| t.exec_ns).collect(),
        switches: kernel.tasks.iter().map(|t| u64::from(t.switches)).collect(),
        events: cx.eng.processed(),
        cpu_energy_mj: cx.soc.cpu_energy_mj(),
        work_ns: kernel.tasks.iter().map(|t| t.work_ns).collect(),
        migrations: kernel.tasks.iter().map(|t| t.migrations).collect(),
        seam: seam.map(|s| (s.counters, s.policy_counters())),
        audit: kernel.take_audit_log(),
    };
    Ok((user, drive))
}
