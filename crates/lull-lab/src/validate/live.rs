//! One rt-app workload run on the real kernel: its logs and the kernel's own CPU-time counters of
//! every worker thread.
//!
//! [`run_live`] writes the workload as rt-app JSON into a fresh temporary directory, runs rt-app
//! on it, finds the worker threads by name, reads their `sum_exec_runtime` (the first field of
//! `/proc/PID/task/TID/schedstat`) at the start and just before the end of the run, then reads
//! every thread's log. Nothing else should run meanwhile: the caller runs workloads one after
//! another, and the measurement is of the kernel sharing the CPUs among the workload's threads
//! only.
//!
//! rt-app names each worker after its task with `pthread_setname_np`, which refuses names over
//! 15 bytes: such a worker keeps the name it inherited from rt-app's main thread (the binary's
//! file name). The runner expects exactly that, and refuses a workload two of whose tasks would
//! show the same name.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use lull_os::procfs::{thread_names, thread_run_ns, MeasureError};
use lull_os::sys::monotonic_ns;
use lull_workload::rtapp::{
    log::parse_log, Calibration, GlobalOverrides, LogError, PeriodRecord, RtApp, ThreadName,
    ThreadSummary,
};

/// rt-app is not installed (or not on `PATH`).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error(
    "rt-app not found on PATH: install the Debian package `rt-app` \
     (scripts/debian-packages.txt lists it)"
)]
pub struct RtAppMissing;

/// The calibration (ns per loop) rt-app is told by default (the loop probe's too): a round figure near what rt-app's
/// own calibration reports on current x86 cores, so a `run` of 100 ms is a few million loops.
/// Any value works: [`super::machine::measure_loop_ns`] divides it out.
pub const LOOP_PROBE_CALIBRATION_NS: u32 = 20;

/// How often the runner looks for the worker threads: they appear within a few milliseconds of
/// each other, and the first sample should follow them closely.
const THREAD_POLL: Duration = Duration::from_millis(1);
/// How long rt-app may take to create every worker: it parses the file and opens the logs first,
/// which takes milliseconds; seconds mean something is wrong.
const THREADS_TIMEOUT: Duration = Duration::from_secs(5);
/// The late sample is taken this long before rt-app's stop (its start + duration), so it lands
/// while every thread still runs, even if rt-app started its clock a little before the runner.
pub const SAMPLE_MARGIN: Duration = Duration::from_millis(100);
/// How long after its duration rt-app may take to exit: each thread finishes its current event
/// (a `run` of 100 ms stretches under contention) and rt-app then joins them and closes the logs.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// How often the runner checks whether rt-app has exited.
const EXIT_POLL: Duration = Duration::from_millis(5);
/// Lines of rt-app's standard error quoted in an error: its last messages say what went wrong.
const STDERR_TAIL_LINES: usize = 10;
/// The longest thread name Linux keeps (`TASK_COMM_LEN` − 1).
const COMM_MAX_BYTES: usize = 15;

/// How a workload is run.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LiveOptions {
    /// The rt-app binary; `None` searches `PATH`.
    pub rt_app: Option<PathBuf>,
    /// The ns per busy loop rt-app is told (`global.calibration`), so it skips its own 5 s
    /// calibration. A `run` of X µs is X × 1000 / `calibration_ns` loops, taking about
    /// X × loop_ns / `calibration_ns` µs on an idle CPU (the machine's `loop_ns`).
    pub calibration_ns: u32,
    /// Overrides the workload's `duration_s`.
    pub duration_s: Option<u32>,
}

impl Default for LiveOptions {
    fn default() -> LiveOptions {
        LiveOptions {
            rt_app: None,
            calibration_ns: LOOP_PROBE_CALIBRATION_NS,
            duration_s: None,
        }
    }
}

/// One worker thread of a live run.
#[derive(Clone, PartialEq, Debug)]
pub struct LiveThread {
    /// The thread in the workload's numbering (`<task>-<index>`).
    pub thread: ThreadName,
    /// Its kernel thread id.
    pub tid: i32,
    /// CPU time over the measurement window ÷ the window's wall time.
    pub cpu_share: f64,
    /// CPU time from the thread's start to the late sample, ms.
    pub cpu_ms: f64,
    /// Its log's periods.
    pub records: Vec<PeriodRecord>,
    /// [`ThreadSummary::of`] its records and `cpu_ms`.
    pub summary: ThreadSummary,
}

/// The result of [`run_live`].
#[derive(Clone, PartialEq, Debug)]
pub struct LiveRun {
    /// The duration rt-app ran for, s.
    pub duration_s: u32,
    /// The measurement window: from the first sample (every worker present) to the late one, ms.
    pub window_ms: f64,
    /// Every thread of [`RtApp::threads`], in that order.
    pub threads: Vec<LiveThread>,
}

impl LiveRun {
    /// Each thread's name and figures, as the comparison reads them.
    #[must_use]
    pub fn figures(&self) -> Vec<(String, super::figures::Figures)> {
        self.threads
            .iter()
            .map(|t| {
                (
                    t.thread.name.clone(),
                    super::figures::Figures::of(&t.summary, t.cpu_share),
                )
            })
            .collect()
    }
}

/// Why a live run failed.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error(transparent)]
    RtAppMissing(#[from] RtAppMissing),
    #[error("the workload has no duration (-1): a live run needs one to know when to sample")]
    NoDuration,
    #[error("the workload creates no thread")]
    NoThreads,
    #[error(
        "tasks {first:?} and {second:?} would both show as thread name {comm:?} (names over \
         {COMM_MAX_BYTES} bytes keep rt-app's own): rename one"
    )]
    AmbiguousNames {
        first: String,
        second: String,
        comm: String,
    },
    #[error("cannot create the run directory {path}: {source}")]
    TempDir { path: PathBuf, source: io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("cannot start {program}: {source}")]
    Spawn { program: PathBuf, source: io::Error },
    #[error("cannot wait for rt-app: {0}")]
    Wait(io::Error),
    #[error("rt-app exited early ({status}); its last messages:\n{stderr_tail}")]
    ExitedEarly { status: String, stderr_tail: String },
    #[error("rt-app failed ({status}); its last messages:\n{stderr_tail}")]
    Failed { status: String, stderr_tail: String },
    #[error(
        "rt-app's threads did not all appear within {waited_ms} ms: expected {expected}, \
         saw {seen}; its last messages:\n{stderr_tail}"
    )]
    ThreadsNeverAppeared {
        waited_ms: u64,
        expected: String,
        seen: String,
        stderr_tail: String,
    },
    #[error(
        "the threads appeared too late ({late_ms} ms after the start) to measure before the stop"
    )]
    NoWindow { late_ms: u64 },
    #[error(
        "thread {thread} could not be sampled (it must run until the duration ends: loop -1 or \
         enough loops): {source}"
    )]
    Sample {
        thread: String,
        source: MeasureError,
    },
    #[error("rt-app did not exit within {waited_ms} ms of its start; killed")]
    Timeout { waited_ms: u64 },
    #[error("log {path} missing: {source}")]
    LogMissing { path: PathBuf, source: io::Error },
    #[error("log {path} malformed: {source}")]
    LogMalformed { path: PathBuf, source: LogError },
    #[error("the {0} logged no period")]
    NoRecords(&'static str),
}

/// The name Linux shows for a worker of task `task`: the task name when rt-app could set it,
/// else `main_comm`, inherited from rt-app's main thread.
#[must_use]
pub fn worker_comm<'a>(task: &'a str, main_comm: &'a str) -> &'a str {
    if task.len() <= COMM_MAX_BYTES {
        task
    } else {
        main_comm
    }
}

/// The name Linux gives the main thread of a process started from `program`: the file name,
/// cut to 15 bytes.
fn program_comm(program: &Path) -> String {
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut end = name.len().min(COMM_MAX_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_owned()
}

/// Refuses a workload two of whose tasks would show the same thread name.
///
/// # Errors
/// [`LiveError::AmbiguousNames`].
pub fn check_names(workload: &RtApp, main_comm: &str) -> Result<(), LiveError> {
    let mut by_comm: BTreeMap<&str, &str> = BTreeMap::new();
    for t in workload.tasks.iter().filter(|t| t.instances > 0) {
        let comm = worker_comm(&t.name, main_comm);
        if let Some(first) = by_comm.insert(comm, &t.name) {
            return Err(LiveError::AmbiguousNames {
                first: first.to_owned(),
                second: t.name.clone(),
                comm: comm.to_owned(),
            });
        }
    }
    Ok(())
}

/// Matches the workload's threads to the workers seen (`(tid, comm)`, the main thread left out):
/// within one name, ascending thread ids follow the workload's numbering, as rt-app creates its
/// threads in order. `None` until every name has exactly its count of workers (a worker shows
/// rt-app's own name until it sets its task's). The names must have passed [`check_names`].
#[must_use]
pub fn map_threads(
    workload: &RtApp,
    main_comm: &str,
    workers: &[(i32, String)],
) -> Option<Vec<i32>> {
    let threads = workload.threads();
    if workers.len() != threads.len() {
        return None;
    }
    let mut by_comm: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (tid, comm) in workers {
        by_comm.entry(comm.as_str()).or_default().push(*tid);
    }
    for tids in by_comm.values_mut() {
        tids.sort_unstable();
        tids.reverse();
    }
    let mut out = Vec::with_capacity(threads.len());
    for t in &threads {
        let comm = worker_comm(&workload.tasks[t.task].name, main_comm);
        out.push(by_comm.get_mut(comm)?.pop()?);
    }
    by_comm.values().all(Vec::is_empty).then_some(out)
}

/// Every workload name with its expected count, and every name seen with its count, for errors.
fn describe_counts(
    workload: &RtApp,
    main_comm: &str,
    workers: &[(i32, String)],
) -> (String, String) {
    let mut expected: BTreeMap<&str, usize> = BTreeMap::new();
    for t in workload.threads() {
        *expected
            .entry(worker_comm(&workload.tasks[t.task].name, main_comm))
            .or_default() += 1;
    }
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, comm) in workers {
        *seen.entry(comm).or_default() += 1;
    }
    let fmt = |m: BTreeMap<&str, usize>| {
        m.iter()
            .map(|(k, v)| format!("{v} × {k:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    (fmt(expected), fmt(seen))
}

/// A fresh private directory under the system temp dir (unpredictable name, mode 0700),
/// removed with everything in it on drop.
#[derive(Debug)]
struct RunDir(lull_os::fileout::ScratchDir);

impl RunDir {
    fn create() -> Result<RunDir, LiveError> {
        lull_os::fileout::ScratchDir::new("lull-rtapp")
            .map(RunDir)
            .map_err(|source| LiveError::TempDir {
                path: std::env::temp_dir(),
                source,
            })
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

/// rt-app, killed on drop unless it has exited: no error path leaves it running.
#[derive(Debug)]
struct RtAppProcess(Child);

impl RtAppProcess {
    fn pid(&self) -> i32 {
        self.0.id() as i32
    }

    fn exited(&mut self) -> Result<Option<ExitStatus>, LiveError> {
        self.0.try_wait().map_err(LiveError::Wait)
    }
}

impl Drop for RtAppProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The last lines of rt-app's standard error.
fn stderr_tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..].join("\n")
}

fn sample_all(
    pid: i32,
    tids: &[i32],
    threads: &[ThreadName],
) -> Result<(u64, Vec<u64>), LiveError> {
    let at_ns = monotonic_ns();
    let cpu = tids
        .iter()
        .zip(threads)
        .map(|(&tid, t)| {
            thread_run_ns(pid, tid).map_err(|source| LiveError::Sample {
                thread: t.name.clone(),
                source,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok((at_ns, cpu))
}

/// Runs `workload` under rt-app and measures it; see the module docs. Blocks for the workload's
/// duration (plus rt-app's start and exit).
///
/// # Errors
/// A [`LiveError`] for anything that keeps the run from completing as described: rt-app missing
/// or failing, the threads not appearing, a log missing or malformed, rt-app not exiting.
pub fn run_live(workload: &RtApp, opts: &LiveOptions) -> Result<LiveRun, LiveError> {
    let duration_s = opts
        .duration_s
        .or(workload.duration_s)
        .ok_or(LiveError::NoDuration)?;
    let threads = workload.threads();
    if threads.is_empty() {
        return Err(LiveError::NoThreads);
    }
    let program = match &opts.rt_app {
        Some(p) => p.clone(),
        None => find_rt_app()?,
    };
    let main_comm = program_comm(&program);
    check_names(workload, &main_comm)?;

    let dir = RunDir::create()?;
    let basename = "run";
    let json_path = dir.path().join("workload.json");
    let json = workload.to_json(&GlobalOverrides {
        logdir: Some(dir.path().to_string_lossy().into_owned()),
        log_basename: Some(basename.to_owned()),
        calibration: Some(Calibration::NsPerLoop(opts.calibration_ns)),
        duration_s: Some(Some(duration_s)),
    });
    let write = |path: &Path, text: &str| {
        fs::write(path, text).map_err(|source| LiveError::Write {
            path: path.to_owned(),
            source,
        })
    };
    write(&json_path, &json)?;
    let open = |name: &str| {
        let path = dir.path().join(name);
        fs::File::create(&path).map_err(|source| LiveError::Write { path, source })
    };
    let (stdout, stderr) = (open("stdout.txt")?, open("stderr.txt")?);
    let stderr_path = dir.path().join("stderr.txt");

    let start = Instant::now();
    let mut child = RtAppProcess(
        Command::new(&program)
            .arg(&json_path)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|source| LiveError::Spawn {
                program: program.clone(),
                source,
            })?,
    );
    let pid = child.pid();

    // Every worker present, then the first sample at once.
    let tids = await_workers(&mut child, workload, &main_comm, start, &stderr_path)?;
    let (first_ns, first_cpu) = sample_all(pid, &tids, &threads)?;

    // The late sample, a margin before rt-app's stop (counted from the spawn, which precedes
    // rt-app's own start).
    let late_at = start + Duration::from_secs(u64::from(duration_s)).saturating_sub(SAMPLE_MARGIN);
    let now = Instant::now();
    if late_at <= now {
        return Err(LiveError::NoWindow {
            late_ms: start.elapsed().as_millis() as u64,
        });
    }
    std::thread::sleep(late_at - now);
    if let Some(status) = child.exited()? {
        return Err(LiveError::ExitedEarly {
            status: status.to_string(),
            stderr_tail: stderr_tail(&stderr_path),
        });
    }
    let (last_ns, last_cpu) = sample_all(pid, &tids, &threads)?;
    let window_ns = last_ns.saturating_sub(first_ns);

    // rt-app's exit, bounded.
    let deadline = start + Duration::from_secs(u64::from(duration_s)) + EXIT_GRACE;
    let status = loop {
        if let Some(status) = child.exited()? {
            break status;
        }
        if Instant::now() > deadline {
            drop(child);
            return Err(LiveError::Timeout {
                waited_ms: (deadline - start).as_millis() as u64,
            });
        }
        std::thread::sleep(EXIT_POLL);
    };
    if !status.success() {
        return Err(LiveError::Failed {
            status: status.to_string(),
            stderr_tail: stderr_tail(&stderr_path),
        });
    }

    let mut measured = Vec::with_capacity(threads.len());
    for (i, thread) in threads.into_iter().enumerate() {
        let log = dir.path().join(format!("{basename}-{}.log", thread.name));
        let log_text = fs::read_to_string(&log).map_err(|source| LiveError::LogMissing {
            path: log.clone(),
            source,
        })?;
        measured.push(Measured {
            thread,
            tid: tids[i],
            first_cpu_ns: first_cpu[i],
            last_cpu_ns: last_cpu[i],
            log,
            log_text,
        });
    }
    assemble(duration_s, window_ns, measured)
}

/// Waits for every worker of `workload` to appear under its name, and returns their ids in the
/// workload's thread order.
fn await_workers(
    child: &mut RtAppProcess,
    workload: &RtApp,
    main_comm: &str,
    start: Instant,
    stderr_path: &Path,
) -> Result<Vec<i32>, LiveError> {
    let pid = child.pid();
    loop {
        if let Some(status) = child.exited()? {
            return Err(LiveError::ExitedEarly {
                status: status.to_string(),
                stderr_tail: stderr_tail(stderr_path),
            });
        }
        let workers: Vec<(i32, String)> = thread_names(pid)
            .unwrap_or_default()
            .into_iter()
            .filter(|&(tid, _)| tid != pid)
            .collect();
        if let Some(tids) = map_threads(workload, main_comm, &workers) {
            return Ok(tids);
        }
        if start.elapsed() > THREADS_TIMEOUT {
            let (expected, seen) = describe_counts(workload, main_comm, &workers);
            return Err(LiveError::ThreadsNeverAppeared {
                waited_ms: THREADS_TIMEOUT.as_millis() as u64,
                expected,
                seen,
                stderr_tail: stderr_tail(stderr_path),
            });
        }
        std::thread::sleep(THREAD_POLL);
    }
}

/// What a run collected of one worker: its CPU time at the two samples and its log, unparsed.
#[derive(Clone, Debug)]
struct Measured {
    thread: ThreadName,
    tid: i32,
    first_cpu_ns: u64,
    last_cpu_ns: u64,
    /// Where the log was read from (named in a parse error).
    log: PathBuf,
    log_text: String,
}

/// The run from what was collected (pure): each worker's share of the `window_ns` between the
/// samples, its CPU time to the late sample and its log's periods.
///
/// # Errors
/// [`LiveError::LogMalformed`] for the first log that does not parse.
fn assemble(
    duration_s: u32,
    window_ns: u64,
    measured: Vec<Measured>,
) -> Result<LiveRun, LiveError> {
    let window_ns = window_ns.max(1);
    let threads = measured
        .into_iter()
        .map(|m| {
            let records = parse_log(&m.log_text).map_err(|source| LiveError::LogMalformed {
                path: m.log,
                source,
            })?;
            Ok(LiveThread {
                tid: m.tid,
                cpu_share: m.last_cpu_ns.saturating_sub(m.first_cpu_ns) as f64 / window_ns as f64,
                cpu_ms: m.last_cpu_ns as f64 / 1e6,
                summary: ThreadSummary::of(&records, m.last_cpu_ns),
                records,
                thread: m.thread,
            })
        })
        .collect::<Result<_, LiveError>>()?;
    Ok(LiveRun {
        duration_s,
        window_ms: window_ns as f64 / 1e6,
        threads,
    })
}

/// The `rt-app` binary on `PATH`.
///
/// # Errors
/// [`RtAppMissing`] when no `PATH` entry holds an executable `rt-app`.
pub fn find_rt_app() -> Result<PathBuf, RtAppMissing> {
    let path = std::env::var_os("PATH").ok_or(RtAppMissing)?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("rt-app"))
        .find(|p| is_executable(p))
        .ok_or(RtAppMissing)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_workload::rtapp::{Calibration, Event, TaskSpec};

    fn workload(tasks: &[(&str, u32)]) -> RtApp {
        RtApp {
            duration_s: Some(1),
            calibration: Calibration::NsPerLoop(20),
            tasks: tasks
                .iter()
                .map(|&(name, instances)| {
                    TaskSpec::endless(name, instances, vec![Event::Run { us: 1000 }])
                })
                .collect(),
        }
    }

    /// Two periods of a log rt-app wrote (`lull_workload::rtapp::log`'s format).
    const LOG: &str = "# Policy : SCHED_OTHER priority : 0
#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat
   0   105263     2290     4062      6555856098      6555860160            4515       1659       2000       8000         86
   0      100       14      100      6882244991      6882245092             161        -13         10        100          0
";

    fn measured(name: &str, tid: i32, first_cpu_ns: u64, last_cpu_ns: u64) -> Measured {
        Measured {
            thread: ThreadName {
                name: name.to_owned(),
                task: 0,
                index: 0,
            },
            tid,
            first_cpu_ns,
            last_cpu_ns,
            log: PathBuf::from(format!("run-{name}.log")),
            log_text: LOG.to_owned(),
        }
    }

    #[test]
    fn a_run_is_assembled_from_its_samples_and_logs() {
        // A 500 ms window: one worker ran 250 ms of it, the other 1 s in all but 50 ms in it.
        let run = assemble(
            3,
            500_000_000,
            vec![
                measured("hog-0", 11, 100_000_000, 350_000_000),
                measured("periodic-1", 12, 950_000_000, 1_000_000_000),
            ],
        )
        .unwrap();
        assert_eq!(run.duration_s, 3);
        assert_eq!(run.window_ms, 500.0);
        let shares: Vec<f64> = run.threads.iter().map(|t| t.cpu_share).collect();
        assert_eq!(shares, [0.5, 0.1]);
        assert_eq!(run.threads[1].cpu_ms, 1000.0);
        assert_eq!(run.threads[0].tid, 11);
        assert_eq!(run.threads[0].thread.name, "hog-0");
        assert_eq!(run.threads[0].records.len(), 2);
        assert_eq!(
            run.threads[0].summary,
            ThreadSummary::of(&run.threads[0].records, 350_000_000)
        );
    }

    #[test]
    fn a_malformed_log_is_named_and_an_empty_window_divides_by_one() {
        let mut bad = measured("hog-0", 11, 0, 0);
        bad.log_text.push_str("not a period\n");
        match assemble(1, 0, vec![measured("ok-0", 10, 0, 0), bad]) {
            Err(LiveError::LogMalformed { path, .. }) => {
                assert_eq!(path, PathBuf::from("run-hog-0.log"));
            }
            other => panic!("{other:?}"),
        }
        let run = assemble(1, 0, vec![measured("ok-0", 10, 0, 7)]).unwrap();
        assert_eq!(run.threads[0].cpu_share, 7.0);
    }

    fn seen(list: &[(i32, &str)]) -> Vec<(i32, String)> {
        list.iter().map(|&(t, c)| (t, c.to_owned())).collect()
    }

    #[test]
    fn threads_map_by_name_then_ascending_tid() {
        let w = workload(&[("periodic", 1), ("hog", 2)]);
        // Listed out of order: the mapping sorts within each name.
        let workers = seen(&[(103, "hog"), (101, "periodic"), (102, "hog")]);
        assert_eq!(
            map_threads(&w, "rt-app", &workers),
            Some(vec![101, 102, 103])
        );
        // Ids that do not follow the file order across names still map by name.
        let workers = seen(&[(90, "hog"), (101, "periodic"), (95, "hog")]);
        assert_eq!(map_threads(&w, "rt-app", &workers), Some(vec![101, 90, 95]));
    }

    #[test]
    fn threads_map_only_when_every_name_is_complete() {
        let w = workload(&[("periodic", 1), ("hog", 2)]);
        // A worker still under rt-app's name, one missing, one extra: not yet.
        for workers in [
            seen(&[(101, "periodic"), (102, "hog"), (103, "rt-app")]),
            seen(&[(101, "periodic"), (102, "hog")]),
            seen(&[(101, "periodic"), (102, "hog"), (103, "hog"), (104, "hog")]),
            seen(&[(101, "periodic"), (102, "hog"), (103, "other")]),
        ] {
            assert_eq!(map_threads(&w, "rt-app", &workers), None, "{workers:?}");
        }
        let (expected, seen) = describe_counts(&w, "rt-app", &seen(&[(1, "hog"), (2, "rt-app")]));
        assert_eq!(expected, "2 × \"hog\", 1 × \"periodic\"");
        assert_eq!(seen, "1 × \"hog\", 1 × \"rt-app\"");
    }

    #[test]
    fn long_names_keep_rt_apps_own() {
        let long = "a-very-long-task-name";
        let w = workload(&[(long, 1), ("short", 1), ("none", 0)]);
        assert_eq!(worker_comm(long, "rt-app"), "rt-app");
        assert_eq!(worker_comm("fifteen-bytes-x", "rt-app"), "fifteen-bytes-x");
        assert!(check_names(&w, "rt-app").is_ok());
        let workers = seen(&[(7, "rt-app"), (8, "short")]);
        assert_eq!(map_threads(&w, "rt-app", &workers), Some(vec![7, 8]));
        // Two long names, or a long one beside a task named like rt-app, cannot be told apart.
        for tasks in [
            [(long, 1), ("another-long-task-name", 1)],
            [(long, 1), ("rt-app", 1)],
        ] {
            let err = check_names(&workload(&tasks), "rt-app").unwrap_err();
            assert!(
                matches!(&err, LiveError::AmbiguousNames { comm, .. } if comm == "rt-app"),
                "{err}"
            );
        }
        // A task without instances creates no thread, so cannot clash.
        assert!(check_names(
            &workload(&[(long, 1), ("another-long-task-name", 0)]),
            "rt-app"
        )
        .is_ok());
    }

    #[test]
    fn program_comm_is_the_file_name_cut_to_fifteen_bytes() {
        assert_eq!(program_comm(Path::new("/usr/bin/rt-app")), "rt-app");
        assert_eq!(
            program_comm(Path::new("/opt/rt-app-with-a-long-name")),
            "rt-app-with-a-l"
        );
    }

    #[test]
    fn workloads_without_duration_or_threads_are_refused_before_running() {
        let opts = LiveOptions {
            rt_app: Some(PathBuf::from("/nonexistent/rt-app")),
            ..LiveOptions::default()
        };
        let mut w = workload(&[("a", 1)]);
        w.duration_s = None;
        assert!(matches!(run_live(&w, &opts), Err(LiveError::NoDuration)));
        let w = workload(&[("a", 0)]);
        assert!(matches!(run_live(&w, &opts), Err(LiveError::NoThreads)));
        let w = workload(&[("a", 1)]);
        let err = run_live(&w, &opts).unwrap_err();
        assert!(matches!(err, LiveError::Spawn { .. }), "{err}");
    }

    #[test]
    fn a_failing_rt_app_is_reported_with_its_last_messages() {
        use std::os::unix::fs::PermissionsExt;
        let bin = RunDir::create().unwrap();
        let fake = bin.path().join("rt-app");
        fs::write(&fake, "#!/bin/sh\necho 'cannot parse' >&2\nexit 3\n").unwrap();
        fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
        let opts = LiveOptions {
            rt_app: Some(fake),
            ..LiveOptions::default()
        };
        let err = run_live(&workload(&[("a", 1)]), &opts).unwrap_err();
        match &err {
            LiveError::ExitedEarly {
                status,
                stderr_tail,
            } => {
                assert!(status.contains('3'), "{status}");
                assert_eq!(stderr_tail, "cannot parse");
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn stderr_tail_keeps_the_last_lines() {
        let dir = RunDir::create().unwrap();
        let path = dir.path().join("stderr.txt");
        let text: String = (0..25).map(|i| format!("line {i}\n\n")).collect();
        fs::write(&path, text).unwrap();
        let tail = stderr_tail(&path);
        assert_eq!(tail.lines().count(), STDERR_TAIL_LINES);
        assert!(
            tail.starts_with("line 15") && tail.ends_with("line 24"),
            "{tail}"
        );
        assert_eq!(stderr_tail(&dir.path().join("absent")), "");
        let kept = dir.path().to_path_buf();
        drop(dir);
        assert!(!kept.exists(), "the run directory is removed on drop");
    }
}
