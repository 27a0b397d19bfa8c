//! The SoC: its cores' power states and operating points, the clusters, the power model and the
//! power meter.
//!
//! The kernel drives each core's state machine (offline, idle in a state, waking, busy) and its
//! OPP; this module keeps them, says what they cost, and accounts time and energy: power is
//! piecewise constant between events, integrated exactly for energy and sampled at every 1 ms
//! boundary as the seed's monitor sampled the board.

use std::collections::BTreeMap;

use lull_model::time::NS_PER_MS;

use serde::Deserialize;

use crate::platform::Platform;

/// Width of the buckets the 1 ms power samples are averaged into for the power-over-time series
/// (the report's `power_mw_per_100ms`): fine enough to show a 16 ms frame loop's bursts as a
/// raised level, coarse enough that a 60 s run is 600 numbers in the JSON.
pub const POWER_SERIES_BUCKET_MS: u64 = 100;

/// Which cores the run may use.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuSpec {
    /// Main-cluster cores online (1..=cluster size).
    pub main_cores: u32,
    /// Whether the companion core may be used.
    pub companion: bool,
}

/// A core's power state.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum CState {
    Offline,
    Idle(usize),
    Waking,
    Busy,
}

/// A core state as residency is kept; named only for the report, so the per-event accounting
/// allocates nothing.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum StateKey {
    Offline,
    Waking,
    Busy { khz: u64 },
    Idle(usize),
    ClusterOff,
}

/// One core of the SoC.
#[derive(Debug)]
pub(crate) struct Core {
    pub name: String,
    pub cluster: usize,
    /// Its cluster's top frequency.
    pub max_khz: u64,
    /// Its performance at the top frequency against the fastest core's, 1..=1024 (Linux
    /// `arch_scale_cpu_capacity`, from `capacity-dmips-mhz` and the top frequencies).
    pub capacity: u64,
    /// Its performance per MHz against the fastest core type, 1..=1024 (`capacity-dmips-mhz`):
    /// a cycle of work is a cycle of the fastest core type, so this core retires
    /// `khz × dmips_mhz / 1024` of them per ms.
    pub dmips_mhz: u64,
    pub state: CState,
    pub opp: usize,
    /// Busy time since the power manager last sampled.
    pub busy_window_ns: u64,
    /// Time in each state, in order of first entry; `last` is the slot of the latest state
    /// (most events leave a core's state unchanged).
    residency_ns: Vec<(StateKey, u64)>,
    last: usize,
}

#[derive(Debug)]
struct Meter {
    last_ns: u64,
    energy_uj: f64,
    next_sample_ns: u64,
    sample_sum_mw: f64,
    /// Energy of the CPU clusters alone (board less rest of board and display).
    cpu_energy_uj: f64,
    /// Sum of the samples' fixed part (rest of board + display).
    fixed_sum_mw: f64,
    samples: u64,
    max_mw: f64,
    /// Completed buckets of the power-over-time series, and the open one's sum and count.
    series_mw: Vec<f64>,
    bucket_sum_mw: f64,
    bucket_samples: u64,
}

/// The SoC of one run: the spec's main cores and, if allowed, the companion core.
#[derive(Debug)]
pub(crate) struct Soc<'s> {
    pub plat: &'s Platform,
    pub cores: Vec<Core>,
    /// Per cluster: in its coupled power-down state (every core voted for it).
    pub cluster_off: Vec<bool>,
    pub active_cluster: usize,
    /// Every cluster runs at once (global task scheduling): no cluster is switched out.
    pub all_active: bool,
    /// The rate at which the fastest core retires work at its top frequency (see
    /// [`Soc::work_khz`]), the reference of scaled CPU time.
    pub top_work_khz: u64,
    pub main_cluster: usize,
    pub companion: Option<usize>,
    /// Current power draw, recomputed after every event.
    power_uw: f64,
    meter: Meter,
}

impl<'s> Soc<'s> {
    /// The spec's main cores and, if allowed, the companion core; work starts on the main
    /// cluster.
    pub fn new(plat: &'s Platform, cpu: CpuSpec) -> Soc<'s> {
        let main_cluster = plat.main_cluster();
        let companion = if cpu.companion {
            plat.companion_cluster()
        } else {
            None
        };
        let counts: Vec<usize> = (0..plat.clusters.len())
            .map(|ci| {
                if ci == main_cluster {
                    cpu.main_cores as usize
                } else if Some(ci) == companion {
                    1
                } else {
                    0
                }
            })
            .collect();
        Soc::with_clusters(plat, &counts, main_cluster, companion)
    }

    /// A big.LITTLE pair (a platform with a LITTLE cluster): every core of both clusters
    /// exists; work starts on the LITTLE cluster, the big one is switched out.
    pub fn big_little(plat: &'s Platform) -> Soc<'s> {
        let counts: Vec<usize> = plat.clusters.iter().map(|c| c.cores as usize).collect();
        Soc::with_clusters(plat, &counts, plat.start_cluster(), None)
    }

    /// A big.LITTLE pair with both clusters online at once (global task scheduling, the
    /// platform's `both_clusters_online`): every core of every cluster asleep in its deepest
    /// state; interrupts go to the first core of the LITTLE cluster (CPU 0).
    pub fn all_clusters(plat: &'s Platform) -> Soc<'s> {
        let counts: Vec<usize> = plat.clusters.iter().map(|c| c.cores as usize).collect();
        let mut soc = Soc::with_clusters(plat, &counts, plat.start_cluster(), None);
        for c in &mut soc.cores {
            c.state = CState::Idle(plat.clusters[c.cluster].idle_states.len() - 1);
        }
        soc.all_active = true;
        soc
    }

    /// Whether cluster `ci` is running (not switched out).
    pub fn is_active(&self, ci: usize) -> bool {
        self.all_active || ci == self.active_cluster
    }

    /// `counts[ci]` cores of each cluster `ci`; those of `start` asleep in their deepest idle
    /// state, the others offline.
    fn with_clusters(
        plat: &'s Platform,
        counts: &[usize],
        start: usize,
        companion: Option<usize>,
    ) -> Soc<'s> {
        let main_cluster = plat.main_cluster();
        let perf = |cl: &crate::platform::Cluster| {
            cl.capacity_dmips_mhz.unwrap_or(1024) * cl.opps.last().map_or(0, |o| o.khz)
        };
        let best = plat.clusters.iter().map(perf).max().unwrap_or(1).max(1);
        let mut cores = Vec::new();
        for (ci, cl) in plat.clusters.iter().enumerate() {
            for k in 0..counts[ci] {
                cores.push(Core {
                    name: format!("{}{}", cl.name, k),
                    cluster: ci,
                    max_khz: cl.opps.last().map_or(0, |o| o.khz),
                    capacity: (perf(cl) * 1024 / best).max(1),
                    dmips_mhz: cl.capacity_dmips_mhz.unwrap_or(1024),
                    // Cores start asleep in their deepest state: nothing has run on them and the
                    // idle governor has no timer in view.
                    state: if ci == start {
                        CState::Idle(cl.idle_states.len() - 1)
                    } else {
                        CState::Offline
                    },
                    opp: cl.opps.len() - 1,
                    busy_window_ns: 0,
                    residency_ns: Vec::new(),
                    last: 0,
                });
            }
        }
        Soc {
            plat,
            cores,
            cluster_off: vec![false; plat.clusters.len()],
            active_cluster: start,
            all_active: false,
            top_work_khz: plat.top_work_khz(),
            main_cluster,
            companion,
            power_uw: 0.0,
            meter: Meter {
                last_ns: 0,
                energy_uj: 0.0,
                next_sample_ns: NS_PER_MS,
                sample_sum_mw: 0.0,
                cpu_energy_uj: 0.0,
                fixed_sum_mw: 0.0,
                samples: 0,
                max_mw: 0.0,
                series_mw: Vec::new(),
                bucket_sum_mw: 0.0,
                bucket_samples: 0,
            },
        }
    }

    /// The frequency core `c` runs at.
    pub fn khz(&self, c: usize) -> u64 {
        let core = &self.cores[c];
        self.plat.clusters[core.cluster].opps[core.opp].khz
    }

    /// The rate at which core `c` retires cycles of work (cycles of the fastest core type), in
    /// thousands per second: its frequency scaled by its performance per MHz.
    pub fn work_khz(&self, c: usize) -> u64 {
        let dmips = self.cores[c].dmips_mhz;
        if dmips == 1024 {
            self.khz(c)
        } else {
            (self.khz(c) * dmips / 1024).max(1)
        }
    }

    /// Cores of cluster `ci`, in order.
    pub fn cluster_cores(&self, ci: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.cores.len()).filter(move |&c| self.cores[c].cluster == ci)
    }

    /// Accounts the time since the last call at the power drawn since then: meter samples,
    /// energy, each core's state residency and busy window. `fixed_mw` is the rest of the board
    /// and the display as they were over that time.
    pub fn account(&mut self, now: u64, fixed_mw: f64) -> u64 {
        let dt = now - self.meter.last_ns;
        if dt == 0 {
            return 0;
        }
        let p = self.power_uw;
        let m = &mut self.meter;
        while m.next_sample_ns <= now {
            let mw = p / 1000.0;
            m.sample_sum_mw += mw;
            m.fixed_sum_mw += fixed_mw;
            m.samples += 1;
            if mw > m.max_mw {
                m.max_mw = mw;
            }
            m.bucket_sum_mw += mw;
            m.bucket_samples += 1;
            if m.bucket_samples == POWER_SERIES_BUCKET_MS {
                m.series_mw.push(m.bucket_sum_mw / m.bucket_samples as f64);
                m.bucket_sum_mw = 0.0;
                m.bucket_samples = 0;
            }
            m.next_sample_ns += NS_PER_MS;
        }
        m.energy_uj += p * dt as f64 / 1e9;
        m.cpu_energy_uj += (p - fixed_mw * 1000.0) * dt as f64 / 1e9;
        for c in &mut self.cores {
            let key = match c.state {
                CState::Offline => StateKey::Offline,
                CState::Waking => StateKey::Waking,
                CState::Busy => {
                    c.busy_window_ns += dt;
                    StateKey::Busy {
                        khz: self.plat.clusters[c.cluster].opps[c.opp].khz,
                    }
                }
                CState::Idle(_) if self.cluster_off[c.cluster] => StateKey::ClusterOff,
                CState::Idle(s) => StateKey::Idle(s),
            };
            if c.residency_ns.get(c.last).is_none_or(|&(k, _)| k != key) {
                c.last = match c.residency_ns.iter().position(|&(k, _)| k == key) {
                    Some(i) => i,
                    None => {
                        c.residency_ns.push((key, 0));
                        c.residency_ns.len() - 1
                    }
                };
            }
            c.residency_ns[c.last].1 += dt;
        }
        self.meter.last_ns = now;
        dt
    }

    /// Recomputes the power draw from the cores' states, with `fixed_mw` for the rest of the
    /// board and the display.
    pub fn update_power(&mut self, fixed_mw: f64) {
        let mut p = fixed_mw * 1000.0;
        for (ci, cl) in self.plat.clusters.iter().enumerate() {
            if self.cluster_off[ci] {
                continue;
            }
            let mut powered = false;
            let mut max_opp = 0;
            for core in self.cores.iter().filter(|k| k.cluster == ci) {
                let opp = cl.opps[core.opp];
                match core.state {
                    CState::Offline => {}
                    CState::Busy => {
                        powered = true;
                        max_opp = max_opp.max(core.opp);
                        p += cl.dynamic_uw(opp) + cl.core_leak_uw(opp);
                    }
                    // Coming out of an idle state or a cluster switch: powered, not yet
                    // executing; the restore work's dynamic energy is not modelled.
                    CState::Waking => {
                        powered = true;
                        max_opp = max_opp.max(core.opp);
                        p += cl.core_leak_uw(opp);
                    }
                    CState::Idle(s) => {
                        powered = true;
                        max_opp = max_opp.max(core.opp);
                        if !cl.idle_states[s].core_gated {
                            p += cl.core_leak_uw(opp);
                        }
                    }
                }
            }
            if powered {
                p += cl.cluster_leak_uw(cl.opps[max_opp]);
            }
        }
        self.power_uw = p;
    }

    /// Mean of the 1 ms power samples.
    pub fn power_mw_mean(&self) -> f64 {
        if self.meter.samples > 0 {
            self.meter.sample_sum_mw / self.meter.samples as f64
        } else {
            0.0
        }
    }

    /// The CPU clusters' share of [`Soc::power_mw_mean`].
    pub fn cpu_power_mw_mean(&self) -> f64 {
        if self.meter.samples == 0 {
            return 0.0;
        }
        (self.meter.sample_sum_mw - self.meter.fixed_sum_mw) / self.meter.samples as f64
    }

    pub fn power_mw_max_1ms(&self) -> f64 {
        self.meter.max_mw
    }

    /// The power-over-time series: each [`POWER_SERIES_BUCKET_MS`] bucket's mean 1 ms sample,
    /// the last, partial bucket included, rounded to 0.1 mW to keep the JSON small.
    pub fn power_series_mw(&self) -> Vec<f64> {
        let m = &self.meter;
        let open = (m.bucket_samples > 0).then(|| m.bucket_sum_mw / m.bucket_samples as f64);
        m.series_mw
            .iter()
            .copied()
            .chain(open)
            .map(|mw| (mw * 10.0).round() / 10.0)
            .collect()
    }

    pub fn energy_mj(&self) -> f64 {
        self.meter.energy_uj / 1000.0
    }

    /// Energy of the CPU clusters alone (seed 001's metric).
    pub fn cpu_energy_mj(&self) -> f64 {
        self.meter.cpu_energy_uj / 1000.0
    }

    /// Per core, time in each named state (ms); per cluster, busy time at each frequency (ms).
    #[allow(clippy::type_complexity)]
    pub fn residency_ms(
        &self,
    ) -> (
        BTreeMap<String, BTreeMap<String, f64>>,
        BTreeMap<String, BTreeMap<String, f64>>,
    ) {
        let mut residency = BTreeMap::new();
        let mut freq: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
        for c in &self.cores {
            let cluster = &self.plat.clusters[c.cluster];
            let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
            for &(key, ns) in &c.residency_ns {
                let name = match key {
                    StateKey::Offline => "offline".to_owned(),
                    StateKey::Waking => "waking".to_owned(),
                    StateKey::Busy { khz } => format!("busy@{khz}kHz"),
                    StateKey::Idle(s) => cluster.idle_states[s].name.clone(),
                    StateKey::ClusterOff => cluster
                        .cluster_off
                        .as_ref()
                        .map_or_else(|| "cluster-off".to_owned(), |o| o.name.clone()),
                };
                *by_name.entry(name).or_insert(0) += ns;
            }
            let mut m = BTreeMap::new();
            for (k, &v) in &by_name {
                m.insert(k.clone(), v as f64 / 1e6);
                if let Some(khz) = k.strip_prefix("busy@") {
                    *freq
                        .entry(cluster.name.clone())
                        .or_default()
                        .entry(khz.to_owned())
                        .or_insert(0.0) += v as f64 / 1e6;
                }
            }
            residency.insert(c.name.clone(), m);
        }
        (residency, freq)
    }
}
