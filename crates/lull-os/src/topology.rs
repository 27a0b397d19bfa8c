//! The machine's CPUs as Linux describes them in sysfs: which are online, how they group into
//! clusters of equal capacity (big.LITTLE: `cpuN/cpu_capacity` differs between the clusters), and
//! the frequency levels each CPU's cpufreq policy offers, when there is cpufreq.
//!
//! Parsing is pure ([`parse_cpu_list`], [`clusters_by_capacity`], [`parse_levels_khz`]); [`probe`]
//! reads the files.

use std::fs;
use std::path::Path;

/// Where Linux lists CPUs (`Documentation/ABI/stable/sysfs-devices-system-cpu`).
pub const SYSFS_CPUS: &str = "/sys/devices/system/cpu";

/// The machine's CPUs.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize)]
pub struct Topology {
    /// Online CPUs, ascending.
    pub online: Vec<u32>,
    /// The online CPUs grouped by capacity, lowest capacity (LITTLE) first, each ascending. One
    /// cluster when every CPU has the same capacity or none says.
    pub clusters: Vec<Vec<u32>>,
    /// Per cluster, the frequency levels its first CPU's cpufreq policy offers, ascending; empty
    /// when the machine has no cpufreq.
    pub levels_khz: Vec<Vec<u64>>,
}

impl Topology {
    /// Whether the CPUs come in clusters of different capacity.
    #[must_use]
    pub fn is_big_little(&self) -> bool {
        self.clusters.len() > 1
    }
}

/// Parses a CPU list such as `0-3,6,8-9` (`cpulist_parse`); `None` for anything else.
#[must_use]
pub fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let text = text.trim();
    let mut out = Vec::new();
    if text.is_empty() {
        return Some(out);
    }
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                // The kernel caps CPU numbers at NR_CPUS (at most 8192).
                if a > b || b >= 8192 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.parse().ok()?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// Writes `cpus` as a CPU list (`0-3,6`), the form [`parse_cpu_list`] reads; sorted, and
/// each run of consecutive CPUs as a range.
#[must_use]
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Groups `cpus` by capacity, lowest first; a CPU whose capacity is unknown counts as the most
/// common one's (so a machine whose kernel says nothing is one cluster).
#[must_use]
pub fn clusters_by_capacity(cpus: &[(u32, Option<u64>)]) -> Vec<Vec<u32>> {
    let mut groups: std::collections::BTreeMap<u64, Vec<u32>> = std::collections::BTreeMap::new();
    let known: Vec<u64> = cpus.iter().filter_map(|c| c.1).collect();
    let common = known
        .iter()
        .max_by_key(|&&k| known.iter().filter(|&&x| x == k).count())
        .copied()
        .unwrap_or(0);
    for &(cpu, cap) in cpus {
        groups.entry(cap.unwrap_or(common)).or_default().push(cpu);
    }
    groups
        .into_values()
        .map(|mut v| {
            v.sort_unstable();
            v
        })
        .collect()
}

/// Parses `scaling_available_frequencies` (kHz, space-separated) into ascending levels.
#[must_use]
pub fn parse_levels_khz(text: &str) -> Vec<u64> {
    let mut v: Vec<u64> = text
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .filter(|&k| k > 0)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn read(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok()
}

/// Reads the topology from `root` (normally [`SYSFS_CPUS`]). A machine whose `online` file is
/// unreadable is taken to have the CPUs this process may run on.
#[must_use]
pub fn probe(root: &Path) -> Topology {
    let online = read(&root.join("online"))
        .and_then(|t| parse_cpu_list(&t))
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, usize::from);
            (0..u32::try_from(n).unwrap_or(1)).collect()
        });
    let caps: Vec<(u32, Option<u64>)> = online
        .iter()
        .map(|&c| {
            let cap = read(&root.join(format!("cpu{c}/cpu_capacity")))
                .and_then(|t| t.trim().parse().ok());
            (c, cap)
        })
        .collect();
    let clusters = clusters_by_capacity(&caps);
    let levels_khz = clusters
        .iter()
        .map(|cl| {
            let cpufreq = root.join(format!("cpu{}/cpufreq", cl[0]));
            read(&cpufreq.join("scaling_available_frequencies"))
                .map(|t| parse_levels_khz(&t))
                .filter(|v| !v.is_empty())
                .or_else(|| {
                    // Drivers without a table (intel_pstate, cppc) give the range only.
                    let min = read(&cpufreq.join("cpuinfo_min_freq"))?;
                    let max = read(&cpufreq.join("cpuinfo_max_freq"))?;
                    Some(parse_levels_khz(&format!("{min} {max}")))
                })
                .unwrap_or_default()
        })
        .collect();
    Topology {
        online,
        clusters,
        levels_khz,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(
            parse_cpu_list("0-3,6,8-9\n"),
            Some(vec![0, 1, 2, 3, 6, 8, 9])
        );
        assert_eq!(parse_cpu_list("1"), Some(vec![1]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        for bad in ["a", "3-1", "1,,2", "0-9000", "-1"] {
            assert_eq!(parse_cpu_list(bad), None, "{bad}");
        }
    }

    #[test]
    fn cpu_lists_format_as_they_parse() {
        assert_eq!(format_cpu_list(&[6, 0, 1, 2, 3, 9, 8, 3]), "0-3,6,8-9");
        assert_eq!(format_cpu_list(&[1]), "1");
        assert_eq!(format_cpu_list(&[]), "");
        let cpus = vec![0, 2, 3, 4, 7];
        assert_eq!(parse_cpu_list(&format_cpu_list(&cpus)), Some(cpus));
    }

    #[test]
    fn capacities_make_clusters_little_first() {
        let exynos = [
            (0, Some(1024)),
            (1, Some(1024)),
            (2, Some(539)),
            (3, Some(539)),
        ];
        assert_eq!(clusters_by_capacity(&exynos), vec![vec![2, 3], vec![0, 1]]);
        let flat = [(0, Some(1024)), (1, None)];
        assert_eq!(clusters_by_capacity(&flat), vec![vec![0, 1]]);
        assert_eq!(
            clusters_by_capacity(&[(0, None), (1, None)]),
            vec![vec![0, 1]]
        );
    }

    #[test]
    fn levels_parse_ascending() {
        assert_eq!(
            parse_levels_khz("1600000 800000 x 0 800000\n"),
            vec![800_000, 1_600_000]
        );
    }

    #[test]
    fn this_machine_probes() {
        let t = probe(Path::new(SYSFS_CPUS));
        assert!(!t.online.is_empty());
        let n: usize = t.clusters.iter().map(Vec::len).sum();
        assert_eq!(n, t.online.len());
        assert_eq!(t.levels_khz.len(), t.clusters.len());
    }
}
