//! Reader of ftrace text: the tracefs `trace`/`trace_pipe` files and `trace-cmd report` output
//! (seed 004 figure 1.2). `sched_switch`, `sched_wakeup`, `sched_wakeup_new` and
//! `sched_process_exit` lines become audit records through the same [`RecordBuilder`] the live
//! recorder uses, so every analysis reads both. Other events are counted and skipped.
//!
//! Both field styles are read:
//! - tracefs: `prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120`
//! - trace-cmd: `a:1 [120] S ==> b:2 [120]`
//!
//! Lost-event lines (`CPU:1 [LOST 12 EVENTS]`, `CPU:1 [12 EVENTS DROPPED]`) skip sequence
//! numbers on that CPU's ring, so the loss shows as a gap like in a live log.

use thiserror::Error;

use crate::log::{AuditLog, LogHeader, LogSummary};
use crate::record::{AuditRecord, Comm};
use crate::ring::PerCpuRings;
use crate::tracefs::{CountPolicy, RecordBuilder, SchedEvent};

/// Most CPUs a text trace may name (a sanity bound against corrupt input).
pub const MAX_CPUS: u32 = 4096;
/// Command names ignored by default: the tracer's own process, as seed 004 ignores "the trace or
/// our logging code".
pub const DEFAULT_IGNORED_COMMS: [&str; 1] = ["trace-cmd"];

/// Why a text trace cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FtraceError {
    #[error("line {line}: {reason}")]
    Malformed { line: usize, reason: &'static str },
    #[error("line {line}: CPU {cpu} beyond the {MAX_CPUS} supported")]
    Cpu { line: usize, cpu: u32 },
    #[error("no scheduler events in the trace")]
    Empty,
    #[error(
        "line {line}: CPU {cpu}'s time goes back from {previous_ns} ns to {at_ns} ns, more than \
         the {MAX_STEP_BACK_NS} ns nested events explain (are two traces joined?)"
    )]
    TimeGoesBack {
        line: usize,
        cpu: u32,
        at_ns: u64,
        previous_ns: u64,
    },
}

/// Largest step back in one CPU's time the reader accepts (and counts in
/// [`FtraceCounts::out_of_order_lines`]): 10 ms. Nested events (an interrupt's, committed
/// while an outer event was being written) step back by microseconds; a larger step is two
/// traces joined or a corrupt stamp, whose thread-level parallelism would be meaningless.
pub const MAX_STEP_BACK_NS: u64 = 10_000_000;

/// Counts of what the reader saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct FtraceCounts {
    pub sched_lines: u64,
    pub other_event_lines: u64,
    pub lost_events_reported: u64,
    /// Lines whose time is earlier than the previous line of the same CPU by at most
    /// [`MAX_STEP_BACK_NS`] (nested events can do this); kept, since the analyses order by time.
    /// A larger step back is [`FtraceError::TimeGoesBack`].
    pub out_of_order_lines: u64,
}

enum Item {
    Event(u32, u64, SchedEvent),
    Lost(u32, u64),
    Other,
}

/// An ftrace timestamp (seconds, a point, up to nine fraction digits; no sign) in ns.
pub(crate) fn parse_ts(s: &str) -> Option<u64> {
    let (secs, frac) = s.split_once('.')?;
    if secs.is_empty() || frac.is_empty() || frac.len() > 9 {
        return None;
    }
    if !secs.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    let mut ns: u64 = frac.parse().ok()?;
    for _ in frac.len()..9 {
        ns *= 10;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

fn num<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.trim().parse().ok()
}

/// `state` text to the kernel bits: "R" 0, "R+" preempted, anything else blocked (1).
fn state_bits(s: &str) -> i64 {
    match s.trim() {
        "R" => 0,
        "R+" => 0x100,
        s if s.contains('X') || s.contains('Z') => 0x10,
        _ => 1,
    }
}

/// Splits `key=value key2=value2` where values may hold spaces, using the known keys in order.
fn kv<'a>(s: &'a str, keys: &[&str]) -> Option<Vec<&'a str>> {
    let mut out = Vec::with_capacity(keys.len());
    let mut rest = s.trim();
    for (i, k) in keys.iter().enumerate() {
        rest = rest.strip_prefix(k)?.strip_prefix('=')?;
        match keys.get(i + 1) {
            Some(next) => {
                let pat = format!(" {next}=");
                let at = rest.rfind(&pat)?;
                out.push(&rest[..at]);
                rest = &rest[at + 1..];
            }
            None => {
                let end = rest.find(' ').unwrap_or(rest.len());
                out.push(&rest[..end]);
            }
        }
    }
    Some(out)
}

/// `comm:pid [prio]` of the trace-cmd style.
fn comm_pid_prio(s: &str) -> Option<(Comm, u32, i32)> {
    let s = s.trim();
    let (left, prio) = s.rsplit_once(" [")?;
    let prio = num(prio.strip_suffix(']')?)?;
    let (comm, pid) = left.rsplit_once(':')?;
    Some((Comm::new(comm), num(pid)?, prio))
}

fn parse_switch(rest: &str) -> Option<SchedEvent> {
    let (l, r) = rest.split_once(" ==> ")?;
    if l.trim_start().starts_with("prev_comm=") {
        let a = kv(l, &["prev_comm", "prev_pid", "prev_prio", "prev_state"])?;
        let b = kv(r, &["next_comm", "next_pid", "next_prio"])?;
        Some(SchedEvent::Switch {
            prev_comm: Comm::new(a[0]),
            prev_pid: num(a[1])?,
            prev_prio: num(a[2])?,
            prev_state: state_bits(a[3]),
            next_comm: Comm::new(b[0]),
            next_pid: num(b[1])?,
            next_prio: num(b[2])?,
        })
    } else {
        let (lp, state) = l.trim().rsplit_once(' ')?;
        let (pc, pp, ppr) = comm_pid_prio(lp)?;
        let (nc, np, npr) = comm_pid_prio(r)?;
        Some(SchedEvent::Switch {
            prev_comm: pc,
            prev_pid: pp,
            prev_prio: ppr,
            prev_state: state_bits(state),
            next_comm: nc,
            next_pid: np,
            next_prio: npr,
        })
    }
}

fn parse_wakeup(rest: &str, new: bool) -> Option<SchedEvent> {
    let rest = rest.trim();
    if rest.starts_with("comm=") {
        let (head, target) = rest.rsplit_once("target_cpu=")?;
        let head = head.trim_end().trim_end_matches("success=1").trim_end();
        let a = kv(head, &["comm", "pid", "prio"])?;
        Some(SchedEvent::Wakeup {
            comm: Comm::new(a[0]),
            pid: num(a[1])?,
            prio: num(a[2])?,
            target_cpu: num(target)?,
            new,
        })
    } else {
        let (head, target) = rest.rsplit_once("CPU:")?;
        let head = head.trim_end().trim_end_matches("success=1").trim_end();
        let (comm, pid, prio) = comm_pid_prio(head)?;
        Some(SchedEvent::Wakeup {
            comm,
            pid,
            prio,
            target_cpu: num(target)?,
            new,
        })
    }
}

fn parse_exit(rest: &str) -> Option<SchedEvent> {
    let rest = rest.trim();
    let rest = match rest.rfind(" group_dead=") {
        Some(at) => &rest[..at],
        None => rest,
    };
    let a = kv(rest, &["comm", "pid", "prio"])?;
    Some(SchedEvent::Exit {
        comm: Comm::new(a[0]),
        pid: num(a[1])?,
        prio: num(a[2])?,
    })
}

/// `CPU:N [LOST M EVENTS]` or `CPU:N [M EVENTS DROPPED]`.
fn parse_lost(line: &str) -> Option<(u32, u64)> {
    let rest = line.trim().strip_prefix("CPU:")?;
    let (cpu, rest) = rest.split_once(' ')?;
    let inner = rest.trim().strip_prefix('[')?.strip_suffix(']')?;
    let n = if let Some(x) = inner.strip_prefix("LOST ") {
        x.strip_suffix(" EVENTS")?
    } else {
        inner.strip_suffix(" EVENTS DROPPED")?
    };
    Some((num(cpu)?, num(n)?))
}

fn parse_line(line: &str, lineno: usize) -> Result<Option<Item>, FtraceError> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') || t.starts_with("cpus=") || t.starts_with("version") {
        return Ok(None);
    }
    if let Some((cpu, n)) = parse_lost(t) {
        return Ok(Some(Item::Lost(cpu, n)));
    }
    let bad = |reason| FtraceError::Malformed {
        line: lineno,
        reason,
    };
    // task-pid [ (tgid) ] [cpu] [flags] ts: event: rest
    let open = t.find(" [").ok_or_else(|| bad("no [cpu] field"))?;
    let mut after = &t[open + 2..];
    // Skip an optional "(tgid)" column: the CPU field is the first bracket holding digits.
    let mut cpu_str;
    loop {
        let close = after
            .find(']')
            .ok_or_else(|| bad("unterminated [cpu] field"))?;
        cpu_str = &after[..close];
        after = &after[close + 1..];
        if !cpu_str.is_empty() && cpu_str.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        let next = after.find('[').ok_or_else(|| bad("no [cpu] field"))?;
        after = &after[next + 1..];
    }
    let cpu: u32 = cpu_str.parse().map_err(|_| bad("bad CPU number"))?;
    if cpu >= MAX_CPUS {
        return Err(FtraceError::Cpu { line: lineno, cpu });
    }
    let mut tokens = after.trim_start();
    // Optional irq-flags column (e.g. "d..3", "dNh2.") before the timestamp.
    let first = tokens
        .split_whitespace()
        .next()
        .ok_or_else(|| bad("no timestamp"))?;
    if !first.ends_with(':') {
        tokens = tokens[first.len()..].trim_start();
    }
    let (ts_str, rest) = tokens.split_once(':').ok_or_else(|| bad("no timestamp"))?;
    let ts = parse_ts(ts_str.trim()).ok_or_else(|| bad("bad timestamp"))?;
    let rest = rest.trim_start();
    let (event, fields) = rest.split_once(':').ok_or_else(|| bad("no event name"))?;
    let event = event.trim();
    let ev = match event {
        "sched_switch" => parse_switch(fields).ok_or_else(|| bad("bad sched_switch fields"))?,
        "sched_wakeup" => {
            parse_wakeup(fields, false).ok_or_else(|| bad("bad sched_wakeup fields"))?
        }
        "sched_wakeup_new" => {
            parse_wakeup(fields, true).ok_or_else(|| bad("bad sched_wakeup_new fields"))?
        }
        "sched_process_exit" => {
            parse_exit(fields).ok_or_else(|| bad("bad sched_process_exit fields"))?
        }
        e if e.is_empty() || e.contains(char::is_whitespace) => return Err(bad("bad event name")),
        _ => return Ok(Some(Item::Other)),
    };
    Ok(Some(Item::Event(cpu, ts, ev)))
}

/// Reads ftrace text into an audit log (one unbounded ring per CPU). `ignore_comms` are counted,
/// not logged (see [`DEFAULT_IGNORED_COMMS`]).
pub fn read(text: &str, ignore_comms: &[&str]) -> Result<(AuditLog, FtraceCounts), FtraceError> {
    let mut items = Vec::new();
    let mut counts = FtraceCounts::default();
    let mut declared_cpus = 0u32;
    let mut max_cpu = 0u32;
    let mut last_ts: Vec<u64> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        if let Some(p) = line
            .trim()
            .strip_prefix("#P:")
            .or_else(|| line.trim().strip_prefix("cpus="))
        {
            if let Ok(n) = p.trim().parse::<u32>() {
                declared_cpus = n.min(MAX_CPUS);
            }
        }
        match parse_line(line, lineno)? {
            None => {}
            Some(Item::Other) => counts.other_event_lines += 1,
            Some(Item::Lost(cpu, n)) => {
                if cpu >= MAX_CPUS {
                    return Err(FtraceError::Cpu { line: lineno, cpu });
                }
                max_cpu = max_cpu.max(cpu);
                counts.lost_events_reported += n;
                items.push(Item::Lost(cpu, n));
            }
            Some(Item::Event(cpu, ts, ev)) => {
                let c = cpu as usize;
                if last_ts.len() <= c {
                    last_ts.resize(c + 1, 0);
                }
                if ts < last_ts[c] {
                    if last_ts[c] - ts > MAX_STEP_BACK_NS {
                        return Err(FtraceError::TimeGoesBack {
                            line: lineno,
                            cpu,
                            at_ns: ts,
                            previous_ns: last_ts[c],
                        });
                    }
                    counts.out_of_order_lines += 1;
                }
                last_ts[c] = last_ts[c].max(ts);
                max_cpu = max_cpu.max(cpu);
                counts.sched_lines += 1;
                items.push(Item::Event(cpu, ts, ev));
            }
        }
    }
    if counts.sched_lines == 0 {
        return Err(FtraceError::Empty);
    }
    let cpus = declared_cpus.max(max_cpu + 1) as u16;
    let policy = CountPolicy {
        own_tgid: None,
        kernel_workers: false,
        ignore_comms: ignore_comms.iter().map(|s| (*s).to_owned()).collect(),
    };
    let mut builder = RecordBuilder::new(cpus, policy, true);
    let mut rings = PerCpuRings::new(usize::from(cpus), usize::MAX);
    let mut start_ns = u64::MAX;
    for item in items {
        match item {
            Item::Lost(cpu, n) => {
                if let Some(r) = rings.ring_mut(cpu as usize) {
                    r.note_lost(n);
                }
            }
            Item::Other => {}
            Item::Event(cpu, ts, ev) => {
                start_ns = start_ns.min(ts);
                let cpu = cpu as u16;
                let mut out: Vec<AuditRecord> = Vec::new();
                // Text traces carry thread ids only; the thread id stands for the process id.
                builder.on_event(cpu, ts, ev, &mut |tid| Some(tid), &mut |r| out.push(r));
                let ring = rings.ring_mut(usize::from(cpu)).expect("cpu < cpus");
                for r in out {
                    ring.push(r);
                }
            }
        }
    }
    let mut records = Vec::new();
    rings.drain_into(&mut records);
    let (counted, counted_overflow_events) = builder.counted();
    let log = AuditLog {
        header: LogHeader {
            rings: cpus,
            ring_capacity: u32::MAX,
            start_ns,
        },
        records,
        summary: LogSummary {
            rings: rings.counters(),
            counted,
            counted_overflow_events,
        },
    };
    Ok((log, counts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::AuditEventKind;
    use proptest::prelude::*;

    const TRACEFS: &str = "# tracer: nop
#
# entries-in-buffer/entries-written: 4/4   #P:2
#
          <idle>-0       [001] d..3.  2630.829789: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=m.spotify music next_pid=29792 next_prio=120
           <...>-29792   [001] d..4.  2630.830311: sched_wakeup: comm=Binder 3 pid=6458 prio=120 target_cpu=000
          <idle>-0       (-----) [000] d..3  2630.869228: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=Binder 3 next_pid=6458 next_prio=120
CPU:0 [LOST 3 EVENTS]
        Binder 3-6458    [000] d..3  2630.870000: sched_switch: prev_comm=Binder 3 prev_pid=6458 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";

    const TRACE_CMD: &str = "cpus=2
          <idle>-0     [001]  2630.829789: sched_switch:         swapper/1:0 [120] R ==> app:29792 [120]
        app-29792 [001]  2630.830311: sched_wakeup:         worker:6458 [120] CPU:000
          <idle>-0     [000]  2630.869228: sched_switch:         swapper/0:0 [120] R ==> worker:6458 [120]
      worker-6458  [000]  2630.870000: sched_switch:         worker:6458 [120] S ==> swapper/0:0 [120]
      worker-6458  [000]  2630.870001: sys_enter:         NR 1
";

    #[test]
    fn reads_tracefs_style_with_spaces_in_names_and_losses() {
        let (log, counts) = read(TRACEFS, &DEFAULT_IGNORED_COMMS).unwrap();
        assert_eq!(log.header.rings, 2);
        assert_eq!(counts.sched_lines, 4);
        assert_eq!(counts.lost_events_reported, 3);
        let kinds: Vec<_> = crate::time_ordered(&log.records)
            .iter()
            .map(|r| (r.kind, r.tid, r.cpu))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (AuditEventKind::SwitchIn, 29792, 1),
                (AuditEventKind::Unblock, 6458, 0),
                (AuditEventKind::SwitchIn, 6458, 0),
                (AuditEventKind::Block, 6458, 0),
            ]
        );
        assert_eq!(
            log.records.iter().find(|r| r.tid == 29792).unwrap().comm,
            Comm::new("m.spotify music")
        );
        let stats = crate::log::stats(&log);
        assert_eq!(stats.kernel_lost, 3);
        assert_eq!(stats.unexplained_gap_records, 0);
    }

    #[test]
    fn reads_trace_cmd_style() {
        let (log, counts) = read(TRACE_CMD, &DEFAULT_IGNORED_COMMS).unwrap();
        assert_eq!(counts.sched_lines, 4);
        assert_eq!(counts.other_event_lines, 1);
        assert_eq!(log.records.len(), 4);
    }

    /// A command name may hold brackets (the kernel keeps any bytes): the CPU is the first
    /// bracket holding only digits.
    #[test]
    fn brackets_in_the_command_name_are_skipped_to_the_cpu() {
        let wake = ": sched_wakeup: comm=x pid=7 prio=120 target_cpu=001";
        for task in [
            "web [x]-7",
            "web []-7",
            "a [b] [c]-7",
            "[w]-7",
            "  web [0x]-7",
        ] {
            let line = format!("{task} [003] d..2. 5.000000002{wake}");
            match parse_line(&line, 1) {
                Ok(Some(Item::Event(3, 5_000_000_002, SchedEvent::Wakeup { pid: 7, .. }))) => {}
                Ok(_) => panic!("{line:?}: another item"),
                Err(e) => panic!("{line:?}: {e}"),
            }
        }
        assert!(matches!(
            parse_line(&format!("web [x] d..2. 5.0{wake}"), 4),
            Err(FtraceError::Malformed {
                line: 4,
                reason: "no [cpu] field"
            })
        ));
    }

    #[test]
    fn malformed_lines_are_typed_errors() {
        let e = read("   a-1 [000] 1.0: sched_switch: garbage\n", &[]).unwrap_err();
        assert_eq!(
            e,
            FtraceError::Malformed {
                line: 1,
                reason: "bad sched_switch fields"
            }
        );
        assert!(matches!(
            read("hello\n", &[]),
            Err(FtraceError::Malformed { line: 1, .. })
        ));
        assert_eq!(read("# nothing\n", &[]), Err(FtraceError::Empty));
        for line in ["a-1 [000] 1.0: two words: x\n", "a-1 [000] 1.0: : x\n"] {
            assert_eq!(
                read(line, &[]),
                Err(FtraceError::Malformed {
                    line: 1,
                    reason: "bad event name"
                }),
                "{line:?}"
            );
        }
        let nested = "a-1 [000] 2.0: sched_wakeup: comm=a pid=1 prio=120 target_cpu=000\na-1 [000] 1.999999: sched_wakeup: comm=a pid=1 prio=120 target_cpu=000\n";
        assert_eq!(read(nested, &[]).unwrap().1.out_of_order_lines, 1);
        let joined = nested.replace("1.999999", "1.0");
        assert!(matches!(
            read(&joined, &[]),
            Err(FtraceError::TimeGoesBack {
                line: 2,
                cpu: 0,
                ..
            })
        ));
    }

    /// `prev_state` text to the kernel's bits (include/linux/sched.h): "R" runnable, "R+"
    /// preempted (`TASK_REPORT_MAX`, still runnable), a dead or zombie task (X, Z) dead, any
    /// other state a sleep.
    #[test]
    fn switch_states_map_to_the_kernels_bits() {
        use crate::tracefs::SchedEvent;
        assert_eq!(state_bits("R"), 0);
        assert_eq!(state_bits("R+"), 0x100);
        assert!(SchedEvent::state_is_runnable(state_bits("R+")));
        for sleep in ["S", "D", "I"] {
            assert_eq!(state_bits(sleep), 1, "{sleep}");
        }
        assert_eq!(state_bits("X"), 0x10);
        assert_eq!(state_bits("Z"), 0x10);
        assert!(!SchedEvent::state_is_runnable(state_bits("X")));
    }

    /// A new task's first wake-up and a task's exit are scheduler lines too, each one record.
    #[test]
    fn wakeup_new_and_exit_lines_are_read() {
        let text = "\
  sh-10 [000] d..2. 1.000000: sched_wakeup_new: comm=sh pid=11 prio=120 target_cpu=000
  sh-11 [000] d..2. 1.000100: sched_process_exit: comm=sh pid=11 prio=120 group_dead=1
";
        let (log, counts) = read(text, &[]).unwrap();
        assert_eq!((counts.sched_lines, counts.other_event_lines), (2, 0));
        assert_eq!(log.records.len(), 2, "{:?}", log.records);
        assert!(log.records.iter().all(|r| r.tid == 11));
    }

    #[test]
    fn timestamps_are_exact_nanoseconds() {
        assert_eq!(parse_ts("2630.829789"), Some(2_630_829_789_000));
        assert_eq!(parse_ts("1.000000001"), Some(1_000_000_001));
        assert_eq!(parse_ts("1."), None);
        assert_eq!(parse_ts("-1.5"), None);
        // Signs that `u64::from_str` would take, ten fraction digits, no seconds: not times.
        for bad in ["+1.5", "1.+5", "1.1234567890", ".5", "1.5 "] {
            assert_eq!(parse_ts(bad), None, "{bad:?}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn fuzz_arbitrary_text(s in "(.{0,80}\n){0,8}") {
            let _ = read(&s, &[]);
        }

        /// Valid traces with one line mangled never panic and stay within bounds.
        #[test]
        fn fuzz_mangled_lines(at in 0usize..400, byte in any::<u8>()) {
            let mut b = TRACEFS.as_bytes().to_vec();
            let i = at % b.len();
            b[i] = byte;
            if let Ok(s) = std::str::from_utf8(&b) {
                if let Ok((log, _)) = read(s, &[]) {
                    prop_assert!(log.records.iter().all(|r| r.cpu < log.header.rings));
                }
            }
        }
    }
}
