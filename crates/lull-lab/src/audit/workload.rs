//! Benchmark children. Each runs in a forked process (so the recorder, which counts its own
//! process's threads rather than logging them, logs it) and is reaped with `wait4`, whose
//! `rusage` is the getrusage figure seed 002 compares against.
//!
//! The child only computes, issues `write`/`read` system calls on descriptors prepared by the
//! parent, reads the clock and calls `_exit`: nothing that allocates or takes a lock, which is
//! what a child forked from a multi-threaded process may safely do.

use std::ffi::CString;
use std::hint::black_box;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use lull_os::sys::{self, monotonic_ns};
use serde::Serialize;

/// Side of the matrices of the compute benchmark: 3 × 128² doubles = 384 KiB, resident in L2,
/// so the benchmark is compute-bound like seed 002's matrixMultiply.
pub const MATMUL_N: usize = 128;

/// What a child does.
#[derive(Debug, Clone)]
pub enum Workload {
    /// `reps` products of two `MATMUL_N`² matrices (seed 002 §3.1's matrixMultiply).
    MatMul { reps: u32 },
    /// `count` single-byte appends to `path` (seed 002 §3.2's I/O benchmark).
    Append { path: CString, count: u64 },
    /// `rounds` one-byte round trips between this child and a grandchild over two pipes: every
    /// round is two wakeups and two context switches, a scheduler-event generator.
    PingPong { rounds: u64 },
    /// Spin until `until_ns` on CLOCK_MONOTONIC (a busy thread for TLP).
    Spin { until_ns: u64 },
}

/// A reaped child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ChildRun {
    pub pid: u32,
    pub exit_status: i32,
    pub utime_ns: u64,
    pub stime_ns: u64,
    pub nvcsw: u64,
    pub nivcsw: u64,
}

/// Matrices allocated before the fork.
#[derive(Debug)]
pub struct Matrices {
    a: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Default for Matrices {
    fn default() -> Self {
        let n = MATMUL_N;
        Matrices {
            a: (0..n * n).map(|i| (i % 7) as f64 * 0.5).collect(),
            b: (0..n * n).map(|i| (i % 5) as f64 * 0.25).collect(),
            c: vec![0.0; n * n],
        }
    }
}

/// One product `c = a × b` (i-k-j order, vectorisable inner loop).
pub fn matmul_once(m: &mut Matrices) {
    let n = MATMUL_N;
    m.c.iter_mut().for_each(|v| *v = 0.0);
    for i in 0..n {
        for k in 0..n {
            let aik = m.a[i * n + k];
            let (row_b, row_c) = (&m.b[k * n..(k + 1) * n], &mut m.c[i * n..(i + 1) * n]);
            for (cv, bv) in row_c.iter_mut().zip(row_b) {
                *cv += aik * bv;
            }
        }
    }
    black_box(&m.c);
}

fn child_main(w: &Workload, m: &mut Matrices) -> i32 {
    match w {
        Workload::MatMul { reps } => {
            for _ in 0..*reps {
                matmul_once(m);
            }
            0
        }
        Workload::Append { path, count } => {
            let Ok(fd) = sys::open_append_truncated(path, 0o600) else {
                return 2;
            };
            let byte = [b'x'];
            for _ in 0..*count {
                if sys::write_all_once(fd.as_raw_fd(), &byte).ok() != Some(1) {
                    return 3;
                }
            }
            drop(fd);
            0
        }
        Workload::PingPong { rounds } => pingpong(*rounds),
        Workload::Spin { until_ns } => {
            let mut x = 0u64;
            while monotonic_ns() < *until_ns {
                for _ in 0..1000 {
                    x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            }
            0
        }
    }
}

fn pingpong(rounds: u64) -> i32 {
    let (Ok((ab_r, ab_w)), Ok((ba_r, ba_w))) = (sys::pipe(false), sys::pipe(false)) else {
        return 4;
    };
    let (ab, ba) = (
        [ab_r.as_raw_fd(), ab_w.as_raw_fd()],
        [ba_r.as_raw_fd(), ba_w.as_raw_fd()],
    );
    // SAFETY: this child is single-threaded; the grandchild only does read/write/_exit.
    let Ok(forked) = (unsafe { sys::fork() }) else {
        return 5;
    };
    let mut b = [0u8; 1];
    let one = |r: std::io::Result<usize>| r.ok() == Some(1);
    if forked == sys::Forked::Child {
        for _ in 0..rounds {
            if !one(sys::read(ab[0], &mut b)) || !one(sys::write_all_once(ba[1], &b)) {
                sys::exit_now(6);
            }
        }
        sys::exit_now(0);
    }
    for _ in 0..rounds {
        if !one(sys::write_all_once(ab[1], &b)) || !one(sys::read(ba[0], &mut b)) {
            return 7;
        }
    }
    if let sys::Forked::Parent(pid) = forked {
        let _ = sys::reap(pid);
    }
    0
}

/// How a child is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// Fair scheduling at this nice value.
    Nice(i32),
    /// `SCHED_FIFO` at this real-time priority: runs whenever it is runnable, ahead of all fair
    /// tasks (the kernel still keeps 5 % of each second for them).
    Fifo(i32),
}

/// Forks a child running `w`, pinned to `cpu` when given, at `prio` when given.
pub fn spawn(
    w: &Workload,
    m: &mut Matrices,
    cpu: Option<usize>,
    prio: Option<Priority>,
) -> std::io::Result<u32> {
    // SAFETY: the child runs only async-signal-safe work (see the module comment) and `_exit`s.
    let forked = unsafe { sys::fork() }?;
    let sys::Forked::Parent(pid) = forked else {
        // Drop every inherited descriptor (tracefs buffers of a running recorder among them: a
        // tracefs instance cannot be removed while any process holds one of its files open).
        sys::close_from(3);
        // The child is single-threaded: its pid names its one thread.
        let me = sys::getpid();
        if let Some(c) = cpu {
            let mut set = sys::CpuSet::empty();
            set.insert(c);
            let _ = sys::sched_setaffinity(me, &set);
        }
        match prio {
            Some(Priority::Nice(n)) => {
                let _ = sys::set_thread_nice(me, n);
            }
            Some(Priority::Fifo(p)) => {
                let _ = sys::sched_setattr(
                    me,
                    &sys::SchedAttr {
                        policy: sys::SCHED_FIFO,
                        flags: 0,
                        nice: 0,
                        priority: u32::try_from(p).unwrap_or(0),
                        runtime_ns: 0,
                        deadline_ns: 0,
                        period_ns: 0,
                    },
                );
            }
            None => {}
        }
        // Leaves the child without running the parent's destructors or atexit hooks.
        sys::exit_now(child_main(w, m));
    };
    Ok(pid as u32)
}

/// Reaps `pid` and returns its resource usage.
pub fn reap(pid: u32) -> std::io::Result<ChildRun> {
    let pid_i32 = i32::try_from(pid)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "pid out of range"))?;
    let exit = sys::reap(pid_i32)?;
    Ok(ChildRun {
        pid,
        exit_status: exit.code.unwrap_or(-1),
        utime_ns: exit.user_ns,
        stime_ns: exit.system_ns,
        nvcsw: exit.voluntary_switches,
        nivcsw: exit.involuntary_switches,
    })
}

/// Runs the workloads concurrently (each with its CPU), returns their runs and the wall time
/// from the first fork to the last reap.
pub fn run_all(
    ws: &[(Workload, Option<usize>)],
    m: &mut Matrices,
    prio: Option<Priority>,
) -> std::io::Result<(Vec<ChildRun>, u64)> {
    let t0 = monotonic_ns();
    let mut pids = Vec::new();
    for (w, cpu) in ws {
        pids.push(spawn(w, m, *cpu, prio)?);
    }
    let mut runs = Vec::new();
    for p in pids {
        let r = reap(p)?;
        if r.exit_status != 0 {
            return Err(std::io::Error::other(format!(
                "benchmark child {p} exited with status {}",
                r.exit_status
            )));
        }
        runs.push(r);
    }
    Ok((runs, monotonic_ns() - t0))
}

/// A path in `dir` (a private scratch directory) for the append benchmark's file, as a path
/// and as the C string the child opens.
///
/// # Errors
/// `InvalidInput` when the path holds a NUL byte.
pub fn append_path(dir: &Path) -> std::io::Result<(std::path::PathBuf, CString)> {
    let p = dir.join(format!("lull-audit-append-{}.dat", std::process::id()));
    let c = CString::new(p.as_os_str().as_bytes()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{}: the path holds a NUL byte", p.display()),
        )
    })?;
    Ok((p, c))
}
