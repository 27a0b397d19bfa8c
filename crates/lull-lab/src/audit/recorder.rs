//! The extraction thread. Logging is the kernel's (tracepoints into the instance's per-CPU
//! buffers, overwrite-oldest); extraction is this thread: every interval it reads every CPU's
//! pages, decodes them into audit records, pushes them into the per-CPU rings (bounded,
//! overwrite-oldest, sequence-numbered) and writes the rings out to the log.

use std::fs::File;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use lull_audit::footprint::{footprint, lull_control_bytes, Footprint};
use lull_audit::log::LogSummary;
use lull_audit::tracefs::{CountPolicy, RecordBuilder};
use lull_audit::{AuditRecord, LogEncoder, LogHeader, PerCpuRings, ENTRY_SIZE};
use lull_os::sys::{self, monotonic_ns, thread_cpu_ns};
use lull_os::tracefs::{Instance, InstanceError, KernelBufferStats};
use serde::Serialize;

use super::AuditError;

/// Entries per CPU ring: seed 002's 35,000 (§2.1.4).
pub const DEFAULT_RING_ENTRIES: usize = 35_000;
/// Kernel buffer per CPU. At the ~70 bytes a sched_switch takes in the buffer this holds ~60,000
/// events, a second of a busy desktop's scheduling, so 1 s extraction loses nothing.
pub const DEFAULT_KERNEL_BUFFER_KB: u32 = 4096;
/// Default extraction interval: seed 002's SEC1.
pub const DEFAULT_EXTRACTION: Duration = Duration::from_secs(1);

/// When the recorder extracts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Extraction {
    /// Logging without extraction (seed 002's NoEx): events go into the kernel buffer and are
    /// never read.
    Never,
    /// Every interval.
    Every(Duration),
    /// Without delay between extractions (seed 002's CONT: its `cat` loop never waited); this
    /// thread reads in a busy loop.
    Continuous,
    /// As soon as the kernel reports data: `poll` on the buffers, which wake the reader once
    /// [`POLL_BUFFER_PERCENT`] of a CPU's buffer holds events (or at the latest every
    /// [`POLL_TIMEOUT_MS`]).
    Poll,
}

/// Buffer fill that wakes a polling reader. Not 0: with 0 every event wakes the reader, and the
/// reader's own wakeup and switches are events, so it would wake itself in a loop — the
/// cascade seed 002 §2.1.5 describes for kworker.
pub const POLL_BUFFER_PERCENT: u32 = 1;
/// Longest wait of a polling reader, so it also notices the end of the recording.
pub const POLL_TIMEOUT_MS: u32 = 100;

/// Recorder settings.
#[derive(Debug, Clone)]
pub struct RecorderConfig {
    pub ring_entries: usize,
    pub kernel_buffer_kb: u32,
    pub extraction: Extraction,
    /// Log switch-in and preempt records too (TLP, latency, export need them).
    pub log_switches: bool,
    /// Pin the extraction thread to this CPU.
    pub pin_cpu: Option<usize>,
    /// Nice value of the extraction thread (root may lower it).
    pub nice: Option<i32>,
    /// tracefs `trace_clock`: "mono" (CLOCK_MONOTONIC, comparable with user-space clock
    /// readings; the default) or any clock the kernel lists, e.g. "local".
    pub trace_clock: String,
}

impl Default for RecorderConfig {
    fn default() -> Self {
        RecorderConfig {
            ring_entries: DEFAULT_RING_ENTRIES,
            kernel_buffer_kb: DEFAULT_KERNEL_BUFFER_KB,
            extraction: Extraction::Every(DEFAULT_EXTRACTION),
            log_switches: true,
            pin_cpu: None,
            nice: None,
            trace_clock: lull_os::tracefs::DEFAULT_TRACE_CLOCK.to_owned(),
        }
    }
}

/// What a recording did.
#[derive(Debug, Clone, Serialize)]
pub struct RecordingSummary {
    pub records: u64,
    /// Raw tracepoint events decoded.
    pub raw_events: u64,
    pub extractions: u64,
    pub pages_read: u64,
    /// Pages that reported a loss without a count (counted as one lost event each).
    pub loss_uncounted_pages: u64,
    /// Pages the decoder rejected (their undecoded rest counted as one lost event each).
    pub corrupt_pages: u64,
    pub overwritten: u64,
    pub kernel_lost: u64,
    pub counted_tasks: u64,
    pub counted_events: u64,
    /// The kernel buffers' own statistics at the end.
    pub kernel: Vec<KernelBufferStats>,
    /// Events the kernel wrote into the instance's buffers.
    pub kernel_events_written: u64,
    pub cpus: u16,
    /// M = E × S × R + C of the user-space rings.
    pub footprint: Footprint,
    /// Kernel buffer bytes (buffer_size_kb × CPUs), outside the seed's formula.
    pub kernel_buffer_bytes: u64,
    /// Extraction thread CPU time (user + system).
    pub extraction_cpu_ns: u64,
}

/// A running recorder that writes its log into `W`.
#[derive(Debug)]
pub struct Recorder<W: Write + Send + 'static> {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(W, RecordingSummary), AuditError>>>,
}

/// Pins the calling thread (or process, for a forked child) to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> std::io::Result<()> {
    let mut set = sys::CpuSet::empty();
    set.insert(cpu);
    sys::sched_setaffinity(sys::gettid(), &set)
}

/// The calling thread's CPU affinity, to restore after [`pin_to_cpu`].
#[derive(Clone, Copy)]
pub struct Affinity(sys::CpuSet);

impl std::fmt::Debug for Affinity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Affinity")
    }
}

impl Affinity {
    /// The calling thread's affinity now.
    pub fn current() -> std::io::Result<Affinity> {
        sys::sched_getaffinity(sys::gettid()).map(Affinity)
    }

    /// Applies it to the calling thread.
    pub fn restore(&self) -> std::io::Result<()> {
        sys::sched_setaffinity(sys::gettid(), &self.0)
    }
}

/// The process id of a thread, from `/proc/TID/status` (`None` once it has exited).
fn resolve_tgid(tid: u32) -> Option<u32> {
    let mut s = String::new();
    File::open(format!("/proc/{tid}/status"))
        .ok()?
        .read_to_string(&mut s)
        .ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

struct Extractor<W: Write> {
    inst: Instance,
    fds: Vec<File>,
    builder: RecordBuilder,
    rings: PerCpuRings,
    encoder: Option<LogEncoder>,
    sink: W,
    buf: Vec<u8>,
    page: Vec<u8>,
    batch: Vec<AuditRecord>,
    records: u64,
    extractions: u64,
    pages_read: u64,
    loss_uncounted_pages: u64,
    corrupt_pages: u64,
}

impl<W: Write> Extractor<W> {
    /// Reads every available page of every CPU into the rings.
    fn read_kernel(&mut self) -> Result<(), AuditError> {
        for cpu in 0..self.fds.len() {
            loop {
                let n = match self.fds[cpu].read(&mut self.page) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        return Err(AuditError::Tracefs(InstanceError::Io {
                            path: format!("per_cpu/cpu{cpu}/trace_pipe_raw"),
                            source: e,
                        }))
                    }
                };
                self.pages_read += 1;
                let ring_cpu = cpu as u16;
                let (builder, rings) = (&mut self.builder, &mut self.rings);
                let layout = self.inst.layout();
                let mut resolve = resolve_tgid;
                let decoded = layout.decode_page(&self.page[..n], |ts, ev| {
                    builder.on_event(ring_cpu, ts, ev, &mut resolve, &mut |r| {
                        if let Some(ring) = rings.ring_mut(usize::from(r.ring)) {
                            ring.push(r);
                        }
                    });
                });
                let info = match decoded {
                    Ok(info) => info,
                    Err(_) => {
                        // The events before the damage were delivered; the rest of the page
                        // is counted as one lost event so the gap shows.
                        self.corrupt_pages += 1;
                        if let Some(ring) = self.rings.ring_mut(cpu) {
                            ring.note_lost(1);
                        }
                        continue;
                    }
                };
                if info.loss.missed {
                    // The loss happened before this page's events; it is recorded after the
                    // ring's current entries, which the extraction order keeps apart only by
                    // sequence number — the gap is what readers see.
                    let lost = info.loss.count.unwrap_or_else(|| {
                        self.loss_uncounted_pages += 1;
                        1
                    });
                    if let Some(ring) = self.rings.ring_mut(cpu) {
                        ring.note_lost(lost);
                    }
                }
            }
        }
        Ok(())
    }

    /// Blocks until a buffer reports data (or the poll timeout passes).
    fn wait_for_data(&self) {
        use std::os::fd::AsRawFd;
        let fds: Vec<_> = self.fds.iter().map(|f| f.as_raw_fd()).collect();
        let mut ready = vec![false; fds.len()];
        let _ = sys::poll_readable(&fds, Some(POLL_TIMEOUT_MS), &mut ready);
    }

    /// Moves the rings' entries to the log.
    fn write_out(&mut self) -> Result<(), AuditError> {
        self.batch.clear();
        self.rings.drain_into(&mut self.batch);
        if let Some(enc) = self.encoder.as_mut() {
            for r in &self.batch {
                enc.record(r, &mut self.buf);
            }
        }
        self.records += self.batch.len() as u64;
        self.sink.write_all(&self.buf).map_err(AuditError::Write)?;
        self.buf.clear();
        self.extractions += 1;
        Ok(())
    }
}

impl<W: Write + Send + 'static> Recorder<W> {
    /// Creates the tracefs instance, starts tracing and the extraction thread.
    pub fn start(config: RecorderConfig, sink: W) -> Result<Recorder<W>, AuditError> {
        let percent = (config.extraction == Extraction::Poll).then_some(POLL_BUFFER_PERCENT);
        let inst = Instance::create(config.kernel_buffer_kb, &config.trace_clock, percent)?;
        let cpus = inst.cpus();
        let fds = (0..cpus)
            .map(|c| inst.open_raw(c))
            .collect::<Result<Vec<_>, _>>()?;
        let policy = CountPolicy {
            own_tgid: Some(std::process::id()),
            kernel_workers: true,
            ignore_comms: Vec::new(),
        };
        let builder = RecordBuilder::new(cpus as u16, policy, config.log_switches);
        let start_ns = monotonic_ns();
        let mut buf = Vec::with_capacity(1 << 16);
        let header = LogHeader {
            rings: cpus as u16,
            ring_capacity: config.ring_entries as u32,
            start_ns,
        };
        let encoder = LogEncoder::new(header, &mut buf);
        let page = vec![0u8; inst.page_size()];
        let ex = Extractor {
            inst,
            fds,
            builder,
            rings: PerCpuRings::new(cpus, config.ring_entries),
            encoder: Some(encoder),
            sink,
            buf,
            page,
            batch: Vec::new(),
            records: 0,
            extractions: 0,
            pages_read: 0,
            loss_uncounted_pages: 0,
            corrupt_pages: 0,
        };
        ex.inst.set_tracing(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("lull-audit".into())
            .spawn(move || run(ex, config, stop2))
            .map_err(|e| {
                AuditError::Experiment(format!("cannot start the extraction thread: {e}"))
            })?;
        Ok(Recorder {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops tracing, extracts what is left (unless extraction is `Never`), finishes the log and
    /// returns the sink.
    pub fn stop(mut self) -> Result<(W, RecordingSummary), AuditError> {
        self.stop.store(true, Ordering::Release);
        let t = self.thread.take().ok_or(AuditError::ThreadPanicked)?;
        t.thread().unpark();
        t.join().map_err(|_| AuditError::ThreadPanicked)?
    }
}

impl<W: Write + Send + 'static> Drop for Recorder<W> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

fn run<W: Write>(
    mut ex: Extractor<W>,
    config: RecorderConfig,
    stop: Arc<AtomicBool>,
) -> Result<(W, RecordingSummary), AuditError> {
    if let Some(cpu) = config.pin_cpu {
        pin_to_cpu(cpu).map_err(|e| {
            AuditError::Experiment(format!("pinning the extraction thread to CPU {cpu}: {e}"))
        })?;
    }
    if let Some(n) = config.nice {
        if let Err(e) = sys::set_thread_nice(sys::gettid(), n) {
            return Err(AuditError::Experiment(format!(
                "renicing the extraction thread to {n}: {e}"
            )));
        }
    }
    let cpu0 = thread_cpu_ns();
    loop {
        let stopping = stop.load(Ordering::Acquire);
        if stopping {
            ex.inst.set_tracing(false)?;
        }
        if config.extraction != Extraction::Never {
            ex.read_kernel()?;
            ex.write_out()?;
        }
        if stopping {
            break;
        }
        match config.extraction {
            Extraction::Every(d) => std::thread::park_timeout(d),
            Extraction::Never => std::thread::park(),
            Extraction::Continuous => {}
            Extraction::Poll => ex.wait_for_data(),
        }
    }
    let extraction_cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
    let kernel = ex.inst.stats();
    let (counted, counted_overflow_events) = ex.builder.counted();
    let summary = LogSummary {
        rings: ex.rings.counters(),
        counted,
        counted_overflow_events,
    };
    if let Some(enc) = ex.encoder.take() {
        enc.finish(&summary, &mut ex.buf)
            .map_err(|e| AuditError::Experiment(e.to_string()))?;
    }
    ex.sink.write_all(&ex.buf).map_err(AuditError::Write)?;
    ex.sink.flush().map_err(AuditError::Write)?;
    let cpus = ex.rings.cpus() as u16;
    let rs = ex.rings.counters();
    let out = RecordingSummary {
        records: ex.records,
        raw_events: ex.builder.raw_events(),
        extractions: ex.extractions,
        pages_read: ex.pages_read,
        loss_uncounted_pages: ex.loss_uncounted_pages,
        corrupt_pages: ex.corrupt_pages,
        overwritten: rs.iter().map(|c| c.overwritten).sum(),
        kernel_lost: rs.iter().map(|c| c.kernel_lost).sum(),
        counted_tasks: summary.counted.len() as u64,
        counted_events: summary.counted.iter().map(|c| c.events).sum::<u64>()
            + summary.counted_overflow_events,
        kernel_events_written: kernel.iter().map(KernelBufferStats::written).sum(),
        kernel,
        cpus,
        footprint: footprint(
            config.ring_entries as u64,
            ENTRY_SIZE as u64,
            u64::from(cpus),
            lull_control_bytes(u64::from(cpus)),
        ),
        kernel_buffer_bytes: u64::from(config.kernel_buffer_kb) * 1024 * u64::from(cpus),
        extraction_cpu_ns,
    };
    drop(ex.fds);
    Ok((ex.sink, out))
}

/// Records for `duration` into `sink` (the `lull audit record` command).
pub fn record_for<W: Write + Send + 'static>(
    config: RecorderConfig,
    duration: Duration,
    sink: W,
) -> Result<(W, RecordingSummary), AuditError> {
    let rec = Recorder::start(config, sink)?;
    std::thread::sleep(duration);
    rec.stop()
}
