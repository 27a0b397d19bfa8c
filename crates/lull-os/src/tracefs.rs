//! A private tracefs instance (`instances/lull-audit-PID-N`) with the scheduler tracepoints the
//! recorder needs. A private instance leaves the global tracer and other users of tracefs alone;
//! it is removed when dropped.

use std::fs::{self, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use lull_audit::tracefs::{SchedFormatTexts, SchedLayout};

/// Why tracefs or the instance cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum InstanceError {
    #[error("tracefs unavailable: {0}")]
    Unavailable(String),
    #[error(
        "recording needs root (tracefs instances and scheduler tracepoints); running as uid {0}"
    )]
    NotRoot(u32),
    #[error("tracefs {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("tracefs format: {0}")]
    Format(#[from] lull_audit::tracefs::TracefsError),
}

/// Where tracefs is usually mounted, newest first.
const TRACEFS_MOUNTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
/// The scheduler tracepoints the recorder enables.
pub const EVENTS: [&str; 5] = [
    "sched_switch",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_process_exit",
    "sched_stat_runtime",
];
/// `trace_clock` of the instance: CLOCK_MONOTONIC, so event times compare with the recorder's and
/// the benchmarks' own clock readings.
pub const DEFAULT_TRACE_CLOCK: &str = "mono";

static INSTANCE_COUNTER: AtomicU32 = AtomicU32::new(0);

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> InstanceError + '_ {
    move |source| InstanceError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn write_file(path: &Path, value: &str) -> Result<(), InstanceError> {
    fs::write(path, value).map_err(io_err(path))
}

fn read_text(path: &Path) -> Result<String, InstanceError> {
    fs::read_to_string(path).map_err(io_err(path))
}

/// The effective user id.
pub fn euid() -> u32 {
    crate::sys::geteuid()
}

/// Finds tracefs, mounting it at `/sys/kernel/tracing` when it is not mounted (root only).
pub fn tracefs_root() -> Result<PathBuf, InstanceError> {
    for m in TRACEFS_MOUNTS {
        let p = Path::new(m);
        if p.join("events/sched/sched_switch/format").exists() {
            return Ok(p.to_path_buf());
        }
    }
    if euid() != 0 {
        return Err(InstanceError::NotRoot(euid()));
    }
    let target = Path::new(TRACEFS_MOUNTS[0]);
    if !target.is_dir() {
        return Err(InstanceError::Unavailable(format!(
            "{} does not exist (kernel without tracefs?)",
            target.display()
        )));
    }
    let mounted = rustix::mount::mount(
        c"nodev",
        target,
        c"tracefs",
        rustix::mount::MountFlags::empty(),
        None,
    );
    if let Err(e) = mounted {
        return Err(InstanceError::Unavailable(format!(
            "mount -t tracefs failed: {}",
            std::io::Error::from(e)
        )));
    }
    if target.join("events/sched/sched_switch/format").exists() {
        Ok(target.to_path_buf())
    } else {
        Err(InstanceError::Unavailable(
            "tracefs mounted but has no sched_switch event".into(),
        ))
    }
}

/// Checks that recording can work here, with the reason when it cannot.
pub fn available() -> Result<(), InstanceError> {
    if euid() != 0 {
        return Err(InstanceError::NotRoot(euid()));
    }
    tracefs_root().map(|_| ())
}

/// Number of CPUs the kernel may run tasks on (possible CPUs with a tracefs buffer).
pub fn cpu_count(root: &Path) -> usize {
    let mut n = 0;
    while root.join(format!("per_cpu/cpu{n}")).exists() {
        n += 1;
    }
    n.max(1)
}

/// Per-CPU statistics of the kernel buffer (`per_cpu/cpuN/stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct KernelBufferStats {
    /// Events in the buffer now.
    pub entries: u64,
    /// Events overwritten before anyone read them.
    pub overrun: u64,
    /// Events read out.
    pub read_events: u64,
    /// Events the writer had to drop.
    pub dropped_events: u64,
}

impl KernelBufferStats {
    /// Every event the kernel wrote into this buffer.
    pub fn written(&self) -> u64 {
        self.entries + self.overrun + self.read_events
    }
}

fn parse_stats(text: &str) -> KernelBufferStats {
    let mut s = KernelBufferStats::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v: u64 = v.trim().parse().unwrap_or(0);
        match k.trim() {
            "entries" => s.entries = v,
            "overrun" => s.overrun = v,
            "read events" => s.read_events = v,
            "dropped events" => s.dropped_events = v,
            _ => {}
        }
    }
    s
}

/// A tracefs instance with the scheduler events on.
#[derive(Debug)]
pub struct Instance {
    dir: PathBuf,
    cpus: usize,
    layout: SchedLayout,
    page_size: usize,
}

impl Instance {
    /// Creates the instance with `buffer_kb` of kernel buffer per CPU and enables the events.
    /// `log_switches = false` still enables sched_switch (blocking is a switch-out).
    /// `buffer_percent`: the fill that wakes a polling reader (tracefs default when `None`).
    pub fn create(
        buffer_kb: u32,
        trace_clock: &str,
        buffer_percent: Option<u32>,
    ) -> Result<Instance, InstanceError> {
        let root = tracefs_root()?;
        let n = INSTANCE_COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("instances/lull-audit-{}-{n}", std::process::id()));
        if dir.exists() {
            let _ = fs::remove_dir(&dir);
        }
        fs::create_dir(&dir).map_err(io_err(&dir))?;
        let inst_cpus = cpu_count(&dir);
        let fmt = |e: &str| read_text(&root.join(format!("events/sched/{e}/format")));
        let runtime = fmt("sched_stat_runtime").ok();
        let (sw, wk, wkn, ex) = (
            fmt("sched_switch")?,
            fmt("sched_wakeup")?,
            fmt("sched_wakeup_new")?,
            fmt("sched_process_exit")?,
        );
        let layout = SchedLayout::parse(SchedFormatTexts {
            sched_switch: &sw,
            sched_wakeup: &wk,
            sched_wakeup_new: &wkn,
            sched_process_exit: &ex,
            sched_stat_runtime: runtime.as_deref(),
        })?;
        let page_size = read_text(&root.join("buffer_subbuf_size_kb"))
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .map_or(4096, |kb| kb * 1024);
        let inst = Instance {
            dir,
            cpus: inst_cpus,
            layout,
            page_size,
        };
        write_file(&inst.dir.join("tracing_on"), "0")?;
        write_file(&inst.dir.join("trace_clock"), trace_clock)?;
        if let Some(p) = buffer_percent {
            write_file(&inst.dir.join("buffer_percent"), &p.to_string())?;
        }
        write_file(&inst.dir.join("buffer_size_kb"), &buffer_kb.to_string())?;
        for e in EVENTS {
            let p = inst.dir.join(format!("events/sched/{e}/enable"));
            if p.exists() {
                write_file(&p, "1")?;
            }
        }
        Ok(inst)
    }

    pub fn cpus(&self) -> usize {
        self.cpus
    }

    pub fn layout(&self) -> &SchedLayout {
        &self.layout
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    pub fn set_tracing(&self, on: bool) -> Result<(), InstanceError> {
        write_file(&self.dir.join("tracing_on"), if on { "1" } else { "0" })
    }

    /// Opens `per_cpu/cpuN/trace_pipe_raw` for non-blocking page reads.
    pub fn open_raw(&self, cpu: usize) -> Result<File, InstanceError> {
        let p = self.dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&p)
            .map_err(io_err(&p))
    }

    /// Statistics of every CPU's kernel buffer.
    pub fn stats(&self) -> Vec<KernelBufferStats> {
        (0..self.cpus)
            .map(|c| {
                let mut s = String::new();
                let _ = File::open(self.dir.join(format!("per_cpu/cpu{c}/stats")))
                    .and_then(|mut f| f.read_to_string(&mut s));
                parse_stats(&s)
            })
            .collect()
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = fs::write(self.dir.join("tracing_on"), "0");
        for e in EVENTS {
            let _ = fs::write(self.dir.join(format!("events/sched/{e}/enable")), "0");
        }
        let _ = fs::remove_dir(&self.dir);
    }
}

/// A private tracefs instance recording any events (`group/name`, e.g. `timer/hrtimer_start`)
/// into its buffer, read back as ftrace text once tracing stops. For short recordings whose
/// analysis needs events beyond the recorder's (`lull validate`'s timer path); removed when
/// dropped.
#[derive(Debug)]
pub struct TextTrace {
    dir: PathBuf,
    events: Vec<String>,
}

impl TextTrace {
    /// Creates the instance with `buffer_kb` per CPU, `trace_clock` mono, and `events` enabled
    /// (tracing off until [`TextTrace::set_tracing`]).
    ///
    /// # Errors
    /// Not root, no tracefs, or an event this kernel lacks.
    pub fn create(events: &[&str], buffer_kb: u32) -> Result<TextTrace, InstanceError> {
        let root = tracefs_root()?;
        let n = INSTANCE_COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("instances/lull-text-{}-{n}", std::process::id()));
        if dir.exists() {
            let _ = fs::remove_dir(&dir);
        }
        fs::create_dir(&dir).map_err(io_err(&dir))?;
        let t = TextTrace {
            dir,
            events: Vec::new(),
        };
        write_file(&t.dir.join("tracing_on"), "0")?;
        write_file(&t.dir.join("trace_clock"), DEFAULT_TRACE_CLOCK)?;
        write_file(&t.dir.join("buffer_size_kb"), &buffer_kb.to_string())?;
        let mut t = t;
        for e in events {
            let p = t.dir.join(format!("events/{e}/enable"));
            if !p.exists() {
                return Err(InstanceError::Unavailable(format!(
                    "this kernel has no trace event {e}"
                )));
            }
            write_file(&p, "1")?;
            t.events.push((*e).to_owned());
        }
        Ok(t)
    }

    pub fn set_tracing(&self, on: bool) -> Result<(), InstanceError> {
        write_file(&self.dir.join("tracing_on"), if on { "1" } else { "0" })
    }

    /// The buffer as ftrace text (the instance's `trace` file).
    ///
    /// # Errors
    /// The file cannot be read.
    pub fn text(&self) -> Result<String, InstanceError> {
        read_text(&self.dir.join("trace"))
    }

    /// Events the kernel overwrote or dropped, over every CPU.
    pub fn lost(&self) -> u64 {
        let mut lost = 0;
        let mut c = 0;
        while let Ok(text) = fs::read_to_string(self.dir.join(format!("per_cpu/cpu{c}/stats"))) {
            let s = parse_stats(&text);
            lost += s.overrun + s.dropped_events;
            c += 1;
        }
        lost
    }
}

impl Drop for TextTrace {
    fn drop(&mut self) {
        let _ = fs::write(self.dir.join("tracing_on"), "0");
        for e in &self.events {
            let _ = fs::write(self.dir.join(format!("events/{e}/enable")), "0");
        }
        let _ = fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_buffer_stats() {
        let s = parse_stats("entries: 5\noverrun: 2\ncommit overrun: 0\nbytes: 100\nread events: 7\ndropped events: 1\n");
        assert_eq!(
            s,
            KernelBufferStats {
                entries: 5,
                overrun: 2,
                read_events: 7,
                dropped_events: 1
            }
        );
        assert_eq!(s.written(), 14);
    }
}
