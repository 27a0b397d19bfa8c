//! Where and when a result was made: the machine, its kernel, the commit and the date.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The commit this binary was built from (`build.rs`; `-dirty` when the tree had uncommitted
/// changes, `unknown` outside a git checkout).
pub const BUILD_COMMIT: &str = env!("LULL_COMMIT");

/// The machine a run was measured on, as the kernel describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub hostname: String,
    pub arch: String,
    /// CPUs online when the run started.
    pub cpus: usize,
    /// `model name` of the first CPU in `/proc/cpuinfo` (empty where the kernel gives none).
    pub cpu_model: String,
    pub memory_mib: u64,
}

/// Everything a results file says about how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub machine: Machine,
    /// `uname -r`.
    pub kernel: String,
    pub commit: String,
    /// When the run started, UTC, RFC 3339 to the second.
    pub date: String,
}

#[cfg(test)]
impl Provenance {
    /// A made-up machine and run, for the tests' results files.
    pub(crate) fn fixture() -> Provenance {
        Provenance {
            machine: Machine {
                hostname: "h".into(),
                arch: "x86_64".into(),
                cpus: 2,
                cpu_model: "cpu".into(),
                memory_mib: 1024,
            },
            kernel: "6.18".into(),
            commit: "abc".into(),
            date: "2026-11-25T00:00:00Z".into(),
        }
    }
}

impl Provenance {
    /// Reads this machine, the build's commit and the time now.
    pub fn here() -> Self {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Provenance {
            machine: Machine::here(),
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            commit: BUILD_COMMIT.to_owned(),
            date: civil_date_utc(secs),
        }
    }
}

impl Machine {
    pub fn here() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        Machine {
            hostname: read_trimmed("/proc/sys/kernel/hostname"),
            arch: std::env::consts::ARCH.to_owned(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu_model: field(&cpuinfo, "model name").unwrap_or_default(),
            memory_mib: field(&meminfo, "MemTotal")
                .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
                .map_or(0, |kib| kib / 1024),
        }
    }
}

fn read_trimmed(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// The value of the first `key: value` line of a /proc text file.
fn field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_owned())
    })
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (the proleptic Gregorian calendar).
pub fn civil_date_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Days to a civil date, counting in 400-year eras that start on 1 March.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(civil_date_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(civil_date_utc(1_795_563_296), "2026-11-24T23:34:56Z");
        assert_eq!(civil_date_utc(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn proc_fields() {
        let text = "processor\t: 0\nmodel name\t: Some CPU @ 2.0GHz\n";
        assert_eq!(
            field(text, "model name").as_deref(),
            Some("Some CPU @ 2.0GHz")
        );
        assert_eq!(field(text, "missing"), None);
    }
}
