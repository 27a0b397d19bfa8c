//! The kernel's tracefs binary interface, read from bytes: event `format` files, the sub-buffer
//! pages of `per_cpu/cpuN/trace_pipe_raw`, and [`RecordBuilder`], which turns decoded scheduler
//! events into audit records.
//!
//! Page layout (`events/header_page` on 64-bit kernels): `timestamp` u64 at 0, `commit` (8 bytes)
//! at 8, event data from 16. The low 30 bits of `commit` are the bytes of data; bit 31
//! (`RB_MISSED_EVENTS`) says events were lost before this page, bit 30 (`RB_MISSED_STORED`) says
//! their count is stored as a u64 right after the data. Each event starts with a 32-bit word:
//! `type_len` (5 low bits) and `time_delta` (27 high bits), as `events/header_event` describes.

use std::collections::HashMap;

use serde::Serialize;
use thiserror::Error;

use crate::log::{CountedClass, CountedTask};
use crate::record::{
    AuditEventKind, AuditRecord, Comm, COMM_LEN, FLAG_EXITING, FLAG_NEW_TASK, FLAG_TGID_UNKNOWN,
    MAX_PRIO,
};

/// Bytes of a page header before the event data (64-bit kernels).
pub const PAGE_HEADER_SIZE: usize = 16;
const RB_MISSED_EVENTS: u64 = 1 << 31;
const RB_MISSED_STORED: u64 = 1 << 30;
const COMMIT_MASK: u64 = (1 << 30) - 1;
const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
/// Absolute time stamps carry 59 bits; the page's upper bits complete them (kernel
/// `rb_fix_abs_ts`).
const ABS_TS_MASK: u64 = (1 << 59) - 1;

/// `prev_state` bits of `sched_switch` (include/linux/sched.h): dead and zombie.
const TASK_DEAD_BITS: i64 = 0x10 | 0x20;
/// `TASK_REPORT_MAX`: set in `prev_state` when the switch was a preemption ("R+").
const TASK_REPORT_PREEMPTED: i64 = 0x100;

/// Why a `format` file or a page cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TracefsError {
    #[error("format file: {0}")]
    Format(String),
    #[error("event {event}: field {field} missing or of unexpected size")]
    Field {
        event: &'static str,
        field: &'static str,
    },
    #[error("page is {0} bytes, shorter than its 16-byte header")]
    PageShort(usize),
    #[error("page commit {commit} exceeds the page's {avail} data bytes")]
    Commit { commit: u64, avail: usize },
    #[error("event at offset {offset} runs past the committed data")]
    EventOverrun { offset: usize },
    #[error("event at offset {offset} is {len} bytes, too short for its fields")]
    EventShort { offset: usize, len: usize },
}

/// One field of an event format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldFormat {
    pub name: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
}

/// A parsed `events/<system>/<event>/format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    pub name: String,
    pub id: u16,
    pub fields: Vec<FieldFormat>,
}

impl EventFormat {
    /// Parses the text of a `format` file.
    pub fn parse(text: &str) -> Result<Self, TracefsError> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for line in text.lines() {
            let t = line.trim();
            if let Some(v) = t.strip_prefix("name:") {
                name = Some(v.trim().to_owned());
            } else if let Some(v) = t.strip_prefix("ID:") {
                id = Some(
                    v.trim()
                        .parse::<u16>()
                        .map_err(|_| TracefsError::Format(format!("bad ID {:?}", v.trim())))?,
                );
            } else if t.starts_with("field:") {
                fields.push(parse_field(t)?);
            }
        }
        let name = name.ok_or_else(|| TracefsError::Format("no name line".into()))?;
        let id = id.ok_or_else(|| TracefsError::Format("no ID line".into()))?;
        Ok(EventFormat { name, id, fields })
    }

    fn field(
        &self,
        event: &'static str,
        field: &'static str,
        sizes: &[usize],
    ) -> Result<(usize, usize), TracefsError> {
        self.fields
            .iter()
            .find(|f| f.name == field && sizes.contains(&f.size))
            .map(|f| (f.offset, f.size))
            .ok_or(TracefsError::Field { event, field })
    }
}

fn parse_field(line: &str) -> Result<FieldFormat, TracefsError> {
    // field:char prev_comm[16];	offset:8;	size:16;	signed:0;
    let bad = || TracefsError::Format(format!("bad field line {line:?}"));
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';') {
        let p = part.trim();
        if let Some(v) = p.strip_prefix("field:") {
            decl = Some(v.trim());
        } else if let Some(v) = p.strip_prefix("offset:") {
            offset = Some(v.trim().parse::<usize>().map_err(|_| bad())?);
        } else if let Some(v) = p.strip_prefix("size:") {
            size = Some(v.trim().parse::<usize>().map_err(|_| bad())?);
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let decl = decl.ok_or_else(bad)?;
    let last = decl.split_whitespace().last().ok_or_else(bad)?;
    let name = last.split('[').next().unwrap_or(last).to_owned();
    if name.is_empty() {
        return Err(bad());
    }
    Ok(FieldFormat {
        name,
        offset: offset.ok_or_else(bad)?,
        size: size.ok_or_else(bad)?,
        signed,
    })
}

type Off = (usize, usize);

/// Where the fields the recorder needs sit, resolved from the format files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedLayout {
    switch_id: u16,
    wakeup_id: u16,
    wakeup_new_id: u16,
    exit_id: u16,
    runtime_id: Option<u16>,
    sw_prev_comm: Off,
    sw_prev_pid: Off,
    sw_prev_prio: Off,
    sw_prev_state: Off,
    sw_next_comm: Off,
    sw_next_pid: Off,
    sw_next_prio: Off,
    wakeup: WakeupLayout,
    wakeup_new: WakeupLayout,
    ex_comm: Off,
    ex_pid: Off,
    ex_prio: Off,
    rt_pid: Off,
    rt_runtime: Off,
}

/// `sched_wakeup` and `sched_wakeup_new` share their fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WakeupLayout {
    comm: Off,
    pid: Off,
    prio: Off,
    target: Off,
}

impl WakeupLayout {
    fn parse(f: &EventFormat, event: &'static str) -> Result<Self, TracefsError> {
        Ok(WakeupLayout {
            comm: f.field(event, "comm", &[COMM_LEN])?,
            pid: f.field(event, "pid", &[4])?,
            prio: f.field(event, "prio", &[4])?,
            target: f.field(event, "target_cpu", &[4])?,
        })
    }
}

/// The format texts of the events the recorder enables.
#[derive(Debug, Clone, Copy)]
pub struct SchedFormatTexts<'a> {
    pub sched_switch: &'a str,
    pub sched_wakeup: &'a str,
    pub sched_wakeup_new: &'a str,
    pub sched_process_exit: &'a str,
    /// `None` when the kernel has no `sched_stat_runtime` (execution time then stays 0).
    pub sched_stat_runtime: Option<&'a str>,
}

impl SchedLayout {
    pub fn parse(t: SchedFormatTexts<'_>) -> Result<Self, TracefsError> {
        let sw = EventFormat::parse(t.sched_switch)?;
        let wk = EventFormat::parse(t.sched_wakeup)?;
        let wkn = EventFormat::parse(t.sched_wakeup_new)?;
        let ex = EventFormat::parse(t.sched_process_exit)?;
        let rt = t.sched_stat_runtime.map(EventFormat::parse).transpose()?;
        let c = [COMM_LEN];
        let i = [4];
        let (rt_pid, rt_runtime) = match &rt {
            Some(f) => (
                f.field("sched_stat_runtime", "pid", &i)?,
                f.field("sched_stat_runtime", "runtime", &[8])?,
            ),
            None => ((0, 4), (0, 8)),
        };
        Ok(SchedLayout {
            switch_id: sw.id,
            wakeup_id: wk.id,
            wakeup_new_id: wkn.id,
            exit_id: ex.id,
            runtime_id: rt.as_ref().map(|f| f.id),
            sw_prev_comm: sw.field("sched_switch", "prev_comm", &c)?,
            sw_prev_pid: sw.field("sched_switch", "prev_pid", &i)?,
            sw_prev_prio: sw.field("sched_switch", "prev_prio", &i)?,
            sw_prev_state: sw.field("sched_switch", "prev_state", &[4, 8])?,
            sw_next_comm: sw.field("sched_switch", "next_comm", &c)?,
            sw_next_pid: sw.field("sched_switch", "next_pid", &i)?,
            sw_next_prio: sw.field("sched_switch", "next_prio", &i)?,
            wakeup: WakeupLayout::parse(&wk, "sched_wakeup")?,
            wakeup_new: WakeupLayout::parse(&wkn, "sched_wakeup_new")?,
            ex_comm: ex.field("sched_process_exit", "comm", &c)?,
            ex_pid: ex.field("sched_process_exit", "pid", &i)?,
            ex_prio: ex.field("sched_process_exit", "prio", &i)?,
            rt_pid,
            rt_runtime,
        })
    }
}

/// A decoded scheduler event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedEvent {
    Switch {
        prev_comm: Comm,
        prev_pid: u32,
        prev_prio: i32,
        /// `prev_state`: 0 runnable; other bits as the kernel's task states.
        prev_state: i64,
        next_comm: Comm,
        next_pid: u32,
        next_prio: i32,
    },
    Wakeup {
        comm: Comm,
        pid: u32,
        prio: i32,
        target_cpu: u32,
        new: bool,
    },
    Exit {
        comm: Comm,
        pid: u32,
        prio: i32,
    },
    Runtime {
        pid: u32,
        runtime_ns: u64,
    },
}

impl SchedEvent {
    /// `prev_state` as the sched_switch text shows it ("R", "R+", "S", "D", …).
    pub fn state_is_runnable(prev_state: i64) -> bool {
        prev_state & !TASK_REPORT_PREEMPTED == 0
    }
}

/// Events lost before a page, as the page header reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PageLoss {
    /// The page says events were lost.
    pub missed: bool,
    /// How many, when the kernel stored the count.
    pub count: Option<u64>,
}

/// What one page held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PageInfo {
    pub loss: PageLoss,
    /// Events of the types the layout knows.
    pub sched_events: u64,
    /// Other data events (other tracepoints in the same buffer).
    pub other_events: u64,
}

fn rd(b: &[u8], (off, size): Off, at: usize) -> Option<i64> {
    let s = b.get(at + off..at + off + size)?;
    Some(match size {
        1 => i64::from(s[0] as i8),
        2 => i64::from(i16::from_le_bytes([s[0], s[1]])),
        4 => i64::from(i32::from_le_bytes(s.try_into().ok()?)),
        8 => i64::from_le_bytes(s.try_into().ok()?),
        _ => return None,
    })
}

fn rd_comm(b: &[u8], (off, size): Off, at: usize) -> Option<Comm> {
    b.get(at + off..at + off + size).map(Comm::from_bytes)
}

impl SchedLayout {
    fn decode_event(&self, data: &[u8], offset: usize) -> Result<Option<SchedEvent>, TracefsError> {
        let short = || TracefsError::EventShort {
            offset,
            len: data.len(),
        };
        if data.len() < 2 {
            return Err(short());
        }
        let ty = u16::from_le_bytes([data[0], data[1]]);
        let pid = |o: Off| rd(data, o, 0).map(|v| v as u32).ok_or_else(short);
        let int = |o: Off| rd(data, o, 0).map(|v| v as i32).ok_or_else(short);
        let comm = |o: Off| rd_comm(data, o, 0).ok_or_else(short);
        let ev = if ty == self.switch_id {
            SchedEvent::Switch {
                prev_comm: comm(self.sw_prev_comm)?,
                prev_pid: pid(self.sw_prev_pid)?,
                prev_prio: int(self.sw_prev_prio)?,
                prev_state: rd(data, self.sw_prev_state, 0).ok_or_else(short)?,
                next_comm: comm(self.sw_next_comm)?,
                next_pid: pid(self.sw_next_pid)?,
                next_prio: int(self.sw_next_prio)?,
            }
        } else if ty == self.wakeup_id || ty == self.wakeup_new_id {
            let new = ty != self.wakeup_id;
            let w = if new { &self.wakeup_new } else { &self.wakeup };
            SchedEvent::Wakeup {
                comm: comm(w.comm)?,
                pid: pid(w.pid)?,
                prio: int(w.prio)?,
                target_cpu: pid(w.target)?,
                new,
            }
        } else if ty == self.exit_id {
            SchedEvent::Exit {
                comm: comm(self.ex_comm)?,
                pid: pid(self.ex_pid)?,
                prio: int(self.ex_prio)?,
            }
        } else if Some(ty) == self.runtime_id {
            SchedEvent::Runtime {
                pid: pid(self.rt_pid)?,
                runtime_ns: rd(data, self.rt_runtime, 0).ok_or_else(short)? as u64,
            }
        } else {
            return Ok(None);
        };
        Ok(Some(ev))
    }

    /// Decodes one `trace_pipe_raw` page, calling `f(ts_ns, event)` for every scheduler event
    /// in order. Corrupt pages are typed errors; events decoded before the damage were already
    /// delivered.
    pub fn decode_page(
        &self,
        page: &[u8],
        mut f: impl FnMut(u64, SchedEvent),
    ) -> Result<PageInfo, TracefsError> {
        if page.len() < PAGE_HEADER_SIZE {
            return Err(TracefsError::PageShort(page.len()));
        }
        let mut ts = u64::from_le_bytes(page[0..8].try_into().expect("8 bytes"));
        let commit_raw = u64::from_le_bytes(page[8..16].try_into().expect("8 bytes"));
        let commit = commit_raw & COMMIT_MASK;
        let data = &page[PAGE_HEADER_SIZE..];
        if commit > data.len() as u64 {
            return Err(TracefsError::Commit {
                commit,
                avail: data.len(),
            });
        }
        let commit = commit as usize;
        let mut info = PageInfo::default();
        if commit_raw & RB_MISSED_EVENTS != 0 {
            info.loss.missed = true;
            if commit_raw & RB_MISSED_STORED != 0 {
                info.loss.count = data
                    .get(commit..commit + 8)
                    .map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")));
            }
        }
        let data = &data[..commit];
        let mut at = 0usize;
        while at + 4 <= data.len() {
            let word = u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes"));
            let type_len = word & 0x1f;
            let delta = u64::from(word >> 5);
            let arr0 = || {
                data.get(at + 4..at + 8)
                    .map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
                    .ok_or(TracefsError::EventOverrun { offset: at })
            };
            match type_len {
                TYPE_PADDING => {
                    if delta == 0 {
                        break; // null event: the rest of the page is empty
                    }
                    let len = arr0()? as usize;
                    at = at
                        .checked_add(4 + len)
                        .ok_or(TracefsError::EventOverrun { offset: at })?;
                    if at > data.len() {
                        return Err(TracefsError::EventOverrun { offset: at });
                    }
                }
                TYPE_TIME_EXTEND => {
                    ts = ts.wrapping_add((u64::from(arr0()?) << 27) | delta);
                    at += 8;
                }
                TYPE_TIME_STAMP => {
                    let abs = (u64::from(arr0()?) << 27) | delta;
                    ts = (ts & !ABS_TS_MASK) | (abs & ABS_TS_MASK);
                    at += 8;
                }
                _ => {
                    ts = ts.wrapping_add(delta);
                    let (start, len) = if type_len == 0 {
                        let l = arr0()? as usize;
                        if l < 4 {
                            return Err(TracefsError::EventShort { offset: at, len: l });
                        }
                        (at + 8, l - 4)
                    } else {
                        (at + 4, type_len as usize * 4)
                    };
                    let end = start
                        .checked_add(len)
                        .ok_or(TracefsError::EventOverrun { offset: at })?;
                    let payload = data
                        .get(start..end)
                        .ok_or(TracefsError::EventOverrun { offset: at })?;
                    match self.decode_event(payload, at)? {
                        Some(ev) => {
                            info.sched_events += 1;
                            f(ts, ev);
                        }
                        None => info.other_events += 1,
                    }
                    at = end.next_multiple_of(4);
                }
            }
        }
        Ok(info)
    }
}

/// Comm prefixes of kernel workers, counted not logged (seed 002 §2.1.5 names kworker; ksoftirqd
/// runs the soft interrupts extraction raises; rcu threads run the callbacks it queues).
pub const KERNEL_WORKER_PREFIXES: [&str; 4] = ["kworker/", "ksoftirqd/", "rcu_", "rcuc/"];

/// Which tasks are counted rather than logged.
#[derive(Debug, Clone, Default)]
pub struct CountPolicy {
    /// The recorder's process id: its threads are counted.
    pub own_tgid: Option<u32>,
    /// Count kernel workers ([`KERNEL_WORKER_PREFIXES`]).
    pub kernel_workers: bool,
    /// Further command names counted as [`CountedClass::Ignored`] (exact match).
    pub ignore_comms: Vec<String>,
}

#[derive(Debug, Clone, Copy)]
struct TaskState {
    tgid: Option<u32>,
    exec_ns: u64,
    switches: u32,
    prio: u8,
    counted: Option<CountedClass>,
    counted_events: u64,
    comm: Comm,
    /// Classified with a real command name (a task first seen in `sched_stat_runtime`, which
    /// carries none here, is classified again at its first named event).
    named: bool,
}

/// Turns decoded scheduler events into audit records. It derives what tracefs does not give
/// directly:
/// - execution time: the sum of `sched_stat_runtime` deltas of the task since recording began
///   (the task's whole execution time when it was created during the recording);
/// - context switches: switches-out of the task since recording began;
/// - run-queue length: per CPU, tasks woken onto it or seen running on it and not yet blocked
///   (a task seen on another CPU moves there), counting counted-not-logged tasks too;
/// - process id: from the caller's `resolve_tgid` (the live recorder reads `/proc`), once per task.
#[derive(Debug)]
pub struct RecordBuilder {
    cpus: u16,
    policy: CountPolicy,
    tasks: HashMap<u32, TaskState>,
    runnable_on: HashMap<u32, u16>,
    rq_len: Vec<u16>,
    log_switches: bool,
    counted_gone: Vec<CountedTask>,
    counted_overflow_events: u64,
    raw_events: u64,
}

/// Most counted tasks remembered after they exit; later ones are only summed.
const MAX_GONE_COUNTED: usize = crate::log::MAX_COUNTED_TASKS;

fn prio_u8(p: i32) -> u8 {
    p.clamp(0, i32::from(MAX_PRIO)) as u8
}

impl RecordBuilder {
    /// `log_switches`: emit switch-in and preempt records (needed by TLP, latency, export);
    /// otherwise only seed 002's unblock/block/terminate.
    pub fn new(cpus: u16, policy: CountPolicy, log_switches: bool) -> Self {
        RecordBuilder {
            cpus: cpus.max(1),
            policy,
            tasks: HashMap::new(),
            runnable_on: HashMap::new(),
            rq_len: vec![0; usize::from(cpus.max(1))],
            log_switches,
            counted_gone: Vec::new(),
            counted_overflow_events: 0,
            raw_events: 0,
        }
    }

    pub fn raw_events(&self) -> u64 {
        self.raw_events
    }

    fn classify(&self, comm: &Comm, tgid: Option<u32>) -> Option<CountedClass> {
        if tgid.is_some() && tgid == self.policy.own_tgid {
            return Some(CountedClass::Recorder);
        }
        if self.policy.kernel_workers && KERNEL_WORKER_PREFIXES.iter().any(|p| comm.starts_with(p))
        {
            return Some(CountedClass::KernelWorker);
        }
        let name = comm.to_string_lossy();
        if self.policy.ignore_comms.contains(&name) {
            return Some(CountedClass::Ignored);
        }
        None
    }

    fn task(
        &mut self,
        pid: u32,
        comm: Option<Comm>,
        resolve_tgid: &mut dyn FnMut(u32) -> Option<u32>,
    ) -> &mut TaskState {
        if !self.tasks.contains_key(&pid) {
            let tgid = resolve_tgid(pid);
            let c = comm.unwrap_or_default();
            let counted = self.classify(&c, tgid);
            self.tasks.insert(
                pid,
                TaskState {
                    tgid,
                    exec_ns: 0,
                    switches: 0,
                    prio: 120,
                    counted,
                    counted_events: 0,
                    comm: c,
                    named: comm.is_some(),
                },
            );
        }
        if let Some(c) = comm {
            let (named, tgid) = self
                .tasks
                .get(&pid)
                .map(|t| (t.named, t.tgid))
                .expect("inserted above");
            if !named {
                let counted = self.classify(&c, tgid);
                let t = self.tasks.get_mut(&pid).expect("inserted above");
                t.counted = counted;
                t.named = true;
            }
        }
        let t = self.tasks.get_mut(&pid).expect("inserted above");
        if let Some(c) = comm {
            t.comm = c;
        }
        t
    }

    fn set_runnable(&mut self, pid: u32, cpu: u16) {
        if pid == 0 || cpu >= self.cpus {
            return;
        }
        match self.runnable_on.insert(pid, cpu) {
            Some(old) if old == cpu => {}
            Some(old) => {
                self.rq_len[usize::from(old)] = self.rq_len[usize::from(old)].saturating_sub(1);
                self.rq_len[usize::from(cpu)] = self.rq_len[usize::from(cpu)].saturating_add(1);
            }
            None => self.rq_len[usize::from(cpu)] = self.rq_len[usize::from(cpu)].saturating_add(1),
        }
    }

    fn set_blocked(&mut self, pid: u32) {
        if let Some(old) = self.runnable_on.remove(&pid) {
            self.rq_len[usize::from(old)] = self.rq_len[usize::from(old)].saturating_sub(1);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        pid: u32,
        ts_ns: u64,
        cpu: u16,
        ring: u16,
        kind: AuditEventKind,
        flags: u8,
        out: &mut dyn FnMut(AuditRecord),
    ) {
        let rq_len = self.rq_len.get(usize::from(cpu)).copied().unwrap_or(0);
        let Some(t) = self.tasks.get_mut(&pid) else {
            return;
        };
        if t.counted.is_some() {
            t.counted_events += 1;
            return;
        }
        let mut flags = flags;
        if t.tgid.is_none() {
            flags |= FLAG_TGID_UNKNOWN;
        }
        out(AuditRecord {
            seq: 0,
            ts_ns,
            exec_ns: t.exec_ns,
            tgid: t.tgid.unwrap_or(0),
            tid: pid,
            switches: t.switches,
            comm: t.comm,
            cpu,
            ring,
            rq_len,
            prio: t.prio,
            kind,
            flags,
        });
    }

    fn forget(&mut self, pid: u32) {
        if let Some(t) = self.tasks.remove(&pid) {
            if let Some(class) = t.counted {
                let c = CountedTask {
                    tid: pid,
                    tgid: t.tgid.unwrap_or(0),
                    class,
                    comm: t.comm,
                    events: t.counted_events,
                    exec_ns: t.exec_ns,
                };
                if self.counted_gone.len() < MAX_GONE_COUNTED {
                    self.counted_gone.push(c);
                } else {
                    self.counted_overflow_events += c.events;
                }
            }
        }
    }

    /// Feeds one event recorded on `ring_cpu`'s buffer; records go to `out` (the caller pushes
    /// them into that CPU's ring).
    pub fn on_event(
        &mut self,
        ring_cpu: u16,
        ts_ns: u64,
        ev: SchedEvent,
        resolve_tgid: &mut dyn FnMut(u32) -> Option<u32>,
        out: &mut dyn FnMut(AuditRecord),
    ) {
        self.raw_events += 1;
        let cpu = ring_cpu.min(self.cpus - 1);
        match ev {
            SchedEvent::Runtime { pid, runtime_ns } => {
                if pid != 0 {
                    let t = self.task(pid, None, resolve_tgid);
                    t.exec_ns = t.exec_ns.saturating_add(runtime_ns);
                }
            }
            SchedEvent::Wakeup {
                comm,
                pid,
                prio,
                target_cpu,
                new,
            } => {
                if pid == 0 {
                    return;
                }
                let t = self.task(pid, Some(comm), resolve_tgid);
                t.prio = prio_u8(prio);
                let target = u16::try_from(target_cpu)
                    .unwrap_or(u16::MAX)
                    .min(self.cpus - 1);
                self.set_runnable(pid, target);
                let flags = if new { FLAG_NEW_TASK } else { 0 };
                self.emit(pid, ts_ns, target, cpu, AuditEventKind::Unblock, flags, out);
            }
            SchedEvent::Exit { comm, pid, prio } => {
                if pid == 0 {
                    return;
                }
                let t = self.task(pid, Some(comm), resolve_tgid);
                t.prio = prio_u8(prio);
                self.emit(pid, ts_ns, cpu, cpu, AuditEventKind::Terminate, 0, out);
            }
            SchedEvent::Switch {
                prev_comm,
                prev_pid,
                prev_prio,
                prev_state,
                next_comm,
                next_pid,
                next_prio,
            } => {
                if prev_pid != 0 {
                    let t = self.task(prev_pid, Some(prev_comm), resolve_tgid);
                    t.prio = prio_u8(prev_prio);
                    t.switches = t.switches.saturating_add(1);
                    let dying = prev_state & TASK_DEAD_BITS != 0;
                    if SchedEvent::state_is_runnable(prev_state) {
                        self.set_runnable(prev_pid, cpu);
                        if self.log_switches {
                            self.emit(prev_pid, ts_ns, cpu, cpu, AuditEventKind::Preempt, 0, out);
                        }
                    } else {
                        self.set_blocked(prev_pid);
                        let flags = if dying { FLAG_EXITING } else { 0 };
                        self.emit(prev_pid, ts_ns, cpu, cpu, AuditEventKind::Block, flags, out);
                    }
                    if dying {
                        self.forget(prev_pid);
                    }
                }
                if next_pid != 0 {
                    let t = self.task(next_pid, Some(next_comm), resolve_tgid);
                    t.prio = prio_u8(next_prio);
                    self.set_runnable(next_pid, cpu);
                    if self.log_switches {
                        self.emit(next_pid, ts_ns, cpu, cpu, AuditEventKind::SwitchIn, 0, out);
                    }
                }
            }
        }
    }

    /// Counted-not-logged tasks so far (live and exited), and events beyond the list.
    pub fn counted(&self) -> (Vec<CountedTask>, u64) {
        let mut v = self.counted_gone.clone();
        let mut live: Vec<CountedTask> = self
            .tasks
            .iter()
            .filter_map(|(&tid, t)| {
                t.counted.map(|class| CountedTask {
                    tid,
                    tgid: t.tgid.unwrap_or(0),
                    class,
                    comm: t.comm,
                    events: t.counted_events,
                    exec_ns: t.exec_ns,
                })
            })
            .collect();
        live.sort_by_key(|c| c.tid);
        v.extend(live);
        (v, self.counted_overflow_events)
    }
}

#[cfg(test)]
mod builder_tests;
#[cfg(test)]
mod decode_tests;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    pub const SWITCH_FMT: &str = "name: sched_switch\nID: 372\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\nprint fmt: \"...\"\n";
    fn wake_fmt(name: &str, id: u16) -> String {
        format!("name: {name}\nID: {id}\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n")
    }
    pub const EXIT_FMT: &str = "name: sched_process_exit\nID: 369\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:bool group_dead;\toffset:32;\tsize:1;\tsigned:0;\n";
    pub const RUNTIME_FMT: &str = "name: sched_stat_runtime\nID: 363\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:__data_loc char[] comm;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;\n\tfield:u64 runtime;\toffset:16;\tsize:8;\tsigned:0;\n";

    pub fn layout() -> SchedLayout {
        let wk = wake_fmt("sched_wakeup", 374);
        let wkn = wake_fmt("sched_wakeup_new", 373);
        SchedLayout::parse(SchedFormatTexts {
            sched_switch: SWITCH_FMT,
            sched_wakeup: &wk,
            sched_wakeup_new: &wkn,
            sched_process_exit: EXIT_FMT,
            sched_stat_runtime: Some(RUNTIME_FMT),
        })
        .unwrap()
    }

    /// Builds a page the way the kernel does: events with small time deltas.
    pub struct PageBuilder {
        data: Vec<u8>,
        ts0: u64,
    }

    impl PageBuilder {
        pub fn new(ts0: u64) -> Self {
            PageBuilder {
                data: Vec::new(),
                ts0,
            }
        }
        pub fn event(&mut self, delta: u32, payload: &[u8]) {
            let len = payload.len().next_multiple_of(4);
            if len <= 28 * 4 {
                self.data
                    .extend_from_slice(&(((delta) << 5) | (len / 4) as u32).to_le_bytes());
            } else {
                self.data.extend_from_slice(&(delta << 5).to_le_bytes());
                self.data
                    .extend_from_slice(&((len + 4) as u32).to_le_bytes());
            }
            self.data.extend_from_slice(payload);
            self.data.resize(self.data.len() + len - payload.len(), 0);
        }
        pub fn extend(&mut self, delta: u64) {
            self.data.extend_from_slice(
                &((((delta & ((1 << 27) - 1)) as u32) << 5) | TYPE_TIME_EXTEND).to_le_bytes(),
            );
            self.data
                .extend_from_slice(&((delta >> 27) as u32).to_le_bytes());
        }
        pub fn finish(&self, missed: Option<u64>) -> Vec<u8> {
            let mut commit = self.data.len() as u64;
            let mut p = Vec::new();
            p.extend_from_slice(&self.ts0.to_le_bytes());
            if missed.is_some() {
                commit |= RB_MISSED_EVENTS | RB_MISSED_STORED;
            }
            p.extend_from_slice(&commit.to_le_bytes());
            p.extend_from_slice(&self.data);
            if let Some(m) = missed {
                p.extend_from_slice(&m.to_le_bytes());
            }
            p.resize(4096, 0);
            p
        }
    }

    /// The `sched_switch` event `switch_payload` encodes, both tasks at priority 120.
    pub fn switch(prev: (&str, u32), prev_state: i64, next: (&str, u32)) -> SchedEvent {
        SchedEvent::Switch {
            prev_comm: Comm::new(prev.0),
            prev_pid: prev.1,
            prev_prio: 120,
            prev_state,
            next_comm: Comm::new(next.0),
            next_pid: next.1,
            next_prio: 120,
        }
    }

    pub fn switch_payload(prev: (&str, u32), prev_state: i64, next: (&str, u32)) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        b[0..2].copy_from_slice(&372u16.to_le_bytes());
        b[8..8 + prev.0.len()].copy_from_slice(prev.0.as_bytes());
        b[24..28].copy_from_slice(&prev.1.to_le_bytes());
        b[28..32].copy_from_slice(&120i32.to_le_bytes());
        b[32..40].copy_from_slice(&prev_state.to_le_bytes());
        b[40..40 + next.0.len()].copy_from_slice(next.0.as_bytes());
        b[56..60].copy_from_slice(&next.1.to_le_bytes());
        b[60..64].copy_from_slice(&120i32.to_le_bytes());
        b
    }

    pub fn wakeup_payload(comm: &str, pid: u32, cpu: u32) -> Vec<u8> {
        let mut b = vec![0u8; 36];
        b[0..2].copy_from_slice(&374u16.to_le_bytes());
        b[8..8 + comm.len()].copy_from_slice(comm.as_bytes());
        b[24..28].copy_from_slice(&pid.to_le_bytes());
        b[28..32].copy_from_slice(&120i32.to_le_bytes());
        b[32..36].copy_from_slice(&cpu.to_le_bytes());
        b
    }

    pub fn runtime_payload(pid: u32, ns: u64) -> Vec<u8> {
        let mut b = vec![0u8; 24];
        b[0..2].copy_from_slice(&363u16.to_le_bytes());
        b[12..16].copy_from_slice(&pid.to_le_bytes());
        b[16..24].copy_from_slice(&ns.to_le_bytes());
        b
    }

    #[test]
    fn parses_the_machine_format_files() {
        let l = layout();
        assert_eq!(l.switch_id, 372);
        assert_eq!(l.sw_prev_state, (32, 8));
        assert_eq!(l.rt_runtime, (16, 8));
    }

    #[test]
    fn missing_field_is_typed() {
        let broken = SWITCH_FMT.replace("next_prio", "nxt");
        let wk = wake_fmt("sched_wakeup", 374);
        let err = SchedLayout::parse(SchedFormatTexts {
            sched_switch: &broken,
            sched_wakeup: &wk,
            sched_wakeup_new: &wk,
            sched_process_exit: EXIT_FMT,
            sched_stat_runtime: None,
        })
        .unwrap_err();
        assert_eq!(
            err,
            TracefsError::Field {
                event: "sched_switch",
                field: "next_prio"
            }
        );
    }

    #[test]
    fn decodes_events_time_extends_and_loss() {
        let l = layout();
        let mut p = PageBuilder::new(1_000);
        p.event(5, &wakeup_payload("a", 10, 1));
        p.extend(1 << 30);
        p.event(7, &switch_payload(("a", 10), 1, ("b", 11)));
        p.event(1, &runtime_payload(11, 500));
        let page = p.finish(Some(3));
        let mut got = Vec::new();
        let info = l.decode_page(&page, |ts, e| got.push((ts, e))).unwrap();
        assert_eq!(
            info.loss,
            PageLoss {
                missed: true,
                count: Some(3)
            }
        );
        assert_eq!(info.sched_events, 3);
        assert_eq!(got[0].0, 1_005);
        assert_eq!(got[1].0, 1_005 + (1 << 30) + 7);
        assert!(matches!(
            got[1].1,
            SchedEvent::Switch {
                prev_pid: 10,
                next_pid: 11,
                prev_state: 1,
                ..
            }
        ));
        assert_eq!(
            got[2].1,
            SchedEvent::Runtime {
                pid: 11,
                runtime_ns: 500
            }
        );
    }

    #[test]
    fn corrupt_pages_are_typed_errors() {
        let l = layout();
        assert_eq!(
            l.decode_page(&[0; 8], |_, _| {}),
            Err(TracefsError::PageShort(8))
        );
        let mut page = vec![0u8; 64];
        page[8] = 200;
        assert!(matches!(
            l.decode_page(&page, |_, _| {}),
            Err(TracefsError::Commit { .. })
        ));
        let mut p = PageBuilder::new(0);
        p.event(1, &switch_payload(("a", 1), 0, ("b", 2)));
        let mut page = p.finish(None);
        page[8] = 40; // commit cuts the event short
        assert!(matches!(
            l.decode_page(&page, |_, _| {}),
            Err(TracefsError::EventOverrun { .. })
        ));
    }

    #[test]
    fn builder_derives_exec_switches_rq_len_and_counts_workers() {
        let mut b = RecordBuilder::new(
            2,
            CountPolicy {
                own_tgid: Some(99),
                kernel_workers: true,
                ignore_comms: vec![],
            },
            true,
        );
        let mut recs = Vec::new();
        let mut resolve = |tid: u32| Some(if tid == 98 { 99 } else { tid });
        let c = Comm::new;
        let mut feed = |b: &mut RecordBuilder, cpu: u16, ts: u64, e: SchedEvent| {
            b.on_event(cpu, ts, e, &mut resolve, &mut |r| recs.push(r))
        };
        feed(
            &mut b,
            0,
            1,
            SchedEvent::Wakeup {
                comm: c("w"),
                pid: 5,
                prio: 120,
                target_cpu: 1,
                new: true,
            },
        );
        feed(&mut b, 1, 2, switch(("swapper/1", 0), 0, ("w", 5)));
        feed(
            &mut b,
            1,
            3,
            SchedEvent::Runtime {
                pid: 5,
                runtime_ns: 700,
            },
        );
        feed(&mut b, 1, 4, switch(("w", 5), 0x100, ("kworker/1:0", 7)));
        feed(&mut b, 1, 5, switch(("kworker/1:0", 7), 1, ("rec", 98)));
        feed(&mut b, 1, 6, switch(("rec", 98), 1, ("w", 5)));
        feed(&mut b, 1, 7, switch(("w", 5), 1, ("swapper/1", 0)));
        let kinds: Vec<_> = recs
            .iter()
            .map(|r| (r.kind, r.tid, r.rq_len, r.exec_ns, r.switches))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (AuditEventKind::Unblock, 5, 1, 0, 0),
                (AuditEventKind::SwitchIn, 5, 1, 0, 0),
                (AuditEventKind::Preempt, 5, 1, 700, 1),
                (AuditEventKind::SwitchIn, 5, 1, 700, 1),
                (AuditEventKind::Block, 5, 0, 700, 2),
            ]
        );
        assert_eq!(recs[0].flags, FLAG_NEW_TASK);
        assert_eq!(recs[0].cpu, 1);
        assert_eq!(recs[0].ring, 0);
        let (counted, _) = b.counted();
        let classes: Vec<_> = counted.iter().map(|c| (c.tid, c.class, c.events)).collect();
        assert_eq!(
            classes,
            vec![
                (7, CountedClass::KernelWorker, 2),
                (98, CountedClass::Recorder, 2)
            ]
        );
    }

    #[test]
    fn a_worker_first_seen_by_its_runtime_is_still_counted() {
        let mut b = RecordBuilder::new(
            1,
            CountPolicy {
                own_tgid: None,
                kernel_workers: true,
                ignore_comms: vec![],
            },
            true,
        );
        let mut recs = Vec::new();
        b.on_event(
            0,
            1,
            SchedEvent::Runtime {
                pid: 22,
                runtime_ns: 5,
            },
            &mut |t| Some(t),
            &mut |r| recs.push(r),
        );
        b.on_event(
            0,
            2,
            switch(("ksoftirqd/0", 22), 1, ("swapper/0", 0)),
            &mut |t| Some(t),
            &mut |r| recs.push(r),
        );
        assert!(recs.is_empty());
        assert_eq!(b.counted().0[0].class, CountedClass::KernelWorker);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        /// Arbitrary page bytes never panic the decoder.
        #[test]
        fn fuzz_pages(mut bytes in prop::collection::vec(any::<u8>(), 0..400), commit in 0u64..400, flags in 0u64..4) {
            if bytes.len() >= 16 {
                bytes[8..16].copy_from_slice(&(commit | (flags << 30)).to_le_bytes());
            }
            let l = layout();
            let _ = l.decode_page(&bytes, |_, _| {});
        }

        /// Arbitrary format text never panics the parser.
        #[test]
        fn fuzz_format_text(s in ".{0,300}") {
            let _ = EventFormat::parse(&s);
        }
    }
}
