//! The I/O around [`UcsgPlacer`]: reads lulld's facts map and each thread's process and CPU time
//! from `/proc`, and writes UCSG's placement into the BPF side's `lull_place` map (pinned at
//! [`PLACE_PIN_PATH`] while lull-scx runs, so it can be inspected). Runs on lull-scx's watching
//! thread, at UCSG's deadlines (its 200 ms period, its 500 ms expiry) and every watch period.

use std::collections::BTreeMap;
use std::path::Path;

use libbpf_rs::{MapCore, MapFlags};
use lull_os::bpf::scx_facts::FactRecord;

use crate::ucsg::{CpuSets, ThreadFact, UcsgPlacer};

/// Where lull-scx pins UCSG's placement map (tid → CPU, both `u32`).
pub const PLACE_PIN_PATH: &str = "/sys/fs/bpf/lull_scx_place";

/// The clusters this machine's `cpu_capacity` files describe (one cluster when the kernel
/// offers none or they are equal), over `cpus` CPUs.
#[must_use]
pub fn machine_sets(cpus: u32) -> CpuSets {
    let caps: Vec<Option<u32>> = (0..cpus)
        .map(|i| {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{i}/cpu_capacity"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
        })
        .collect();
    CpuSets::from_capacities(&caps)
}

/// A thread's process (`Tgid:` of `/proc/TID/status`) and CPU time (the first field of
/// `/proc/TID/schedstat`, ns); `None` once it is gone.
fn proc_of(tid: u32) -> Option<(u32, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let tgid = status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()?;
    let sched = std::fs::read_to_string(format!("/proc/{tid}/schedstat")).ok()?;
    let cpu_ns = sched.split_whitespace().next()?.parse().ok()?;
    Some((tgid, cpu_ns))
}

/// The facts map's records, each completed from `/proc`; records of threads already gone are
/// left out (UCSG treats them as exited).
pub fn read_facts(facts: &impl MapCore) -> Vec<ThreadFact> {
    let mut out = Vec::new();
    for key in facts.keys() {
        let Ok(tid_bytes) = <[u8; 4]>::try_from(key.as_slice()) else {
            continue;
        };
        let tid = u32::from_ne_bytes(tid_bytes);
        let Some(rec) = facts
            .lookup(&key, MapFlags::ANY)
            .ok()
            .flatten()
            .and_then(|v| FactRecord::from_bytes(&v))
        else {
            continue;
        };
        if let Some((tgid, cpu_ns)) = proc_of(tid) {
            out.push(ThreadFact {
                tid,
                tgid,
                class: rec.class,
                input_ns: rec.input_ns,
                cpu_ns,
            });
        }
    }
    out
}

/// Keeps the BPF side's `lull_place` equal to UCSG's placement.
#[derive(Debug, Default)]
pub struct PlaceWriter {
    written: BTreeMap<u32, u32>,
    /// Updates or deletes the kernel refused (the map full, for one).
    pub failed: u64,
}

impl PlaceWriter {
    /// Writes what changed since the last call.
    pub fn sync(&mut self, map: &impl MapCore, placer: &UcsgPlacer) {
        let now = placer.placement();
        for (tid, _) in self.written.iter().filter(|(t, _)| !now.contains_key(t)) {
            if map.delete(&tid.to_ne_bytes()).is_err() {
                self.failed += 1;
            }
        }
        for (tid, cpu) in &now {
            if self.written.get(tid) != Some(cpu)
                && map
                    .update(&tid.to_ne_bytes(), &cpu.to_ne_bytes(), MapFlags::ANY)
                    .is_err()
            {
                self.failed += 1;
            }
        }
        self.written = now;
    }
}

/// Whether the placement map is pinned where [`PLACE_PIN_PATH`] says.
#[must_use]
pub fn place_pinned() -> bool {
    Path::new(PLACE_PIN_PATH).exists()
}
