use std::io;

use super::Errno;

/// A thread id for the calls below: 0 would name the calling thread and a negative one a
/// process group, so only positive ids are passed on (`EINVAL` otherwise).
pub(super) fn thread_id(tid: i32) -> io::Result<libc::pid_t> {
    if tid > 0 {
        Ok(tid)
    } else {
        Err(Errno::EINVAL.into())
    }
}

/// [`thread_id`] for the calls rustix makes.
pub(super) fn thread_pid(tid: i32) -> io::Result<rustix::process::Pid> {
    rustix::process::Pid::from_raw(thread_id(tid)?).ok_or_else(|| Errno::EINVAL.into())
}

/// `setpriority(PRIO_PROCESS, tid, nice)`: on Linux, the nice value of the one thread `tid`.
/// Lowering it below what it was needs `CAP_SYS_NICE` (or `RLIMIT_NICE`).
///
/// # Errors
/// The kernel's `errno`: `ESRCH` (no such thread), `EPERM`/`EACCES` (not allowed); `EINVAL` for
/// an id that is not positive.
pub fn set_thread_nice(tid: i32, nice: i32) -> io::Result<()> {
    Ok(rustix::process::setpriority_process(
        Some(thread_pid(tid)?),
        nice,
    )?)
}

/// The scheduling attributes of one thread (`struct sched_attr`, `sched(7)`), as far as this
/// crate uses them: the version-0 fields, without utilisation clamps.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SchedAttr {
    /// `SCHED_OTHER`, `SCHED_BATCH`, `SCHED_IDLE`, `SCHED_FIFO`, `SCHED_RR`, `SCHED_DEADLINE`.
    pub policy: u32,
    /// `SCHED_FLAG_*`; of these only `SCHED_FLAG_RESET_ON_FORK` describes a fair thread.
    pub flags: u64,
    pub nice: i32,
    /// The real-time priority (0 for the fair policies).
    pub priority: u32,
    /// For a fair thread, its slice: what `sched_getattr` reports and, since Linux 6.12, a
    /// custom slice `sched_setattr` sets (0 there means the default slice). For
    /// `SCHED_DEADLINE`, the runtime.
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

impl SchedAttr {
    /// Whether the policy is one of the fair class's (`SCHED_OTHER`, `SCHED_BATCH`,
    /// `SCHED_IDLE`), whose threads have a nice value and a slice.
    #[must_use]
    pub fn is_fair(&self) -> bool {
        [libc::SCHED_OTHER, libc::SCHED_BATCH, libc::SCHED_IDLE]
            .iter()
            .any(|&p| u32::try_from(p) == Ok(self.policy))
    }

    /// Of the flags, only `SCHED_FLAG_RESET_ON_FORK`: the one a fair thread's attributes keep
    /// when they are set again (the others ask `sched_setattr` for something).
    #[must_use]
    pub fn reset_on_fork_flag(&self) -> u64 {
        self.flags & libc::SCHED_FLAG_RESET_ON_FORK as u64
    }
}

/// `SCHED_ATTR_SIZE_VER0` (`include/uapi/linux/sched/types.h`): the size of the fields
/// [`SchedAttr`] carries.
const SCHED_ATTR_SIZE_VER0: u32 = 48;

/// `sched_getattr(tid, …)`.
///
/// # Errors
/// The kernel's `errno` (`ESRCH`: no such thread).
pub fn sched_getattr(tid: i32) -> io::Result<SchedAttr> {
    let tid = thread_id(tid)?;
    let mut a = libc::sched_attr {
        size: 0,
        sched_policy: 0,
        sched_flags: 0,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: 0,
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: `a` is a valid, writable `struct sched_attr` of at least the size passed; the
    // kernel writes at most that many bytes.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &raw mut a,
            SCHED_ATTR_SIZE_VER0 as libc::c_uint,
            0 as libc::c_uint,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(SchedAttr {
        policy: a.sched_policy,
        flags: a.sched_flags,
        nice: a.sched_nice,
        priority: a.sched_priority,
        runtime_ns: a.sched_runtime,
        deadline_ns: a.sched_deadline,
        period_ns: a.sched_period,
    })
}

/// `sched_setattr(tid, attr, 0)` with the version-0 fields of `attr`.
///
/// # Errors
/// The kernel's `errno`: `ESRCH`, `EPERM` (not allowed), `EINVAL` (attributes it refuses).
pub fn sched_setattr(tid: i32, attr: &SchedAttr) -> io::Result<()> {
    let tid = thread_id(tid)?;
    let mut a = libc::sched_attr {
        size: SCHED_ATTR_SIZE_VER0,
        sched_policy: attr.policy,
        sched_flags: attr.flags,
        sched_nice: attr.nice,
        sched_priority: attr.priority,
        sched_runtime: attr.runtime_ns,
        sched_deadline: attr.deadline_ns,
        sched_period: attr.period_ns,
    };
    // SAFETY: `a` is a valid `struct sched_attr` whose `size` says how much the kernel reads.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &raw mut a, 0 as libc::c_uint) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// CPUs a [`CpuSet`] can name: glibc's `CPU_SETSIZE`.
pub const CPU_SET_SIZE: usize = rustix::thread::CpuSet::MAX_CPU;

/// A set of CPUs for [`sched_getaffinity`] and [`sched_setaffinity`] (CPUs 0 to
/// [`CPU_SET_SIZE`] − 1): rustix's, whose bit operations panic past its size where this one
/// ignores or answers `false`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CpuSet(rustix::thread::CpuSet);

impl CpuSet {
    #[must_use]
    pub fn empty() -> CpuSet {
        CpuSet(rustix::thread::CpuSet::new())
    }

    /// CPUs 0 to 63, bit `n` for CPU `n`.
    #[must_use]
    pub fn from_mask(mask: u64) -> CpuSet {
        let mut s = CpuSet::empty();
        for cpu in (0..64).filter(|c| mask & (1 << c) != 0) {
            s.insert(cpu);
        }
        s
    }

    /// Adds `cpu` (ignored beyond [`CPU_SET_SIZE`]).
    pub fn insert(&mut self, cpu: usize) {
        if cpu < CPU_SET_SIZE {
            self.0.set(cpu);
        }
    }

    #[must_use]
    pub fn contains(&self, cpu: usize) -> bool {
        cpu < CPU_SET_SIZE && self.0.is_set(cpu)
    }

    /// CPUs 0 to 63 of the set as a bit mask.
    #[must_use]
    pub fn low_mask(&self) -> u64 {
        (0..64)
            .filter(|&c| self.contains(c))
            .fold(0, |m, c| m | 1 << c)
    }

    /// The CPUs in the set, ascending.
    pub fn cpus(&self) -> impl Iterator<Item = usize> + '_ {
        (0..CPU_SET_SIZE).filter(|&c| self.contains(c))
    }
}

/// `sched_getaffinity(tid)`: the CPUs thread `tid` may run on.
///
/// # Errors
/// The kernel's `errno` (`ESRCH`: no such thread).
pub fn sched_getaffinity(tid: i32) -> io::Result<CpuSet> {
    Ok(CpuSet(rustix::thread::sched_getaffinity(Some(
        thread_pid(tid)?,
    ))?))
}

/// `sched_setaffinity(tid, set)`: the kernel keeps the CPUs of `set` that the thread's cpuset
/// allows and that are online.
///
/// # Errors
/// The kernel's `errno`: `ESRCH`, `EPERM`, `EINVAL` (no CPU of `set` is allowed and online).
pub fn sched_setaffinity(tid: i32, set: &CpuSet) -> io::Result<()> {
    Ok(rustix::thread::sched_setaffinity(
        Some(thread_pid(tid)?),
        &set.0,
    )?)
}

/// `SCHED_FIFO`, for [`SchedAttr::policy`].
pub const SCHED_FIFO: u32 = libc::SCHED_FIFO as u32;
/// `SCHED_DEADLINE`, for [`SchedAttr::policy`].
pub const SCHED_DEADLINE: u32 = libc::SCHED_DEADLINE as u32;

/// The calling process's soft `RLIMIT_NICE`, as the kernel keeps it (`20 - nice` of the lowest
/// nice value allowed; `None` for no limit).
///
/// # Errors
/// The kernel's error from `getrlimit`.
pub fn nice_rlimit() -> io::Result<Option<u64>> {
    Ok(rustix::process::getrlimit(rustix::process::Resource::Nice).current)
}

#[cfg(test)]
mod tests {
    use crate::sys::*;

    #[test]
    fn cpu_sets_hold_their_cpus() {
        let s = CpuSet::from_mask(0b1010_0001);
        assert_eq!(s.cpus().collect::<Vec<_>>(), [0, 5, 7]);
        assert_eq!(s.low_mask(), 0b1010_0001);
        let mut big = CpuSet::empty();
        big.insert(1000);
        big.insert(CPU_SET_SIZE);
        assert!(big.contains(1000) && !big.contains(CPU_SET_SIZE));
        assert_eq!(big.low_mask(), 0);
    }

    /// The calling thread's own attributes and mask read back as the kernel reports them in
    /// `/proc` (no privilege needed: nothing is changed).
    #[test]
    fn own_thread_reads_back() {
        let me = gettid();
        let attr = sched_getattr(me).unwrap();
        let stat = std::fs::read_to_string(format!("/proc/self/task/{me}/stat")).unwrap();
        let after_name: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .collect();
        // Field 19 (nice) and 41 (policy), counted from field 3 right after the name.
        assert_eq!(after_name[19 - 3].parse::<i32>().unwrap(), attr.nice);
        assert_eq!(after_name[41 - 3].parse::<u32>().unwrap(), attr.policy);
        let set = sched_getaffinity(me).unwrap();
        assert!(set.cpus().count() >= 1);
        sched_setaffinity(me, &set).unwrap();
        assert_eq!(sched_getaffinity(me).unwrap(), set);
        // Ids that are not positive name no one thread.
        assert_eq!(sched_getattr(0).map_err(Errno::from), Err(Errno::EINVAL));
        assert_eq!(
            set_thread_nice(-1, 0).map_err(Errno::from),
            Err(Errno::EINVAL)
        );
        assert_eq!(
            sched_setaffinity(0, &set).map_err(Errno::from),
            Err(Errno::EINVAL)
        );
    }
}
