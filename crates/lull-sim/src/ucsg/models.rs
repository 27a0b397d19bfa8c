//! The three models of a UCSG scenario and how the run drives each.
//!
//! - `cfs-ondemand`: CFS; the Galaxy S4's ondemand (`ondemand-galaxy-s4`: 60/40 % LITTLE,
//!   90/70 % big, jump to the top, step down) and core management (`galaxy-s4`: the §4.5 hotplug
//!   rule and §2.1 cluster switching) every 100 ms (the platform's `sampling_ms`, §3.3). The
//!   kernel's balancing is Linux's (its intervals scale with the cores; the S4's 10 ms
//!   migration period is not separately modelled).
//! - `eevdf-schedutil`: EEVDF; schedutil over the big.LITTLE switcher's joined ladder after every
//!   scheduler event, switching clusters when the request crosses (`lull_sched::governor::
//!   bl_switcher`); every core online, cpuidle.
//! - `ucsg`: CFS with `lull_sched::ucsg` deciding nice values, per-thread core slots (affinity),
//!   the cores online, the frequency and the cluster, from its 200 ms period and the scene's
//!   facts; the kernel's governor is replaced, as a user-space governor replaces it.

use lull_sched::governor::bl_switcher::BlSwitcher;
use lull_sched::governor::schedutil::rate_limit_ns;
use lull_sched::seam::CpuMask;
use lull_sched::ucsg::{Decision, Start, ThreadUse, Ucsg, UcsgConfig};
use lull_sched::CpuId;

use lull_model::time::NS_PER_US;

use super::apps::{Fact, Owner, Scene};
use super::spec::{UcsgModel, UcsgTunables};
use super::UcsgRunError;
use crate::event::Ev;
use crate::kernel::{Cx, Kernel, Policies};
use crate::platform::Platform;
use crate::pm::PowerManager;
use crate::policy::{PolicyError, PolicySpec, RunPolicies};
use crate::soc::CState;

/// How a model drives the machine beyond the kernel's scheduling class.
#[derive(Debug)]
pub(crate) enum Driver<'p> {
    Stock {
        pm: PowerManager,
        policies: Option<Policies>,
    },
    Switcher {
        bl: BlSwitcher,
        plat: &'p Platform,
        policies: Option<Policies>,
    },
    Ucsg(Box<UcsgDriver<'p>>),
}

#[derive(Debug)]
pub(crate) struct UcsgDriver<'p> {
    plat: &'p Platform,
    policy: Ucsg<usize>,
    policies: Option<Policies>,
    out: Vec<Decision<usize>>,
    /// Platform cluster of each UCSG cluster index (LITTLE first).
    clusters: [usize; 2],
    /// Each thread's CPU time at the last sample.
    exec_at_sample: Vec<u64>,
    /// When the pending `Ev::Governor` fires.
    due_ns: u64,
}

fn policy_err(e: PolicyError) -> UcsgRunError {
    UcsgRunError::Policy(match e {
        PolicyError::Unknown(u) => u.to_string(),
        PolicyError::Invalid { field, reason } => format!("{field}: {reason}"),
    })
}

fn build(
    plat: &Platform,
    scheduler: &str,
    governor: &str,
    cores: &str,
) -> Result<RunPolicies, UcsgRunError> {
    let spec = PolicySpec {
        scheduler: Some(scheduler.to_owned()),
        governor: Some(governor.to_owned()),
        cores: Some(cores.to_owned()),
        ..PolicySpec::default()
    };
    let all: usize = plat.clusters.iter().map(|c| c.cores as usize).sum();
    let boot = plat.clusters[plat.start_cluster()].cores as usize;
    RunPolicies::build_for(&spec, plat, all, boot, false).map_err(policy_err)
}

fn kernel_policies(p: RunPolicies) -> (Policies, RunPoliciesRest) {
    (
        Policies {
            class: p.class,
            placement: p.placement,
            idle: p.idle,
        },
        RunPoliciesRest {
            governor: p.governor,
            cores: p.cores,
        },
    )
}

struct RunPoliciesRest {
    governor: Box<dyn lull_sched::governor::FreqGovernor>,
    cores: Box<dyn lull_sched::cores::CoreManager>,
}

/// The OPP index of cluster `ci` at or above `khz`.
fn opp_of(plat: &Platform, ci: usize, khz: u64) -> usize {
    let opps = &plat.clusters[ci].opps;
    opps.iter()
        .position(|o| o.khz >= khz)
        .unwrap_or(opps.len() - 1)
}

fn set_cluster_opp(k: &mut Kernel<'_>, ci: usize, opp: usize, cx: &mut Cx<'_, '_>) {
    let cores: Vec<usize> = cx.soc.cluster_cores(ci).collect();
    for c in cores {
        k.set_opp(c, opp, cx);
    }
}

impl<'p> Driver<'p> {
    pub fn build(
        model: UcsgModel,
        plat: &'p Platform,
        tunables: UcsgTunables,
    ) -> Result<Driver<'p>, UcsgRunError> {
        let little = plat.little_cluster().unwrap_or(0);
        let big = plat.main_cluster();
        let khz =
            |ci: usize| -> Vec<u64> { plat.clusters[ci].opps.iter().map(|o| o.khz).collect() };
        Ok(match model {
            UcsgModel::CfsOndemand => {
                let (pol, rest) =
                    kernel_policies(build(plat, "cfs", "ondemand-galaxy-s4", "galaxy-s4")?);
                Driver::Stock {
                    pm: PowerManager::new(rest.governor, rest.cores, plat.governor.sampling_ms),
                    policies: Some(pol),
                }
            }
            UcsgModel::EevdfSchedutil => {
                let (pol, _) = kernel_policies(build(plat, "eevdf", "schedutil", "all-online")?);
                Driver::Switcher {
                    bl: BlSwitcher::new(
                        little,
                        &khz(little),
                        big,
                        &khz(big),
                        rate_limit_ns(plat.governor.transition_latency_us * NS_PER_US),
                    ),
                    plat,
                    policies: Some(pol),
                }
            }
            UcsgModel::Ucsg => {
                let (pol, _) = kernel_policies(build(plat, "cfs", "ondemand", "all-online")?);
                let start = Start {
                    cluster: 0,
                    online: plat.clusters[little].cores as usize,
                };
                let config = UcsgConfig {
                    big_to_little_periods: tunables.big_to_little_periods,
                    up_threshold_pct: tunables.up_threshold_pct,
                    ..UcsgConfig::galaxy_s4()
                };
                let policy =
                    Ucsg::new(config, 0, start).map_err(|e| UcsgRunError::Policy(e.to_string()))?;
                Driver::Ucsg(Box::new(UcsgDriver {
                    plat,
                    policy,
                    policies: Some(pol),
                    out: Vec::new(),
                    clusters: [little, big],
                    exec_at_sample: Vec::new(),
                    due_ns: 0,
                }))
            }
        })
    }

    /// The kernel's policies (once).
    pub fn policies(&mut self) -> Policies {
        let p = match self {
            Driver::Stock { policies, .. } | Driver::Switcher { policies, .. } => policies.take(),
            Driver::Ucsg(d) => d.policies.take(),
        };
        p.expect("policies are taken once")
    }

    /// Before any thread exists.
    pub fn prepare(&mut self, k: &mut Kernel<'_>) {
        if let Driver::Switcher { .. } = self {
            k.track_utilisation();
        }
    }

    /// Arms the first period.
    pub fn start(&mut self, _k: &mut Kernel<'_>, _scene: &mut Scene, cx: &mut Cx<'_, '_>) {
        match self {
            Driver::Stock { pm, .. } => pm.start(cx),
            Driver::Switcher { .. } => {}
            Driver::Ucsg(d) => {
                d.due_ns = d.policy.next_deadline_ns();
                cx.eng.schedule_at(d.due_ns, Ev::Governor);
            }
        }
    }

    /// `Ev::Governor`: the model's period.
    pub fn period(&mut self, k: &mut Kernel<'_>, scene: &mut Scene, cx: &mut Cx<'_, '_>) {
        match self {
            Driver::Stock { pm, .. } => pm.sample(k, scene, cx),
            Driver::Switcher { .. } => {}
            Driver::Ucsg(d) => d.period(k, scene, cx),
        }
    }

    /// The scene's new facts, to the policy that listens.
    pub fn apply_facts(&mut self, k: &mut Kernel<'_>, scene: &mut Scene, cx: &mut Cx<'_, '_>) {
        if scene.facts.is_empty() {
            return;
        }
        let facts = std::mem::take(&mut scene.facts);
        if let Driver::Ucsg(d) = self {
            d.facts(&facts, k, cx);
        }
    }

    /// After every event: schedutil's update hook.
    pub fn after_event(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        match self {
            Driver::Stock { pm, .. } => pm.after_event(k, cx),
            Driver::Switcher { bl, plat, .. } => switcher_update(bl, plat, k, cx),
            Driver::Ucsg(_) => {}
        }
    }
}

/// Schedutil through the switcher: on a scheduler event of an active core, the busiest active
/// core's utilisation picks a level of the joined ladder; a level on the other cluster switches.
fn switcher_update(bl: &mut BlSwitcher, plat: &Platform, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
    let mut any = false;
    for c in 0..cx.soc.cores.len() {
        any |= k.take_freq_event(c);
    }
    if !any {
        return;
    }
    let ci = cx.soc.active_cluster;
    let active: Vec<usize> = cx
        .soc
        .cluster_cores(ci)
        .filter(|&c| cx.soc.cores[c].state != CState::Offline)
        .collect();
    let util = active.iter().map(|&c| k.cpu_util(c, cx)).max().unwrap_or(0);
    let Some(level) = bl.select(cx.now(), util) else {
        return;
    };
    if level.cluster != ci {
        k.switch_cluster(level.cluster, cx);
    }
    let opp = level.opp.min(plat.clusters[level.cluster].opps.len() - 1);
    set_cluster_opp(k, level.cluster, opp, cx);
}

impl UcsgDriver<'_> {
    fn platform_cluster(&self, ucsg_cluster: usize) -> usize {
        self.clusters[ucsg_cluster.min(1)]
    }

    fn ucsg_cluster(&self, ci: usize) -> usize {
        usize::from(ci == self.clusters[1])
    }

    fn facts(&mut self, facts: &[Fact], k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        let now = cx.now();
        for f in facts {
            match *f {
                Fact::Fork {
                    thread,
                    parent,
                    owner,
                } => {
                    let owner = match owner {
                        Owner::System => lull_sched::ucsg::Owner::System,
                        Owner::App(a) => lull_sched::ucsg::Owner::App(a),
                    };
                    self.policy
                        .thread_forked(parent, thread, Some(owner), &mut self.out);
                }
                Fact::Touch => self.policy.touch(now, &mut self.out),
                Fact::Foreground(app) => self.policy.foreground(app, &mut self.out),
                Fact::Display(on) => self.policy.display(on, &mut self.out),
            }
        }
        self.apply(k, cx);
        self.rearm(cx);
    }

    /// A touch may bring the 500 ms expiry before the pending period.
    fn rearm(&mut self, cx: &mut Cx<'_, '_>) {
        let next = self.policy.next_deadline_ns().max(cx.now());
        if next != self.due_ns {
            self.due_ns = next;
            cx.eng.schedule_at(next, Ev::Governor);
        }
    }

    fn period(&mut self, k: &mut Kernel<'_>, scene: &mut Scene, cx: &mut Cx<'_, '_>) {
        let now = cx.now();
        if now != self.due_ns {
            return; // superseded by a re-arm
        }
        if now >= self.policy.next_sample_ns() {
            k.sync_all(cx);
            if self.exec_at_sample.len() < k.tasks.len() {
                self.exec_at_sample.resize(k.tasks.len(), 0);
            }
            let uses: Vec<ThreadUse<usize>> = k
                .tasks
                .iter()
                .enumerate()
                .filter_map(|(t, task)| {
                    let ran = task.exec_ns - self.exec_at_sample[t];
                    (ran > 0).then_some(ThreadUse {
                        thread: t,
                        runtime_ns: ran,
                    })
                })
                .collect();
            for (t, task) in k.tasks.iter().enumerate() {
                self.exec_at_sample[t] = task.exec_ns;
            }
            let ci = cx.soc.active_cluster;
            let online: Vec<usize> = cx
                .soc
                .cluster_cores(ci)
                .filter(|&c| cx.soc.cores[c].state != CState::Offline)
                .collect();
            let freq_khz = online.first().map_or(0, |&c| cx.soc.khz(c));
            let view = lull_sched::ucsg::SampleView {
                cluster: self.ucsg_cluster(ci),
                online: online.len(),
                freq_khz,
                threads: &uses,
            };
            self.policy.sample(now, &view, &mut self.out);
            // The daemon's own work of this period (§4.2's overhead).
            scene.daemon_sample(scene.threads.len(), k, cx);
        } else {
            self.policy.expire(now, &mut self.out);
        }
        self.apply(k, cx);
        self.due_ns = 0;
        self.rearm(cx);
    }

    /// The core of slot `slot` of the active cluster.
    fn slot_core(cx: &Cx<'_, '_>, slot: usize) -> usize {
        let ci = cx.soc.active_cluster;
        let cores: Vec<usize> = cx.soc.cluster_cores(ci).collect();
        cores[slot.min(cores.len() - 1)]
    }

    fn place(k: &mut Kernel<'_>, t: usize, slot: usize, cx: &mut Cx<'_, '_>) {
        let core = Self::slot_core(cx, slot);
        k.set_affinity(t, CpuMask::of(&[CpuId(core)]));
        k.move_task(t, core, cx);
    }

    fn apply(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        let out = std::mem::take(&mut self.out);
        for d in &out {
            match *d {
                Decision::Nice { thread, nice } => k.set_nice(thread, nice),
                Decision::Place { thread, slot } => Self::place(k, thread, slot, cx),
                Decision::Online { cores } => {
                    let lat = self
                        .plat
                        .hotplug
                        .map_or(0, |h| h.online_latency_us * NS_PER_US);
                    k.set_online(cores, lat, cx);
                }
                Decision::Cluster { cluster } => {
                    let to = self.platform_cluster(cluster);
                    k.switch_cluster(to, cx);
                    // Every thread keeps its slot on the new cluster.
                    for t in 0..k.tasks.len() {
                        if let Some(slot) = self.policy.slot(t) {
                            let core = Self::slot_core(cx, slot);
                            k.set_affinity(t, CpuMask::of(&[CpuId(core)]));
                        }
                    }
                }
                Decision::Frequency { khz } => {
                    let ci = cx.soc.active_cluster;
                    let opp = opp_of(self.plat, ci, khz);
                    set_cluster_opp(k, ci, opp, cx);
                }
            }
        }
        self.out = out;
        self.out.clear();
    }
}
