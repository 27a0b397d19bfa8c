//! Wake-ups and CPU time of threads, read from the kernel.
//!
//! For each thread, `/proc/self/task/TID/schedstat` gives the nanoseconds it ran on a CPU, and
//! `/proc/self/task/TID/status` its `voluntary_ctxt_switches`: the times it blocked. A thread
//! that is blocked at both ends of a window has been woken exactly as many times as it blocked in
//! between, so the difference of voluntary switches over the window is its wake-up count.
//! (Involuntary switches are preemptions of a running thread, not wake-ups, and are reported
//! apart.)
//!
//! [`CategoryWindow`] applies the same counters to the threads of GUI applications in any
//! process (`/proc/PID/task/TID`) and sums them per guiS thread category.
//!
//! The other `/proc` readings guiS needs live here too: a process's start time
//! ([`process_start_ticks`]) and whether a thread is parked in a futex wait.

use std::fs;
use std::io;
use std::ops::AddAssign;
use std::time::{Duration, Instant};

use lull_model::time::{ns_to_ms, NS_PER_S};
use lull_model::ThreadCategory;

use crate::sys::gettid;

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
    fn since(self, start: ThreadSample) -> ThreadSample {
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

/// The fields of a `/proc/PID/stat` or `/proc/PID/task/TID/stat` line this crate uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct StatFields {
    /// Scheduler state letter (field 3).
    state: Option<char>,
    /// Start time in clock ticks since boot (field 22). With the id it names one process or
    /// thread: a later holder of a reused id starts later (to the tick).
    start_ticks: Option<u64>,
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

/// Whether thread `tid` of `pid` is blocked in a futex wait with no timeout: it cannot run until
/// another thread wakes it. Any doubt (unreadable file, running thread) says no.
pub(crate) fn parked_in_futex(pid: i32, tid: i32) -> bool {
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

/// The counters of the thread whose `/proc` directory is `dir`, and its start time in clock ticks
/// since boot, which tells a thread from a later one that reused its id.
fn probe(dir: &str) -> Result<(ThreadSample, u64), MeasureError> {
    let (schedstat, path) = read(format!("{dir}/schedstat"))?;
    let run_ns = schedstat
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or(MeasureError::Missing {
            path,
            field: "run time",
        })?;
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

/// A named thread of the stack under measurement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackThread {
    pub role: String,
    pub tid: i32,
}

impl StackThread {
    /// The calling thread, under `role`.
    #[must_use]
    pub fn current(role: &str) -> StackThread {
        StackThread {
            role: role.to_owned(),
            tid: gettid(),
        }
    }
}

/// One thread's share of a measured window.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ThreadDelta {
    pub role: String,
    pub wakeups: u64,
    pub wakeups_per_s: f64,
    pub involuntary_switches: u64,
    pub cpu_ms: f64,
}

/// Counters of a set of threads at the start of a window.
#[derive(Clone, Debug)]
pub struct Window {
    threads: Vec<(StackThread, ThreadSample)>,
    start_ns: u64,
}

impl Window {
    /// Samples every thread now.
    ///
    /// # Errors
    /// As [`sample`].
    pub fn open(threads: &[StackThread]) -> Result<Window, MeasureError> {
        let start_ns = crate::sys::monotonic_ns();
        let threads = threads
            .iter()
            .map(|t| sample(t.tid).map(|s| (t.clone(), s)))
            .collect::<Result<_, _>>()?;
        Ok(Window { threads, start_ns })
    }

    /// Samples every thread again; returns the per-thread differences and the window length.
    ///
    /// # Errors
    /// As [`sample`].
    pub fn close(&self) -> Result<(Vec<ThreadDelta>, u64), MeasureError> {
        let end_ns = crate::sys::monotonic_ns();
        let secs = (end_ns - self.start_ns) as f64 / NS_PER_S as f64;
        let mut out = Vec::new();
        for (t, before) in &self.threads {
            let after = sample(t.tid)?;
            let wakeups = after.voluntary - before.voluntary;
            out.push(ThreadDelta {
                role: t.role.clone(),
                wakeups,
                wakeups_per_s: if secs > 0.0 {
                    wakeups as f64 / secs
                } else {
                    0.0
                },
                involuntary_switches: after.involuntary - before.involuntary,
                cpu_ms: ns_to_ms(after.run_ns - before.run_ns),
            });
        }
        Ok((out, end_ns - self.start_ns))
    }
}

/// CPU time and wake-ups of the threads of one guiS thread category over a window.
#[derive(Clone, Copy, PartialEq, Debug, Default, serde::Serialize)]
pub struct CategoryUsage {
    pub cpu_ms: f64,
    /// Voluntary context switches: the times the category's threads blocked, so were woken.
    pub wakeups: u64,
    /// Threads of this category in the window, including those that exited.
    pub threads: u32,
}

impl From<ThreadSample> for CategoryUsage {
    /// One thread's use as the sample counts it: CPU time and voluntary switches (wake-ups).
    fn from(s: ThreadSample) -> CategoryUsage {
        CategoryUsage {
            cpu_ms: ns_to_ms(s.run_ns),
            wakeups: s.voluntary,
            threads: 1,
        }
    }
}

impl AddAssign for CategoryUsage {
    fn add_assign(&mut self, other: CategoryUsage) {
        self.cpu_ms += other.cpu_ms;
        self.wakeups += other.wakeups;
        self.threads += other.threads;
    }
}

/// Per-category usage over a window, one field per [`ThreadCategory`].
#[derive(Clone, Copy, PartialEq, Debug, Default, serde::Serialize)]
pub struct CategoryReport {
    pub event: CategoryUsage,
    pub drawing: CategoryUsage,
    pub foreground: CategoryUsage,
    pub background: CategoryUsage,
    /// Threads whose counters could no longer be read (exited, or their id now names a later
    /// thread). Each contributes what was measured up to its last successful read; one that was
    /// already gone when the window opened contributes nothing.
    pub threads_gone: u32,
    pub window_ns: u64,
}

impl CategoryReport {
    #[must_use]
    pub fn get(&self, category: ThreadCategory) -> &CategoryUsage {
        match category {
            ThreadCategory::Event => &self.event,
            ThreadCategory::Drawing => &self.drawing,
            ThreadCategory::Foreground => &self.foreground,
            ThreadCategory::Background => &self.background,
        }
    }

    fn get_mut(&mut self, category: ThreadCategory) -> &mut CategoryUsage {
        match category {
            ThreadCategory::Event => &mut self.event,
            ThreadCategory::Drawing => &mut self.drawing,
            ThreadCategory::Foreground => &mut self.foreground,
            ThreadCategory::Background => &mut self.background,
        }
    }
}

#[derive(Clone, Debug)]
struct Tracked {
    category: ThreadCategory,
    pid: i32,
    tid: i32,
    /// Counters and start time at the window's opening; `None` if the thread was gone already.
    start: Option<(ThreadSample, u64)>,
    /// The latest successful read.
    last: Option<ThreadSample>,
    gone: bool,
}

impl Tracked {
    fn refresh(&mut self) {
        let Some((_, start_ticks)) = self.start else {
            return;
        };
        if self.gone {
            return;
        }
        match probe(&format!("/proc/{}/task/{}", self.pid, self.tid)) {
            // A zombie's counters are final but its directory may linger; count it gone now so
            // the report does not depend on when the kernel reaps it.
            Ok((s, ticks)) if ticks == start_ticks && !matches!(s.state, 'Z' | 'X') => {
                self.last = Some(s);
            }
            Ok((s, ticks)) if ticks == start_ticks => {
                self.last = Some(s);
                self.gone = true;
            }
            _ => self.gone = true,
        }
    }
}

/// Per-category accounting of the threads of GUI applications, read from the kernel: opened with
/// each thread's category, process and thread id, it reports per-category differences since.
#[derive(Clone, Debug)]
pub struct CategoryWindow {
    threads: Vec<Tracked>,
    start_ns: u64,
}

impl CategoryWindow {
    /// Samples every `(category, pid, tid)` now. A thread that cannot be read is counted as gone
    /// rather than refused: the caller's list may be a moment older than the thread's exit.
    #[must_use]
    pub fn open(threads: &[(ThreadCategory, i32, i32)]) -> CategoryWindow {
        let start_ns = crate::sys::monotonic_ns();
        let threads = threads
            .iter()
            .map(|&(category, pid, tid)| {
                let start = probe(&format!("/proc/{pid}/task/{tid}")).ok();
                Tracked {
                    category,
                    pid,
                    tid,
                    start,
                    last: start.map(|(s, _)| s),
                    gone: start.is_none(),
                }
            })
            .collect();
        CategoryWindow { threads, start_ns }
    }

    /// Reads every thread still present, keeping the latest sample, so that a thread about to
    /// exit (the caller knows when an app unregisters one) keeps what it used until now.
    pub fn refresh(&mut self) {
        for t in &mut self.threads {
            t.refresh();
        }
    }

    /// Refreshes, then sums each category's differences since the window opened.
    #[must_use]
    pub fn report(&mut self) -> CategoryReport {
        self.refresh();
        let mut out = CategoryReport {
            window_ns: crate::sys::monotonic_ns().saturating_sub(self.start_ns),
            ..CategoryReport::default()
        };
        for t in &self.threads {
            out.threads_gone += u32::from(t.gone);
            *out.get_mut(t.category) += match (t.start, t.last) {
                (Some((start, _)), Some(last)) => CategoryUsage::from(last.since(start)),
                // Gone before the window opened: counted, contributing nothing.
                _ => CategoryUsage {
                    threads: 1,
                    ..CategoryUsage::default()
                },
            };
        }
        out
    }
}

/// How often [`wait_asleep`] looks; the harness that waits is not the stack it measures.
const ASLEEP_POLL: Duration = Duration::from_millis(1);

/// How long a harness waits for the threads it measures to fall asleep before opening its window
/// anyway (a polling baseline may be caught running at any instant).
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(2);

/// Waits until every thread `(pid, tid)` is asleep in the kernel (state `S`), so a measurement
/// window opens on a quiet stack; gives up after `timeout`. Returns whether they all were. A
/// thread that cannot be read (gone) counts as not asleep.
pub fn wait_asleep(threads: &[(i32, i32)], timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if threads
            .iter()
            .all(|&(pid, tid)| sample_thread(pid, tid).is_ok_and(|s| s.state == 'S'))
        {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(ASLEEP_POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `/proc/PID/stat` line for command name `comm`, state `R` and start time 4242; the
    /// other numbers are the field numbers, so a miscount shows.
    fn stat_line(comm: &str) -> String {
        let tail: Vec<String> = (4..=52)
            .map(|n| {
                if n == 22 {
                    "4242".into()
                } else {
                    n.to_string()
                }
            })
            .collect();
        format!("1234 ({comm}) R {}\n", tail.join(" "))
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
        }
        // Truncated or malformed: nothing invented.
        assert_eq!(parse_stat(""), StatFields::default());
        assert_eq!(
            parse_stat("1234 (no close paren R 4 5"),
            StatFields::default()
        );
        let short = parse_stat("1234 (a) S 4 5 6");
        assert_eq!(short.state, Some('S'));
        assert_eq!(short.start_ticks, None);
        let bad = stat_line("a").replace(" 4242 ", " 42x2 ");
        assert_eq!(parse_stat(&bad).start_ticks, None);
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

    /// Spins until the kernel has charged the calling thread at least `ns` of CPU time: a fixed
    /// amount of work measured by the kernel's own counter.
    fn burn_cpu(ns: u64) {
        let tid = gettid();
        let start = sample(tid).unwrap().run_ns;
        let mut x = 0u64;
        while sample(tid).unwrap().run_ns < start + ns {
            for i in 0..10_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
        }
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

    #[test]
    fn category_window_sums_per_category_and_keeps_exited_threads() {
        const WORK_NS: u64 = 20_000_000;
        const ROUNDS: u64 = 5;
        let pid = std::process::id() as i32;
        let me = gettid();

        // Background: burns a fixed amount of CPU, then parks until told to finish.
        let (bg_tid_tx, bg_tid_rx) = std::sync::mpsc::channel();
        let (bg_go_tx, bg_go_rx) = std::sync::mpsc::channel::<()>();
        let (bg_done_tx, bg_done_rx) = std::sync::mpsc::channel::<()>();
        let (bg_end_tx, bg_end_rx) = std::sync::mpsc::channel::<()>();
        let bg = std::thread::spawn(move || {
            bg_tid_tx.send(gettid()).unwrap();
            bg_go_rx.recv().unwrap();
            burn_cpu(WORK_NS);
            bg_done_tx.send(()).unwrap();
            let _ = bg_end_rx.recv();
        });
        // Drawing: woken once per message.
        let (dr_tid_tx, dr_tid_rx) = std::sync::mpsc::channel();
        let (dr_tx, dr_rx) = std::sync::mpsc::channel::<()>();
        let (dr_ack_tx, dr_ack_rx) = std::sync::mpsc::channel::<()>();
        let dr = std::thread::spawn(move || {
            dr_tid_tx.send(gettid()).unwrap();
            while dr_rx.recv().is_ok() {
                dr_ack_tx.send(()).unwrap();
            }
        });
        // Event: burns CPU, then exits in the middle of the window.
        let (ev_tid_tx, ev_tid_rx) = std::sync::mpsc::channel();
        let (ev_go_tx, ev_go_rx) = std::sync::mpsc::channel::<()>();
        let (ev_done_tx, ev_done_rx) = std::sync::mpsc::channel::<()>();
        let (ev_exit_tx, ev_exit_rx) = std::sync::mpsc::channel::<()>();
        let ev = std::thread::spawn(move || {
            ev_tid_tx.send(gettid()).unwrap();
            ev_go_rx.recv().unwrap();
            burn_cpu(WORK_NS);
            ev_done_tx.send(()).unwrap();
            let _ = ev_exit_rx.recv();
        });
        let (bg_tid, dr_tid, ev_tid) = (
            bg_tid_rx.recv().unwrap(),
            dr_tid_rx.recv().unwrap(),
            ev_tid_rx.recv().unwrap(),
        );
        // Wait for every thread to block so the window starts at a block.
        for t in [bg_tid, dr_tid, ev_tid] {
            wait_until("thread blocks", || sample(t).is_ok_and(|s| s.state == 'S'));
        }

        let mut w = CategoryWindow::open(&[
            (ThreadCategory::Background, pid, bg_tid),
            (ThreadCategory::Drawing, pid, dr_tid),
            (ThreadCategory::Event, pid, ev_tid),
            // Already gone: an id no thread has (above the kernel's pid_max limit of 2^22).
            (ThreadCategory::Event, pid, 1 << 23),
            (ThreadCategory::Foreground, pid, me),
        ]);
        bg_go_tx.send(()).unwrap();
        ev_go_tx.send(()).unwrap();
        for _ in 0..ROUNDS {
            // Sent only once the thread sleeps, so each message wakes it (a receiver may spin
            // briefly before sleeping and catch a quick next message awake).
            wait_until("drawing thread blocks", || {
                sample(dr_tid).is_ok_and(|s| s.state == 'S')
            });
            dr_tx.send(()).unwrap();
            dr_ack_rx.recv().unwrap();
        }
        bg_done_rx.recv().unwrap();
        ev_done_rx.recv().unwrap();
        wait_until("event thread blocks", || {
            sample(ev_tid).is_ok_and(|s| s.state == 'S')
        });
        w.refresh();
        let before_exit = w.report();
        drop(ev_exit_tx);
        ev.join().unwrap();
        let dir = format!("/proc/self/task/{ev_tid}");
        wait_until("exited thread leaves /proc", || {
            !std::path::Path::new(&dir).exists()
        });
        wait_until("drawing thread blocks", || {
            sample(dr_tid).is_ok_and(|s| s.state == 'S')
        });
        let r = w.report();

        assert_eq!(r.threads_gone, 2, "{r:?}");
        assert_eq!(r.event.threads, 2);
        assert_eq!(r.drawing.threads, 1);
        assert_eq!(r.foreground.threads, 1);
        assert_eq!(r.background.threads, 1);
        // The exited thread keeps what its last read measured.
        assert_eq!(r.event.cpu_ms, before_exit.event.cpu_ms);
        assert_eq!(r.event.wakeups, before_exit.event.wakeups);
        assert!(r.event.cpu_ms >= ns_to_ms(WORK_NS), "{r:?}");
        assert!(r.background.cpu_ms >= ns_to_ms(WORK_NS), "{r:?}");
        // Woken once per message.
        assert!(r.drawing.wakeups >= ROUNDS, "{r:?}");
        let json = serde_json::to_value(r).unwrap();
        assert!(json["background"]["cpu_ms"].as_f64().unwrap() > 0.0);
        assert_eq!(json["threads_gone"], 2);

        drop(bg_end_tx);
        drop(dr_tx);
        bg.join().unwrap();
        dr.join().unwrap();
    }
}
