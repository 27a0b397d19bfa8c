//! Power management: the frequency governor over each frequency domain, core management (which
//! cores are online, which cluster is active) and guiS's idle forcing, at the platform's sampling
//! period; schedutil-like governors also after every scheduler event.

use lull_model::time::{NS_PER_MS, NS_PER_US};
use lull_sched::cores::{ClusterView, CoreManager};
use lull_sched::governor::{CpuLoad, DomainSample, FreqGovernor, Trigger};

use crate::event::Ev;
use crate::kernel::{Cx, Kernel};
use crate::platform::FreqDomain;
use crate::soc::CState;

/// guiS's idle forcing as the power manager drives it at each sampling period; user spaces
/// without guiS (rt-app workloads) do nothing.
/// The defaults force nothing (a user space without guiS).
pub(crate) trait IdleForcing {
    /// guiS's forced idle begins or ends.
    fn set_idle_forced(&mut self, _forced: bool, _k: &mut Kernel<'_>) {}
    /// Forces idle if guiS's conditions hold.
    fn maybe_force_idle(&mut self, _k: &mut Kernel<'_>, _cx: &mut Cx<'_, '_>) {}
}

/// The power manager of one run.
#[derive(Debug)]
pub(crate) struct PowerManager {
    governor: Box<dyn FreqGovernor>,
    cores: Box<dyn CoreManager>,
    period_ns: u64,
    /// Per core: a scheduler event happened since the last look (kept to reuse its memory).
    touched: Vec<bool>,
}

impl PowerManager {
    pub fn new(
        governor: Box<dyn FreqGovernor>,
        cores: Box<dyn CoreManager>,
        sampling_ms: u64,
    ) -> PowerManager {
        PowerManager {
            governor,
            cores,
            period_ns: sampling_ms * NS_PER_MS,
            touched: Vec::new(),
        }
    }

    /// Whether the governor reads utilisation (the kernel then tracks it).
    pub fn reads_utilisation(&self) -> bool {
        self.governor.trigger() == Trigger::SchedEvents
    }

    /// Arms the first sampling period.
    pub fn start(&self, cx: &mut Cx<'_, '_>) {
        cx.eng.schedule_at(self.period_ns, Ev::Governor);
    }

    /// The frequency domains of the active cluster: all its online cores, or each alone.
    fn active_domains(cx: &Cx<'_, '_>) -> Vec<(usize, Vec<usize>)> {
        let soc = &*cx.soc;
        let ci = soc.active_cluster;
        let members: Vec<usize> = soc
            .cluster_cores(ci)
            .filter(|&c| soc.cores[c].state != CState::Offline)
            .collect();
        match soc.plat.clusters[ci].freq_domain {
            FreqDomain::Cluster => vec![(ci, members)],
            FreqDomain::Core => members
                .into_iter()
                .map(|c| (soc.plat.clusters.len() + c, vec![c]))
                .collect(),
        }
    }

    /// Asks the governor about one domain and applies its answer to every member.
    fn update_domain(
        &mut self,
        domain: usize,
        members: &[usize],
        loads_pct: &[u64],
        k: &mut Kernel<'_>,
        cx: &mut Cx<'_, '_>,
    ) {
        let Some(&first) = members.first() else {
            return;
        };
        let ci = cx.soc.cores[first].cluster;
        let cpus: Vec<CpuLoad> = members
            .iter()
            .zip(loads_pct)
            .map(|(&c, &busy_pct)| CpuLoad {
                busy_pct,
                util: k.cpu_util(c, cx),
                capacity: cx.soc.cores[c].capacity,
            })
            .collect();
        let opps_khz: Vec<u64> = cx.soc.plat.clusters[ci]
            .opps
            .iter()
            .map(|o| o.khz)
            .collect();
        let opp = self.governor.select(&DomainSample {
            domain,
            cluster: ci,
            opps_khz: &opps_khz,
            cur_opp: cx.soc.cores[first].opp,
            cpus: &cpus,
            now_ns: cx.now(),
        });
        for &c in members {
            k.set_opp(c, opp, cx);
        }
    }

    /// The end of a sampling period.
    pub fn sample(&mut self, k: &mut Kernel<'_>, u: &mut dyn IdleForcing, cx: &mut Cx<'_, '_>) {
        let window = self.period_ns;
        let load =
            |cx: &Cx<'_, '_>, c: usize| (cx.soc.cores[c].busy_window_ns * 100 / window).min(100);
        let domains = Self::active_domains(cx);
        if matches!(self.governor.trigger(), Trigger::Sampling { .. }) {
            for (domain, members) in &domains {
                let loads: Vec<u64> = members.iter().map(|&c| load(cx, c)).collect();
                self.update_domain(*domain, members, &loads, k, cx);
            }
        }
        let ci = cx.soc.active_cluster;
        let members: Vec<usize> = domains
            .iter()
            .flat_map(|(_, m)| m.iter().copied())
            .collect();
        let loads: Vec<u64> = members.iter().map(|&c| load(cx, c)).collect();
        for c in &mut cx.soc.cores {
            c.busy_window_ns = 0;
        }
        let decision = self.cores.decide(&ClusterView {
            cluster: ci,
            opp: members.first().map_or(0, |&c| cx.soc.cores[c].opp),
            top_opp: cx.soc.plat.clusters[ci].opps.len() - 1,
            loads_pct: &loads,
            cores: cx.soc.cluster_cores(ci).count(),
            period_ns: window,
            top_opp_of_other: cx.soc.plat.little_cluster().map(|little| {
                let other = if ci == little {
                    cx.soc.main_cluster
                } else {
                    little
                };
                cx.soc.plat.clusters[other].opps.len() - 1
            }),
        });
        if let Some(to) = decision.switch_to {
            if to == cx.soc.main_cluster {
                // Back to the main cluster: forced idle, which assumed nothing needed the CPU,
                // ends.
                u.set_idle_forced(false, k);
            }
            k.switch_cluster(to, cx);
            if let Some(opp) = decision.opp {
                let cores: Vec<usize> = cx.soc.cluster_cores(to).collect();
                for c in cores {
                    k.set_opp(c, opp, cx);
                }
            }
        }
        if let Some(n) = decision.online {
            let latency = cx
                .soc
                .plat
                .hotplug
                .map_or(0, |h| h.online_latency_us * NS_PER_US);
            k.set_online(n, latency, cx);
        }
        u.maybe_force_idle(k, cx);
        let next = cx.now() + window;
        cx.eng.schedule_at(next, Ev::Governor);
    }

    /// After an event: a governor driven by scheduler events looks at every domain one of whose
    /// cores had one.
    pub fn after_event(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        if self.governor.trigger() != Trigger::SchedEvents {
            return;
        }
        let mut any = false;
        self.touched.clear();
        for c in 0..cx.soc.cores.len() {
            let t = k.take_freq_event(c);
            any |= t;
            self.touched.push(t);
        }
        if !any {
            return;
        }
        for (domain, members) in Self::active_domains(cx) {
            if members.iter().any(|&c| self.touched[c]) {
                let loads = vec![0; members.len()];
                self.update_domain(domain, &members, &loads, k, cx);
            }
        }
    }
}
