//! Readings of `/proc` that the daemon and the lab both need: a thread's CPU time, wake-ups and
//! scheduler state, a process's start time, and whether a thread is parked in a futex wait.
//!
//! For each thread, `/proc/PID/task/TID/schedstat` gives the nanoseconds it ran on a CPU, and
//! `/proc/PID/task/TID/status` its `voluntary_ctxt_switches`: the times it blocked. A thread
//! that is blocked at both ends of a window has been woken exactly as many times as it blocked in
//! between, so the difference of voluntary switches over a window is its wake-up count.
//! (Involuntary switches are preemptions of a running thread, not wake-ups, and are counted
//! apart.) The measurement windows built on these readings are the lab's (`lull_lab::measure`).
//!
//! The policy actuator in `lulld` reads a process's start time ([`process_start_ticks`]), to tell
//! a process from a later one that reused its id, and whether a thread is parked
//! ([`parked_in_futex`]); its tests read a thread's nice value back ([`thread_nice`]).
//!
//! The lab's rt-app runner finds a process's threads by name ([`thread_names`]) and reads their
//! CPU time alone ([`thread_run_ns`]).

use std::fs;
use std::io;

/// Why a thread's counters could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("{path} has no {field} (kernel without schedstats?)")]
    Missing { path: String, field: &'static str },
}

/// One thread's kernel counters at one moment.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct ThreadSample {
    pub run_ns: u64,
    pub voluntary: u64,
    pub involuntary: u64,
    /// Scheduler state letter from `/proc/.../stat` (`S` = sleeping).
    pub state: char,
}

impl ThreadSample {
    /// The counters accrued since `start` (an earlier sample of the same thread); the state is
    /// this sample's.
    pub fn since(self, start: ThreadSample) -> ThreadSample {
        ThreadSample {
            run_ns: self.run_ns.saturating_sub(start.run_ns),
            voluntary: self.voluntary.saturating_sub(start.voluntary),
            involuntary: self.involuntary.saturating_sub(start.involuntary),
            state: self.state,
        }
    }
}

fn read(path: String) -> Result<(String, String), MeasureError> {
    match fs::read_to_string(&path) {
        Ok(s) => Ok((s, path)),
        Err(source) => Err(MeasureError::Read { path, source }),
    }
}

/// Reads the counters of thread `tid` of this process.
///
/// # Errors
/// [`MeasureError`] when the files are missing (thread gone) or lack a field.
pub fn sample(tid: i32) -> Result<ThreadSample, MeasureError> {
    probe(&format!("/proc/self/task/{tid}")).map(|(s, _)| s)
}

/// Reads the counters of thread `tid` of process `pid` (any process the caller may inspect).
///
/// # Errors
/// [`MeasureError`] when the files are missing (thread gone) or lack a field.
pub fn sample_thread(pid: i32, tid: i32) -> Result<ThreadSample, MeasureError> {
    probe(&format!("/proc/{pid}/task/{tid}")).map(|(s, _)| s)
}

/// Field of `/proc/.../stat` holding the thread's start time (`proc(5)`, field 22, counted from 1).
const STAT_FIELD_STARTTIME: usize = 22;
/// Field of `/proc/.../stat` holding the state letter (`proc(5)`, field 3), the first one after
/// the parenthesised command name.
const STAT_FIELD_STATE: usize = 3;
/// Field of `/proc/.../stat` holding the nice value (`proc(5)`, field 19).
const STAT_FIELD_NICE: usize = 19;
/// Field of `/proc/.../stat` holding the CPU the task last ran on (`proc(5)`, field 39,
/// `processor`).
const STAT_FIELD_PROCESSOR: usize = 39;
/// Field of `/proc/.../stat` holding the task's `PF_*` flags (`proc(5)`, field 9).
const STAT_FIELD_FLAGS: usize = 9;

/// `PF_KTHREAD` (`include/linux/sched.h`): the task is a kernel thread, with no user memory
/// and no business being registered with a user-space controller.
pub const PF_KTHREAD: u32 = 0x0020_0000;

/// One task's `/proc/PID/task/TID/stat` (or `/proc/PID/stat`), the fields a controller senses.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TaskStat {
    /// The command name (field 2, without its parentheses; at most 15 bytes).
    pub comm: String,
    /// Scheduler state letter (field 3): `R` running or runnable, `S` sleeping, `D` in
    /// uninterruptible wait, `Z` zombie, …
    pub state: char,
    /// `PF_*` flags (field 9).
    pub flags: u32,
    /// Start time in clock ticks since boot (field 22).
    pub start_ticks: u64,
    /// The CPU it last ran on (field 39).
    pub processor: u32,
}

impl TaskStat {
    /// Whether the task is a kernel thread ([`PF_KTHREAD`]).
    #[must_use]
    pub fn is_kernel_thread(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }
}

/// Parses a `/proc/.../stat` line into a [`TaskStat`]; `None` when a field is missing or not a
/// number.
#[must_use]
pub fn parse_task_stat(text: &str) -> Option<TaskStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    let f = parse_stat(text);
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let flags = rest
        .get(STAT_FIELD_FLAGS - STAT_FIELD_STATE)?
        .parse()
        .ok()?;
    Some(TaskStat {
        comm,
        state: f.state?,
        flags,
        start_ticks: f.start_ticks?,
        processor: f.processor?,
    })
}

/// The process thread `tid` belongs to (`Tgid:` of `/proc/TID/status`; a thread id names its
/// `/proc` directory even though it is not listed); `None` when there is no such task.
#[must_use]
pub fn thread_group_of(tid: i32) -> Option<i32> {
    if tid <= 0 {
        return None;
    }
    let text = fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    parse_tgid(&text)
}

/// The `Tgid:` line of a `/proc/.../status` file.
#[must_use]
pub fn parse_tgid(status: &str) -> Option<i32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The fields of a `/proc/PID/stat` or `/proc/PID/task/TID/stat` line this crate uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct StatFields {
    /// Scheduler state letter (field 3).
    state: Option<char>,
    /// Start time in clock ticks since boot (field 22). With the id it names one process or
    /// thread: a later holder of a reused id starts later (to the tick).
    start_ticks: Option<u64>,
    /// Nice value (field 19).
    nice: Option<i32>,
    /// The CPU it last ran on (field 39).
    processor: Option<u32>,
}

/// Parses a `/proc/.../stat` line. The command name (field 2) is parenthesised but may itself
/// hold spaces and parentheses, so the numbered fields are counted from after its last `)`.
fn parse_stat(text: &str) -> StatFields {
    let rest: Vec<&str> = text
        .rfind(')')
        .map(|i| text[i + 1..].split_whitespace().collect())
        .unwrap_or_default();
    StatFields {
        state: rest.first().and_then(|f| f.chars().next()),
        start_ticks: rest
            .get(STAT_FIELD_STARTTIME - STAT_FIELD_STATE)
            .and_then(|f| f.parse().ok()),
        nice: rest
            .get(STAT_FIELD_NICE - STAT_FIELD_STATE)
            .and_then(|f| f.parse().ok()),
        processor: rest
            .get(STAT_FIELD_PROCESSOR - STAT_FIELD_STATE)
            .and_then(|f| f.parse().ok()),
    }
}

/// Start time of process `pid` in clock ticks since boot, from `/proc/PID/stat`; `None` when the
/// process is gone or the file has no such field. Compare two readings to tell whether `pid`
/// still names the same process.
#[must_use]
pub fn process_start_ticks(pid: i32) -> Option<u64> {
    if pid <= 0 {
        return None;
    }
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text).start_ticks
}

/// Nice value of thread `tid` of process `pid` as the kernel reports it in
/// `/proc/PID/task/TID/stat`; `None` when the thread is gone.
#[must_use]
pub fn thread_nice(pid: i32, tid: i32) -> Option<i32> {
    let text = fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    parse_stat(&text).nice
}

/// The CPU time thread `tid` of process `pid` has used since it started
/// (`/proc/PID/task/TID/schedstat`) and the CPU it last ran on (field 39 of its `stat`): what
/// the daemon answers a policy's sampling with. `None` when the thread is gone.
#[must_use]
pub fn thread_cpu_use(pid: i32, tid: i32) -> Option<(u64, u32)> {
    let dir = format!("/proc/{pid}/task/{tid}");
    let run_ns = run_ns_in(&dir).ok()?;
    let stat = fs::read_to_string(format!("{dir}/stat")).ok()?;
    Some((run_ns, parse_stat(&stat).processor?))
}

/// Whether thread `tid` of `pid` is blocked in a futex wait with no timeout: it cannot run until
/// another thread wakes it. Any doubt (unreadable file, running thread) says no.
pub fn parked_in_futex(pid: i32, tid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/task/{tid}/syscall"))
        .is_ok_and(|text| parse_parked_in_futex(&text))
}

/// `proc(5)`: `/proc/.../syscall` is the number of the system call the thread is blocked in and
/// its six arguments in hex (then stack and program counters), `-1 ...` outside a system call,
/// or `running`.
fn parse_parked_in_futex(text: &str) -> bool {
    let mut fields = text.split_whitespace();
    if fields.next().and_then(|n| n.parse::<i64>().ok()) != Some(libc::SYS_futex) {
        return false;
    }
    let args: Vec<u64> = fields
        .take(6)
        .filter_map(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
        .collect();
    let (Some(&op), Some(&timeout)) = (args.get(1), args.get(3)) else {
        return false;
    };
    let cmd = op & !((libc::FUTEX_PRIVATE_FLAG | libc::FUTEX_CLOCK_REALTIME) as u64);
    (cmd == libc::FUTEX_WAIT as u64 || cmd == libc::FUTEX_WAIT_BITSET as u64) && timeout == 0
}

/// The nanoseconds a thread has run on a CPU: the first field of a `schedstat` file
/// (`sum_exec_runtime`, the scheduler's own counter, present even without `CONFIG_SCHEDSTATS`).
#[must_use]
pub fn parse_schedstat_run_ns(text: &str) -> Option<u64> {
    text.split_whitespace().next().and_then(|v| v.parse().ok())
}

fn run_ns_in(dir: &str) -> Result<u64, MeasureError> {
    let (schedstat, path) = read(format!("{dir}/schedstat"))?;
    parse_schedstat_run_ns(&schedstat).ok_or(MeasureError::Missing {
        path,
        field: "run time",
    })
}

/// The nanoseconds thread `tid` of process `pid` has run, from `/proc/PID/task/TID/schedstat`
/// alone (cheaper than [`sample_thread`] when only CPU time is wanted).
///
/// # Errors
/// [`MeasureError`] when the thread is gone or the file lacks the field.
pub fn thread_run_ns(pid: i32, tid: i32) -> Result<u64, MeasureError> {
    run_ns_in(&format!("/proc/{pid}/task/{tid}"))
}

/// The threads of process `pid` with their names (`/proc/PID/task/TID/comm`, at most 15 bytes),
/// in ascending thread id. A thread that exits while the directory is read is left out.
///
/// # Errors
/// The error of reading `/proc/PID/task` (the process is gone).
pub fn thread_names(pid: i32) -> io::Result<Vec<(i32, String)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(format!("/proc/{pid}/task"))? {
        let Some(tid) = entry?.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        if let Ok(comm) = fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")) {
            out.push((tid, comm.trim_end_matches('\n').to_owned()));
        }
    }
    out.sort_unstable_by_key(|&(tid, _)| tid);
    Ok(out)
}

/// The counters of the thread whose `/proc` directory is `dir`, and its start time in clock ticks
/// since boot, which tells a thread from a later one that reused its id.
pub fn probe(dir: &str) -> Result<(ThreadSample, u64), MeasureError> {
    let run_ns = run_ns_in(dir)?;
    let (status, path) = read(format!("{dir}/status"))?;
    let field = |name: &'static str| -> Result<u64, MeasureError> {
        status
            .lines()
            .find_map(|l| {
                l.strip_prefix(name)
                    .map(|v| v.trim_start_matches(':').trim().parse().ok())
            })
            .flatten()
            .ok_or(MeasureError::Missing {
                path: path.clone(),
                field: name,
            })
    };
    let voluntary = field("voluntary_ctxt_switches")?;
    let involuntary = field("nonvoluntary_ctxt_switches")?;
    let (stat, path) = read(format!("{dir}/stat"))?;
    let fields = parse_stat(&stat);
    let state = fields.state.ok_or(MeasureError::Missing {
        path: path.clone(),
        field: "state",
    })?;
    let start_ticks = fields.start_ticks.ok_or(MeasureError::Missing {
        path,
        field: "starttime",
    })?;
    Ok((
        ThreadSample {
            run_ns,
            voluntary,
            involuntary,
            state,
        },
        start_ticks,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::gettid;

    /// A `/proc/PID/stat` line for command name `comm`, state `R`, nice −7 and start time
    /// 4242; the other numbers are the field numbers, so a miscount shows.
    fn stat_line(comm: &str) -> String {
        let tail: Vec<String> = (4..=52)
            .map(|n| match n {
                19 => "-7".into(),
                22 => "4242".into(),
                _ => n.to_string(),
            })
            .collect();
        format!("1234 ({comm}) R {}\n", tail.join(" "))
    }

    #[test]
    fn task_stat_reads_comm_state_flags_start_and_cpu() {
        for comm in ["my app", "a) (b", ""] {
            let t = parse_task_stat(&stat_line(comm)).expect("a full line parses");
            assert_eq!(t.comm, comm);
            assert_eq!(t.state, 'R');
            assert_eq!(t.flags, 9);
            assert_eq!(t.start_ticks, 4242);
            assert_eq!(t.processor, 39);
            assert!(!t.is_kernel_thread());
        }
        // kthreadd as Linux 6.x prints it: flags 0x208040 (PF_KTHREAD | PF_NOFREEZE | …).
        let kthreadd = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0 \
                        18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0 \
                        0 0 0 0 0 0 0 0";
        let k = parse_task_stat(kthreadd).expect("kthreadd parses");
        assert!(k.is_kernel_thread());
        assert_eq!(k.processor, 1);
        assert_eq!(parse_task_stat("1 (x) R 1 2 3"), None);
        assert_eq!(parse_task_stat("garbage"), None);
    }

    #[test]
    fn tgid_comes_from_status() {
        assert_eq!(
            parse_tgid("Name:\tx\nUmask:\t0022\nState:\tS\nTgid:\t4321\n"),
            Some(4321)
        );
        assert_eq!(parse_tgid("Name:\tx\n"), None);
        assert_eq!(thread_group_of(gettid()), Some(std::process::id() as i32));
        assert_eq!(thread_group_of(0), None);
    }

    #[test]
    fn stat_fields_are_counted_after_the_last_parenthesis() {
        for comm in [
            "lulld",
            "my app",
            "a) (b",
            ") (",
            "x) R 5 6 (y",
            "((",
            "))",
            "",
            " lead and trail ",
        ] {
            let f = parse_stat(&stat_line(comm));
            assert_eq!(f.state, Some('R'), "{comm:?}");
            assert_eq!(f.start_ticks, Some(4242), "{comm:?}");
            assert_eq!(f.nice, Some(-7), "{comm:?}");
            // Field 39 holds its own number in the test line.
            assert_eq!(f.processor, Some(39), "{comm:?}");
        }
        // Truncated or malformed: nothing invented.
        assert_eq!(parse_stat(""), StatFields::default());
        assert_eq!(
            parse_stat("1234 (no close paren R 4 5"),
            StatFields::default()
        );
        let short = parse_stat("1234 (a) S 4 5 6");
        assert_eq!(short.state, Some('S'));
        assert_eq!((short.start_ticks, short.nice), (None, None));
        let bad = stat_line("a").replace(" 4242 ", " 42x2 ");
        assert_eq!(parse_stat(&bad).start_ticks, None);
    }

    #[test]
    fn own_cpu_use_reads() {
        let me = std::process::id() as i32;
        // The run time is the kernel's last update (a thread not yet switched out may read 0).
        let (_, cpu) = thread_cpu_use(me, gettid()).unwrap();
        let online = std::thread::available_parallelism().map_or(1, usize::from);
        assert!((cpu as usize) < online.max(64));
        assert_eq!(thread_cpu_use(me, -1), None);
    }

    #[test]
    fn schedstat_run_time_is_the_first_field() {
        assert_eq!(
            parse_schedstat_run_ns("74562366 33920329 88\n"),
            Some(74_562_366)
        );
        assert_eq!(parse_schedstat_run_ns("0 0 0"), Some(0));
        for bad in ["", "\n", "x 1 2", "-5 1 2", "1.5 2 3"] {
            assert_eq!(parse_schedstat_run_ns(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn thread_names_lists_this_thread_by_its_name() {
        let pid = std::process::id() as i32;
        let tid = gettid();
        let names = thread_names(pid).unwrap();
        assert!(names.windows(2).all(|w| w[0].0 < w[1].0), "{names:?}");
        let own = fs::read_to_string(format!("/proc/self/task/{tid}/comm")).unwrap();
        assert!(
            names.contains(&(tid, own.trim_end().to_owned())),
            "{names:?}"
        );
        assert!(thread_run_ns(pid, tid).is_ok());
        assert!(thread_names(1 << 23).is_err());
    }

    #[test]
    fn futex_waits_without_timeout_are_parked() {
        let nr = libc::SYS_futex;
        // Condition variable wait (FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG), no timeout.
        assert!(parse_parked_in_futex(&format!(
            "{nr} 0x555bd396eaf8 0x89 0x0 0x0 0x0 0xffffffff 0x7f95d053bc98 0x7f95d0641829\n"
        )));
        // Plain FUTEX_WAIT, shared.
        assert!(parse_parked_in_futex(&format!(
            "{nr} 0x1000 0x0 0x2 0x0 0x0 0x0 0x1 0x2"
        )));
        // With a timeout: wakes by itself.
        assert!(!parse_parked_in_futex(&format!(
            "{nr} 0x555bd396eaf8 0x89 0x0 0x7f95cbffecc0 0x0 0x7f95ffffffff 0x1 0x2"
        )));
        // FUTEX_WAKE is not a wait.
        assert!(!parse_parked_in_futex(&format!(
            "{nr} 0x1000 0x81 0x1 0x0 0x0 0x0 0x1 0x2"
        )));
        for other in [
            "running",
            "-1 0x7ffc 0x5555",
            "230 0x1 0x0 0x7f95cbdfdce8 0x7f95cbdfdce8 0x0 0x0 0x1 0x2",
            "",
            &format!("{nr} 0x1000"),
        ] {
            assert!(!parse_parked_in_futex(other), "{other}");
        }
    }

    #[test]
    fn process_start_ticks_names_this_process() {
        let pid = std::process::id() as i32;
        let own = parse_stat(&fs::read_to_string("/proc/self/stat").unwrap());
        let ticks = process_start_ticks(pid);
        assert!(ticks.is_some());
        assert_eq!(ticks, own.start_ticks);
        assert_eq!(
            process_start_ticks(pid),
            ticks,
            "stable while the process lives"
        );
        assert_eq!(process_start_ticks(0), None);
        assert_eq!(process_start_ticks(-1), None);
        // Above the kernel's pid limit (2^22): no such process.
        assert_eq!(process_start_ticks(1 << 23), None);
    }

    #[test]
    fn a_blocked_thread_counts_one_wakeup_per_block() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (ack_tx, ack_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            tid_tx.send(gettid()).unwrap();
            while rx.recv().is_ok() {
                ack_tx.send(()).unwrap();
            }
        });
        let tid = tid_rx.recv().unwrap();
        // A receiver may spin briefly before it sleeps, so each message is sent only once the
        // kernel shows the thread asleep: then each one wakes it exactly once.
        let asleep = || {
            wait_until("thread blocks", || {
                sample(tid).is_ok_and(|s| s.state == 'S')
            })
        };
        asleep();
        let s = sample(tid).unwrap();
        assert!(s.voluntary >= 1 || s.run_ns > 0);
        for _ in 0..3 {
            asleep();
            tx.send(()).unwrap();
            ack_rx.recv().unwrap();
        }
        asleep();
        let after = sample(tid).unwrap();
        assert!(after.voluntary >= s.voluntary + 3, "{s:?} -> {after:?}");
        drop(tx);
        h.join().unwrap();
    }

    /// Waits, yielding, until `cond` holds; the cap only keeps a broken kernel from hanging the
    /// test and is not a timing assertion.
    fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !cond() {
            assert!(
                std::time::Instant::now() < deadline,
                "never happened: {what}"
            );
            std::thread::yield_now();
        }
    }
}
