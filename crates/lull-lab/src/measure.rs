//! Wake-ups and CPU time of threads over a measurement window, read from the kernel through
//! [`lull_os::procfs`].
//!
//! [`Window`] measures named threads of this process (the stack under test); [`CategoryWindow`]
//! applies the same counters to the threads of GUI applications in any process
//! (`/proc/PID/task/TID`) and sums them per guiS thread category. [`wait_asleep`] lets a harness
//! open its window on a quiet stack.

use std::ops::AddAssign;
use std::time::{Duration, Instant};

use lull_model::time::{ns_to_ms, NS_PER_S};
use lull_model::ThreadCategory;
use lull_os::procfs::{probe, sample, sample_thread, MeasureError, ThreadSample};
use lull_os::sys::gettid;

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
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
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
        let start_ns = lull_os::sys::monotonic_ns();
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
        let end_ns = lull_os::sys::monotonic_ns();
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
        let start_ns = lull_os::sys::monotonic_ns();
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
            window_ns: lull_os::sys::monotonic_ns().saturating_sub(self.start_ns),
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
    use lulld::test_support::wait_until;

    use super::*;

    /// A thread that burns `work_ns` of CPU once told to `go`, says it is `done`, then parks
    /// until [`Burner::finish`].
    struct Burner {
        tid: i32,
        go: std::sync::mpsc::Sender<()>,
        done: std::sync::mpsc::Receiver<()>,
        end: std::sync::mpsc::Sender<()>,
        thread: std::thread::JoinHandle<()>,
    }

    impl Burner {
        /// Starts the thread and waits for its id.
        fn spawn(work_ns: u64) -> Burner {
            let (tid_tx, tid_rx) = std::sync::mpsc::channel();
            let (go, go_rx) = std::sync::mpsc::channel::<()>();
            let (done_tx, done) = std::sync::mpsc::channel::<()>();
            let (end, end_rx) = std::sync::mpsc::channel::<()>();
            let thread = std::thread::spawn(move || {
                tid_tx.send(gettid()).unwrap();
                go_rx.recv().unwrap();
                burn_cpu(work_ns);
                done_tx.send(()).unwrap();
                let _ = end_rx.recv();
            });
            Burner {
                tid: tid_rx.recv().unwrap(),
                go,
                done,
                end,
                thread,
            }
        }

        /// Lets the thread exit and joins it.
        fn finish(self) {
            drop(self.end);
            self.thread.join().unwrap();
        }
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

    #[test]
    fn category_window_sums_per_category_and_keeps_exited_threads() {
        const WORK_NS: u64 = 20_000_000;
        const ROUNDS: u64 = 5;
        let pid = std::process::id() as i32;
        let me = gettid();

        // Background: burns a fixed amount of CPU, then parks until told to finish.
        let bg = Burner::spawn(WORK_NS);
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
        let ev = Burner::spawn(WORK_NS);
        let (bg_tid, dr_tid, ev_tid) = (bg.tid, dr_tid_rx.recv().unwrap(), ev.tid);
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
        bg.go.send(()).unwrap();
        ev.go.send(()).unwrap();
        for _ in 0..ROUNDS {
            // Sent only once the thread sleeps, so each message wakes it (a receiver may spin
            // briefly before sleeping and catch a quick next message awake).
            wait_until("drawing thread blocks", || {
                sample(dr_tid).is_ok_and(|s| s.state == 'S')
            });
            dr_tx.send(()).unwrap();
            dr_ack_rx.recv().unwrap();
        }
        bg.done.recv().unwrap();
        ev.done.recv().unwrap();
        wait_until("event thread blocks", || {
            sample(ev_tid).is_ok_and(|s| s.state == 'S')
        });
        w.refresh();
        let before_exit = w.report();
        ev.finish();
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

        bg.finish();
        drop(dr_tx);
        dr.join().unwrap();
    }
}
