//! Frequency requests through cpufreq: `/sys/devices/system/cpu/cpuN/cpufreq/`, a link to the
//! policy directory of CPU N's frequency domain.
//!
//! Under the `userspace` governor a request sets `scaling_setspeed`; under any other it raises
//! the floor, `scaling_min_freq`, to the request (never below the floor it had, never above
//! `scaling_max_freq`). Each domain's file is put back as it was when the actuator closes.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use lull_os::sys::Errno;

use super::report::{Outcome, Refusal};

/// Where Linux lists the CPUs.
pub(crate) const SYSFS_CPUS: &str = "/sys/devices/system/cpu";

#[derive(Debug)]
pub(crate) struct Cpufreq {
    base: PathBuf,
    /// Why no request can be met on this machine, when none can.
    unavailable: Option<String>,
    /// Per policy directory changed: the file written and the value it had before.
    changed: BTreeMap<PathBuf, (&'static str, String)>,
}

impl Cpufreq {
    /// Looks for cpufreq under `base` (normally [`SYSFS_CPUS`]).
    pub(crate) fn open(base: &Path) -> Cpufreq {
        let unavailable = match fs::read_dir(base) {
            Err(e) => Some(format!("cannot read {}: {e}", base.display())),
            Ok(dir) => {
                let any = dir.filter_map(Result::ok).any(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.strip_prefix("cpu")
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                        && e.path().join("cpufreq").is_dir()
                });
                (!any).then(|| {
                    format!(
                        "no cpufreq on this machine: no {}/cpu*/cpufreq, the kernel has no \
                         frequency-scaling driver for these CPUs",
                        base.display()
                    )
                })
            }
        };
        Cpufreq {
            base: base.to_owned(),
            unavailable,
            changed: BTreeMap::new(),
        }
    }

    /// Why no request can be met here, when none can.
    pub(crate) fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// At least `khz` for `cpu`'s frequency domain.
    pub(crate) fn request(&mut self, cpu: usize, khz: u64) -> Outcome {
        if self.unavailable.is_some() {
            return Outcome::Unavailable;
        }
        match self.try_request(cpu, khz) {
            Ok(()) => Outcome::Applied,
            Err(e) => Outcome::Refused(
                e.raw_os_error()
                    .map_or(Refusal::Declined("unreadable_cpufreq"), |n| {
                        Refusal::Errno(Errno(n))
                    }),
            ),
        }
    }

    fn try_request(&mut self, cpu: usize, khz: u64) -> io::Result<()> {
        let policy = fs::canonicalize(self.base.join(format!("cpu{cpu}")).join("cpufreq"))?;
        let governor = read_trimmed(&policy.join("scaling_governor"))?;
        let (file, value) = if governor == "userspace" {
            ("scaling_setspeed", khz)
        } else {
            let floor = match self.changed.get(&policy) {
                Some(("scaling_min_freq", before)) => parse_khz(before)?,
                _ => parse_khz(&read_trimmed(&policy.join("scaling_min_freq"))?)?,
            };
            let max = parse_khz(&read_trimmed(&policy.join("scaling_max_freq"))?)?;
            ("scaling_min_freq", khz.max(floor).min(max))
        };
        let path = policy.join(file);
        if !self.changed.contains_key(&policy) {
            let before = read_trimmed(&path)?;
            self.changed.insert(policy.clone(), (file, before));
        }
        write_value(&path, &value.to_string())
    }

    /// Puts every changed file back as it was.
    pub(crate) fn restore(&mut self) {
        while let Some((policy, (file, before))) = self.changed.pop_first() {
            let _ = write_value(&policy.join(file), &before);
        }
    }
}

impl Drop for Cpufreq {
    fn drop(&mut self) {
        self.restore();
    }
}

fn read_trimmed(path: &Path) -> io::Result<String> {
    Ok(fs::read_to_string(path)?.trim().to_owned())
}

fn parse_khz(text: &str) -> io::Result<u64> {
    text.parse()
        .map_err(|_| io::Error::from_raw_os_error(Errno::EINVAL.0))
}

/// One write of `value` to an existing file (a sysfs attribute takes one value per write).
fn write_value(path: &Path, value: &str) -> io::Result<()> {
    use std::io::Write;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?;
    f.write_all(value.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory laid out as `/sys/devices/system/cpu` with two CPUs sharing one policy, in a
    /// fresh private directory removed on drop (even when the test fails).
    struct FakeSysfs(lull_os::fileout::ScratchDir);

    impl FakeSysfs {
        fn new(tag: &str, governor: &str) -> FakeSysfs {
            let scratch =
                lull_os::fileout::ScratchDir::new(&format!("lull-cpufreq-{tag}")).unwrap();
            let base = scratch.path().to_path_buf();
            let policy = base.join("cpufreq").join("policy0");
            fs::create_dir_all(&policy).unwrap();
            for (file, v) in [
                ("scaling_governor", governor),
                ("scaling_min_freq", "800000"),
                ("scaling_max_freq", "2400000"),
                ("scaling_setspeed", "1000000"),
            ] {
                fs::write(policy.join(file), format!("{v}\n")).unwrap();
            }
            for cpu in ["cpu0", "cpu1"] {
                fs::create_dir_all(base.join(cpu)).unwrap();
                std::os::unix::fs::symlink(&policy, base.join(cpu).join("cpufreq")).unwrap();
            }
            fs::create_dir_all(base.join("cpuidle")).unwrap();
            FakeSysfs(scratch)
        }

        fn read(&self, file: &str) -> String {
            read_trimmed(&self.0.path().join("cpufreq/policy0").join(file)).unwrap()
        }
    }

    #[test]
    fn without_cpufreq_every_request_is_unavailable() {
        let scratch = lull_os::fileout::ScratchDir::new("lull-nocpufreq").unwrap();
        let empty = scratch.path();
        fs::create_dir_all(empty.join("cpu0")).unwrap();
        let mut c = Cpufreq::open(empty);
        assert!(c.unavailable().unwrap().contains("no cpufreq"));
        assert_eq!(c.request(0, 1_000_000), Outcome::Unavailable);
    }

    #[test]
    fn a_request_raises_the_floor_within_the_range_and_is_put_back() {
        let fake = FakeSysfs::new("floor", "schedutil");
        let mut c = Cpufreq::open(fake.0.path());
        assert_eq!(c.unavailable(), None);
        assert_eq!(c.request(1, 1_500_000), Outcome::Applied);
        assert_eq!(fake.read("scaling_min_freq"), "1500000");
        // Levels: a lower request lowers it again, never below the floor it had.
        assert_eq!(c.request(0, 500_000), Outcome::Applied);
        assert_eq!(fake.read("scaling_min_freq"), "800000");
        assert_eq!(c.request(0, 9_000_000), Outcome::Applied);
        assert_eq!(fake.read("scaling_min_freq"), "2400000");
        assert_eq!(
            c.request(7, 1_000_000),
            Outcome::Refused(Refusal::Errno(Errno::ENOENT))
        );
        c.restore();
        assert_eq!(fake.read("scaling_min_freq"), "800000");
        assert_eq!(fake.read("scaling_setspeed"), "1000000");
    }

    #[test]
    fn under_the_userspace_governor_a_request_sets_the_speed() {
        let fake = FakeSysfs::new("userspace", "userspace");
        let mut c = Cpufreq::open(fake.0.path());
        assert_eq!(c.request(0, 1_700_000), Outcome::Applied);
        assert_eq!(fake.read("scaling_setspeed"), "1700000");
        assert_eq!(fake.read("scaling_min_freq"), "800000");
        drop(c);
        assert_eq!(fake.read("scaling_setspeed"), "1000000");
    }
}
