//! Sensing: one thread's CPU time, state and CPU from `/proc`, and the speed of each CPU from
//! sysfs, to scale CPU time into work (seed 004 §2.2: the module senses "scaled CPU time").
//!
//! **Scaling.** A CPU's speed is its capacity (`cpuN/cpu_capacity`, [`DEFAULT_CAPACITY`] where
//! absent) times its current frequency (`cpuN/cpufreq/scaling_cur_freq`), relative to the
//! largest capacity × top frequency (`cpuinfo_max_freq`) over the CPUs. Each sample adds the CPU
//! time used since the previous one, weighted by the speed of the CPU the thread was seen on at
//! this sample: `work += Δcpu × speed`. A thread that moved within the interval has its whole
//! interval counted at the last CPU's speed (the sampling period bounds that error). Where any
//! CPU lacks cpufreq the frequencies are left out; where, in addition, every CPU has the same
//! capacity nothing scales — work is CPU time — and [`Speeds::unscaled_reason`] says why.
//!
//! **Reading.** A thread's `schedstat` and `stat` are opened once and read again with `pread`
//! at each sample (two system calls per file read instead of four); a descriptor of a thread
//! that has exited reads `ESRCH`, which is how a vanished thread shows.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use lull_os::procfs::{self, TaskStat};

/// The capacity a CPU without `cpu_capacity` is taken to have: `SCHED_CAPACITY_SCALE`
/// (`include/linux/sched.h`), the fastest CPU's capacity on an asymmetric machine and every
/// CPU's on a symmetric one.
pub const DEFAULT_CAPACITY: u64 = 1024;

/// Bytes read of a `stat` file: a line is well under 400 bytes even with a 15-byte name and
/// 64-bit counters in every field (52 fields, at most 20 digits each would be 1 KiB).
const STAT_BUF_BYTES: usize = 1024;

/// What sysfs says of one CPU.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct CpuInput {
    pub capacity: Option<u64>,
    pub cur_khz: Option<u64>,
    pub max_khz: Option<u64>,
}

/// The speed of every CPU, as a fraction `num[cpu] / den` of the fastest CPU at its top
/// frequency.
#[derive(Debug)]
pub struct Speeds {
    num: Vec<u64>,
    den: u64,
    capacity: Vec<u64>,
    /// Per CPU, its `scaling_cur_freq`, open when frequencies count.
    cur_files: Vec<Option<File>>,
    with_frequency: bool,
    unscaled_reason: Option<String>,
}

impl Speeds {
    /// Speeds from what sysfs says of CPUs `0..inputs.len()`.
    #[must_use]
    pub fn from_inputs(inputs: &[CpuInput]) -> Speeds {
        let capacity: Vec<u64> = inputs
            .iter()
            .map(|c| c.capacity.filter(|&c| c > 0).unwrap_or(DEFAULT_CAPACITY))
            .collect();
        let with_frequency = !inputs.is_empty()
            && inputs
                .iter()
                .all(|c| c.cur_khz.is_some_and(|k| k > 0) && c.max_khz.is_some_and(|k| k > 0));
        let same_capacity = capacity.windows(2).all(|w| w[0] == w[1]);
        let (num, den) = if with_frequency {
            let num: Vec<u64> = inputs
                .iter()
                .zip(&capacity)
                .map(|(c, cap)| cap * c.cur_khz.unwrap_or(0))
                .collect();
            let den = inputs
                .iter()
                .zip(&capacity)
                .map(|(c, cap)| cap * c.max_khz.unwrap_or(0))
                .max()
                .unwrap_or(1);
            (num, den)
        } else {
            (
                capacity.clone(),
                capacity.iter().copied().max().unwrap_or(1),
            )
        };
        let unscaled_reason = (!with_frequency && same_capacity).then(|| {
            "no cpufreq on this machine and every CPU has the same capacity: work_ns is the \
             CPU time, unscaled"
                .to_owned()
        });
        Speeds {
            num,
            den: den.max(1),
            capacity,
            cur_files: Vec::new(),
            with_frequency,
            unscaled_reason,
        }
    }

    /// Reads the CPUs under `root` (normally `/sys/devices/system/cpu`): every CPU up to the
    /// highest one online.
    #[must_use]
    pub fn probe(root: &Path) -> Speeds {
        let online = std::fs::read_to_string(root.join("online"))
            .ok()
            .and_then(|t| lull_os::topology::parse_cpu_list(&t))
            .unwrap_or_default();
        let n = online.iter().max().map_or(1, |&m| m as usize + 1);
        let read =
            |p: PathBuf| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
        let inputs: Vec<CpuInput> = (0..n)
            .map(|c| {
                let dir = root.join(format!("cpu{c}"));
                CpuInput {
                    capacity: read(dir.join("cpu_capacity")),
                    cur_khz: read(dir.join("cpufreq/scaling_cur_freq")),
                    max_khz: read(dir.join("cpufreq/cpuinfo_max_freq")),
                }
            })
            .collect();
        let mut s = Speeds::from_inputs(&inputs);
        if s.with_frequency {
            s.cur_files = (0..n)
                .map(|c| File::open(root.join(format!("cpu{c}/cpufreq/scaling_cur_freq"))).ok())
                .collect();
        }
        s
    }

    /// Reads every CPU's current frequency again (one `pread` per CPU); a CPU whose file cannot
    /// be read keeps its last speed.
    pub fn refresh(&mut self) {
        if !self.with_frequency {
            return;
        }
        let mut buf = [0u8; 32];
        for (c, f) in self.cur_files.iter().enumerate() {
            let Some(f) = f else { continue };
            let Ok(n) = f.read_at(&mut buf, 0) else {
                continue;
            };
            let khz = std::str::from_utf8(&buf[..n])
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok());
            if let (Some(khz), Some(slot)) = (khz, self.num.get_mut(c)) {
                *slot = self.capacity[c] * khz;
            }
        }
    }

    /// Whether work differs from CPU time on this machine.
    #[must_use]
    pub fn scaled(&self) -> bool {
        self.unscaled_reason.is_none()
    }

    /// Why work is CPU time here, when it is.
    #[must_use]
    pub fn unscaled_reason(&self) -> Option<&str> {
        self.unscaled_reason.as_deref()
    }

    /// `cpu_ns` of CPU time on `cpu` as work: `cpu_ns × speed(cpu)`. A CPU this table does not
    /// know (hot-plugged later) counts at full speed.
    #[must_use]
    pub fn work_ns(&self, cpu: u32, cpu_ns: u64) -> u64 {
        if self.unscaled_reason.is_some() {
            return cpu_ns;
        }
        let Some(&num) = self.num.get(cpu as usize) else {
            return cpu_ns;
        };
        u64::try_from(u128::from(cpu_ns) * u128::from(num) / u128::from(self.den))
            .unwrap_or(u64::MAX)
    }
}

/// One thread's `/proc` files, open.
#[derive(Debug)]
pub struct ThreadFiles {
    schedstat: File,
    stat: File,
}

/// One reading of a thread.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Reading {
    pub cpu_ns: u64,
    pub stat: TaskStat,
}

impl ThreadFiles {
    /// Opens thread `tid` of process `pid`.
    ///
    /// # Errors
    /// The error of opening either file (`ENOENT`: the thread is gone).
    pub fn open(pid: i32, tid: i32) -> io::Result<ThreadFiles> {
        let dir = format!("/proc/{pid}/task/{tid}");
        Ok(ThreadFiles {
            schedstat: File::open(format!("{dir}/schedstat"))?,
            stat: File::open(format!("{dir}/stat"))?,
        })
    }

    /// Reads both files; `None` when the thread has exited (or its files say nothing usable).
    #[must_use]
    pub fn read(&self) -> Option<Reading> {
        let mut buf = [0u8; STAT_BUF_BYTES];
        let n = self.schedstat.read_at(&mut buf, 0).ok()?;
        let cpu_ns = procfs::parse_schedstat_run_ns(std::str::from_utf8(&buf[..n]).ok()?)?;
        let n = self.stat.read_at(&mut buf, 0).ok()?;
        let stat = procfs::parse_task_stat(std::str::from_utf8(&buf[..n]).ok()?)?;
        if matches!(stat.state, 'Z' | 'X') {
            return None;
        }
        Some(Reading { cpu_ns, stat })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Odroid-XU3's CPUs (seed 004): four Cortex-A7 of capacity 462 at up to 1.4 GHz and
    /// four Cortex-A15 of capacity 1024 at up to 2.0 GHz (`exynos5422` device tree).
    fn xu3(cur_little_khz: u64, cur_big_khz: u64) -> Vec<CpuInput> {
        (0..8)
            .map(|c| {
                if c < 4 {
                    CpuInput {
                        capacity: Some(462),
                        cur_khz: Some(cur_little_khz),
                        max_khz: Some(1_400_000),
                    }
                } else {
                    CpuInput {
                        capacity: Some(1024),
                        cur_khz: Some(cur_big_khz),
                        max_khz: Some(2_000_000),
                    }
                }
            })
            .collect()
    }

    #[test]
    fn work_is_cpu_time_times_capacity_and_frequency_over_the_fastest() {
        let s = Speeds::from_inputs(&xu3(1_400_000, 2_000_000));
        assert!(s.scaled());
        // A big core at top frequency: full speed.
        assert_eq!(s.work_ns(5, 10_000_000), 10_000_000);
        // A LITTLE core at top frequency: 462 × 1.4 / (1024 × 2.0) = 0.3158…
        assert_eq!(s.work_ns(1, 10_000_000), 3_158_203);
        // A big core at half frequency: half speed.
        let half = Speeds::from_inputs(&xu3(1_400_000, 1_000_000));
        assert_eq!(half.work_ns(4, 10_000_000), 5_000_000);
        // A CPU it does not know: full speed.
        assert_eq!(s.work_ns(63, 7), 7);
    }

    #[test]
    fn without_cpufreq_capacities_alone_scale() {
        let mut inputs = xu3(0, 0);
        for c in &mut inputs {
            (c.cur_khz, c.max_khz) = (None, None);
        }
        let s = Speeds::from_inputs(&inputs);
        assert!(s.scaled());
        assert_eq!(s.work_ns(0, 1024), 462);
        assert_eq!(s.work_ns(7, 1024), 1024);
    }

    #[test]
    fn a_symmetric_machine_without_cpufreq_is_unscaled_and_says_so() {
        let s = Speeds::from_inputs(&[CpuInput::default(), CpuInput::default()]);
        assert!(!s.scaled());
        assert!(s.unscaled_reason().unwrap().contains("no cpufreq"));
        assert_eq!(s.work_ns(1, 12_345), 12_345);
        // One CPU lacking cpufreq leaves frequencies out for all.
        let mut inputs = vec![
            CpuInput {
                capacity: Some(1024),
                cur_khz: Some(1_000_000),
                max_khz: Some(2_000_000),
            };
            2
        ];
        inputs[1].cur_khz = None;
        assert!(!Speeds::from_inputs(&inputs).scaled());
    }

    #[test]
    fn probe_reads_a_sysfs_tree() {
        let scratch = lull_os::fileout::ScratchDir::new("lull-ctl-sysfs").unwrap();
        let root = scratch.path();
        for (c, cap, cur, max) in [
            (0, 462, 700_000, 1_400_000),
            (1, 1024, 2_000_000, 2_000_000),
        ] {
            let d = root.join(format!("cpu{c}/cpufreq"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(
                root.join(format!("cpu{c}/cpu_capacity")),
                format!("{cap}\n"),
            )
            .unwrap();
            std::fs::write(d.join("scaling_cur_freq"), format!("{cur}\n")).unwrap();
            std::fs::write(d.join("cpuinfo_max_freq"), format!("{max}\n")).unwrap();
        }
        std::fs::write(root.join("online"), "0-1\n").unwrap();
        let mut s = Speeds::probe(root);
        assert!(s.scaled());
        // 462 × 0.7 GHz / (1024 × 2 GHz) = 0.1579…
        assert_eq!(s.work_ns(0, 1_000_000), 157_910);
        std::fs::write(root.join("cpu0/cpufreq/scaling_cur_freq"), "1400000\n").unwrap();
        s.refresh();
        assert_eq!(s.work_ns(0, 1_000_000), 315_820);
    }

    #[test]
    fn this_thread_reads_itself() {
        let tid = lull_os::sys::gettid();
        let pid = std::process::id() as i32;
        let f = ThreadFiles::open(pid, tid).unwrap();
        let r = f.read().expect("a live thread reads");
        assert_eq!(r.stat.state, 'R');
        assert!(!r.stat.comm.is_empty());
        assert_eq!(
            r.stat.start_ticks,
            procfs::parse_task_stat(
                &std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).unwrap()
            )
            .unwrap()
            .start_ticks
        );
        assert!(ThreadFiles::open(pid, i32::MAX).is_err());
    }
}
