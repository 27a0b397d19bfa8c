//! The path of each timer wake-up, read from ftrace text (the tracefs `trace` file) with the
//! events `timer:hrtimer_start`, `timer:hrtimer_expire_entry`, `sched:sched_wakeup` and
//! `sched:sched_switch` on:
//!
//! soft expiry → hard expiry (soft + the thread's timer slack) → the timer interrupt runs the
//! timer (`hrtimer_expire_entry`, its `now`) → `sched_wakeup` → the thread switches in.
//!
//! A sleep's timer is the one the sleeping thread arms for itself (`function=hrtimer_wakeup`,
//! in that thread's context), so the thread is the pid of the `hrtimer_start` line. Whether the
//! CPU was idle when the timer fired is whether its interrupt came in over the idle task
//! (pid 0). The validation's probe (`lull validate kernel`, docs/validation.md) measures the
//! timer path of the machine it runs on with it.

use std::collections::BTreeMap;

use lull_model::stats::nearest_rank;

// One reading of ftrace's timestamps for both of its text readers.
use crate::ftrace_text::parse_ts as parse_ts_ns;

/// One timer wake-up of a sleeping thread, times in ns of the trace clock.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TimerWake {
    pub pid: u32,
    /// The expiry the thread asked for (`softexpires`).
    pub soft_ns: u64,
    /// The latest the kernel may fire it: the soft expiry plus the thread's slack (`expires`).
    pub hard_ns: u64,
    /// When the timer's interrupt ran it (`hrtimer_expire_entry`'s `now`).
    pub fire_ns: u64,
    /// The CPU the timer fired on, and whether it was idle then.
    pub fire_cpu: u32,
    pub fired_idle: bool,
    /// `sched_wakeup` of the thread.
    pub wakeup_ns: u64,
    /// The thread's next `sched_switch` in, and on which CPU.
    pub switch_in_ns: u64,
    pub switch_cpu: u32,
}

impl TimerWake {
    /// How long after its hard expiry the timer fired (negative: another interrupt ran it
    /// within its slack).
    #[must_use]
    pub fn late_ns(&self) -> i64 {
        self.fire_ns as i64 - self.hard_ns as i64
    }

    /// From the soft expiry to running again: what rt-app logs as `wu_lat`.
    #[must_use]
    pub fn wakeup_latency_ns(&self) -> u64 {
        self.switch_in_ns.saturating_sub(self.soft_ns)
    }
}

/// What the reader kept and skipped.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct TimerPathCounts {
    /// Lines that were not events (comments, lost-event notes) or not of the four events.
    pub other_lines: u64,
    /// Event lines of the four events whose fields could not be read.
    pub malformed_lines: u64,
    /// Timers that fired for a thread that had not yet switched in at the end of the trace,
    /// or fired without a wakeup (a sleep interrupted by a signal).
    pub incomplete: u64,
}

/// One event line: `comm-pid [cpu] flags ts: event: fields`.
struct Line<'a> {
    pid: u32,
    cpu: u32,
    ts_ns: u64,
    event: &'a str,
    fields: &'a str,
}

fn parse_line(l: &str) -> Option<Line<'_>> {
    // The comm may hold spaces and dashes: the pid is after the last '-' before " [".
    let open = l.find(" [")?;
    let close = open + l[open..].find(']')?;
    let task = l[..open].trim();
    let pid = task.rsplit_once('-')?.1.parse().ok()?;
    let cpu = l[open + 2..close].trim().parse().ok()?;
    let rest = &l[close + 1..];
    // Optional irq-info flags, then "ts:".
    let mut rest = rest.trim_start();
    let ts_ns = loop {
        let (tok, after) = rest.split_once(' ')?;
        if let Some(ts) = tok.strip_suffix(':').and_then(parse_ts_ns) {
            rest = after;
            break ts;
        }
        rest = after.trim_start();
    };
    let (event, fields) = rest.trim_start().split_once(": ")?;
    Some(Line {
        pid,
        cpu,
        ts_ns,
        event,
        fields,
    })
}

/// The value of `key=` in `fields` (values without spaces only).
fn field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    fields.split(' ').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then_some(v)
    })
}

fn num_field(fields: &str, key: &str) -> Option<u64> {
    field(fields, key)?.parse().ok()
}

/// A timer between its arming and its thread switching in.
#[derive(Clone, Copy)]
struct Pending {
    soft_ns: u64,
    hard_ns: u64,
    fire: Option<(u64, u32, bool)>,
    wakeup_ns: Option<u64>,
}

/// Every complete timer wake-up of the threads `pids` keeps (all threads when `pids` is
/// empty), in the order their threads switched in.
#[must_use]
pub fn read(text: &str, pids: &[u32]) -> (Vec<TimerWake>, TimerPathCounts) {
    let keep = |pid: u32| pids.is_empty() || pids.contains(&pid);
    let mut counts = TimerPathCounts::default();
    // Armed timers by address, and the thread each belongs to.
    let mut armed: BTreeMap<&str, u32> = BTreeMap::new();
    let mut pending: BTreeMap<u32, Pending> = BTreeMap::new();
    let mut out = Vec::new();
    for l in text.lines() {
        let Some(line) = parse_line(l) else {
            counts.other_lines += 1;
            continue;
        };
        let f = line.fields;
        let ok = match line.event {
            "hrtimer_start" => {
                if field(f, "function") == Some("hrtimer_wakeup") && keep(line.pid) {
                    match (
                        field(f, "hrtimer"),
                        num_field(f, "softexpires"),
                        num_field(f, "expires"),
                    ) {
                        (Some(h), Some(soft), Some(hard)) => {
                            armed.insert(h, line.pid);
                            if pending.contains_key(&line.pid) {
                                counts.incomplete += 1;
                            }
                            pending.insert(
                                line.pid,
                                Pending {
                                    soft_ns: soft,
                                    hard_ns: hard,
                                    fire: None,
                                    wakeup_ns: None,
                                },
                            );
                            true
                        }
                        _ => false,
                    }
                } else {
                    true
                }
            }
            "hrtimer_expire_entry" => {
                if field(f, "function") == Some("hrtimer_wakeup") {
                    match (field(f, "hrtimer"), num_field(f, "now")) {
                        (Some(h), Some(now)) => {
                            if let Some(pid) = armed.remove(h) {
                                if let Some(p) = pending.get_mut(&pid) {
                                    p.fire = Some((now, line.cpu, line.pid == 0));
                                }
                            }
                            true
                        }
                        _ => false,
                    }
                } else {
                    true
                }
            }
            "sched_wakeup" => match num_field(f, "pid") {
                Some(pid) => {
                    if let Some(p) = pending.get_mut(&(pid as u32)) {
                        if p.fire.is_some() && p.wakeup_ns.is_none() {
                            p.wakeup_ns = Some(line.ts_ns);
                        }
                    }
                    true
                }
                None => false,
            },
            "sched_switch" => match num_field(f, "next_pid") {
                Some(pid) => {
                    let pid = pid as u32;
                    if let Some(p) = pending.get(&pid).copied() {
                        if let (Some((fire_ns, fire_cpu, fired_idle)), Some(wakeup_ns)) =
                            (p.fire, p.wakeup_ns)
                        {
                            pending.remove(&pid);
                            out.push(TimerWake {
                                pid,
                                soft_ns: p.soft_ns,
                                hard_ns: p.hard_ns,
                                fire_ns,
                                fire_cpu,
                                fired_idle,
                                wakeup_ns,
                                switch_in_ns: line.ts_ns,
                                switch_cpu: line.cpu,
                            });
                        }
                    }
                    true
                }
                None => false,
            },
            _ => {
                counts.other_lines += 1;
                true
            }
        };
        if !ok {
            counts.malformed_lines += 1;
        }
    }
    counts.incomplete += pending.len() as u64;
    (out, counts)
}

/// The lengths of thread `pid`'s stretches on a CPU, from each `sched_switch` in to its next
/// `sched_switch` out, ns (a stretch still open at the end of the trace is left out).
#[must_use]
pub fn on_cpu_ns(text: &str, pid: u32) -> Vec<u64> {
    let mut since: Option<u64> = None;
    let mut out = Vec::new();
    for line in text.lines().filter_map(parse_line) {
        if line.event != "sched_switch" {
            continue;
        }
        if num_field(line.fields, "prev_pid") == Some(u64::from(pid)) {
            if let Some(t) = since.take() {
                out.push(line.ts_ns.saturating_sub(t));
            }
        }
        if num_field(line.fields, "next_pid") == Some(u64::from(pid)) {
            since = Some(line.ts_ns);
        }
    }
    out
}

/// The nearest-rank `percent` percentile of `values` (in any order); `None` when empty.
#[must_use]
pub fn percentile(values: &[i64], percent: u32) -> Option<i64> {
    let mut v = values.to_vec();
    v.sort_unstable();
    nearest_rank(&v, percent)
}

/// The timer path of a set of wake-ups, split by whether the timer's CPU was idle.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct TimerPathStats {
    pub wakes: usize,
    pub fired_idle: usize,
    /// Median lateness past the hard expiry of timers that fired on an idle CPU, ns.
    pub late_idle_p50_ns: Option<i64>,
    /// The same on a CPU that was running something.
    pub late_busy_p50_ns: Option<i64>,
    /// The 10th and 90th percentiles of the lateness on a busy CPU, ns.
    pub late_busy_p10_ns: Option<i64>,
    pub late_busy_p90_ns: Option<i64>,
    /// Median time from the timer firing to the thread's `sched_wakeup`, ns.
    pub fire_to_wakeup_p50_ns: Option<i64>,
    /// Median time from `sched_wakeup` to the switch-in of wake-ups whose timer fired on an
    /// idle CPU, ns.
    pub wakeup_to_run_idle_p50_ns: Option<i64>,
    /// Median wake-up latency (soft expiry to switch-in), ns.
    pub wakeup_latency_p50_ns: Option<i64>,
}

impl TimerPathStats {
    /// The statistics of `wakes`.
    #[must_use]
    pub fn of(wakes: &[TimerWake]) -> TimerPathStats {
        let sel = |idle: bool, f: fn(&TimerWake) -> i64| -> Vec<i64> {
            wakes
                .iter()
                .filter(|w| w.fired_idle == idle)
                .map(f)
                .collect()
        };
        let busy_late = sel(false, TimerWake::late_ns);
        let all = |f: fn(&TimerWake) -> i64| -> Vec<i64> { wakes.iter().map(f).collect() };
        TimerPathStats {
            wakes: wakes.len(),
            fired_idle: wakes.iter().filter(|w| w.fired_idle).count(),
            late_idle_p50_ns: percentile(&sel(true, TimerWake::late_ns), 50),
            late_busy_p50_ns: percentile(&busy_late, 50),
            late_busy_p10_ns: percentile(&busy_late, 10),
            late_busy_p90_ns: percentile(&busy_late, 90),
            fire_to_wakeup_p50_ns: percentile(&all(|w| w.wakeup_ns as i64 - w.fire_ns as i64), 50),
            wakeup_to_run_idle_p50_ns: percentile(
                &sel(true, |w| w.switch_in_ns as i64 - w.wakeup_ns as i64),
                50,
            ),
            wakeup_latency_p50_ns: percentile(&all(|w| w.wakeup_latency_ns() as i64), 50),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "\
# tracer: nop
#
          rt-app-101     [001] d..1. 100.000100: hrtimer_start: hrtimer=00000000aa function=hrtimer_wakeup expires=101000050000 softexpires=101000000000 mode=ABS was_armed=0
          <idle>-0       [001] d.h1. 101.000062: hrtimer_expire_entry: hrtimer=00000000aa function=hrtimer_wakeup now=101000061000
          <idle>-0       [001] d.h2. 101.000063: sched_wakeup: comm=rt-app pid=101 prio=120 target_cpu=001
          <idle>-0       [001] d..2. 101.000065: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rt-app next_pid=101 next_prio=120
     lto cgu.0-7-77      [000] d..1. 101.100000: hrtimer_start: hrtimer=00000000bb function=hrtimer_wakeup expires=102000050000 softexpires=102000000000 mode=ABS was_armed=0
          rt-app-102     [000] d..1. 101.200000: hrtimer_start: hrtimer=00000000cc function=hrtimer_wakeup expires=103000050000 softexpires=103000000000 mode=ABS was_armed=0
          rt-app-102     [000] d..1. 101.200001: hrtimer_start: hrtimer=00000000dd function=tick_nohz_handler expires=1 softexpires=1 mode=ABS was_armed=0
      hog-103        [000] d.h1. 103.000059: hrtimer_expire_entry: hrtimer=00000000cc function=hrtimer_wakeup now=103000058000
      hog-103        [000] d.h2. 103.000061: sched_wakeup: comm=rt-app pid=102 prio=120 target_cpu=000
      hog-103        [000] d..2. 103.000461: sched_switch: prev_comm=hog prev_pid=103 prev_prio=120 prev_state=R ==> next_comm=rt-app next_pid=102 next_prio=120
      hog-103        [000] d.h1. 103.500000: hrtimer_expire_entry: hrtimer=00000000zz function=hrtimer_wakeup now=garbage
";

    #[test]
    fn each_wake_up_is_decomposed_from_its_own_timer() {
        let (w, c) = read(TRACE, &[101, 102]);
        assert_eq!(w.len(), 2, "{w:?}");
        let a = w[0];
        assert_eq!((a.pid, a.fire_cpu, a.fired_idle), (101, 1, true));
        assert_eq!(a.late_ns(), 11_000);
        assert_eq!(a.wakeup_ns - a.fire_ns, 2_000);
        assert_eq!(a.wakeup_latency_ns(), 65_000);
        let b = w[1];
        assert_eq!((b.pid, b.fired_idle, b.switch_cpu), (102, false, 0));
        assert_eq!(b.late_ns(), 8_000);
        assert_eq!(b.switch_in_ns - b.wakeup_ns, 400_000);
        // The tick's timer is not a sleep's; the compiler's is not a kept thread's; the
        // garbage `now` is malformed.
        assert_eq!(c.malformed_lines, 1);
        assert_eq!(c.incomplete, 0);
        assert!(c.other_lines >= 2);
    }

    /// A thread that arms its sleep's timer again before the first fired (the sleep cut short
    /// and begun again) leaves the first arming incomplete, and its wake-up is the second
    /// timer's; a line that is no event and an event of another kind are both other lines.
    #[test]
    fn a_timer_armed_again_before_it_fired_leaves_the_first_incomplete() {
        let text = "\
# tracer: nop
          rt-app-101     [001] d..1. 100.000000: hrtimer_start: hrtimer=00000000aa function=hrtimer_wakeup expires=101000050000 softexpires=101000000000 mode=ABS was_armed=0
          rt-app-101     [001] d..1. 100.500000: hrtimer_cancel: hrtimer=00000000aa
          rt-app-101     [001] d..1. 100.500001: hrtimer_start: hrtimer=00000000aa function=hrtimer_wakeup expires=102000050000 softexpires=102000000000 mode=ABS was_armed=0
          <idle>-0       [001] d.h1. 102.000060: hrtimer_expire_entry: hrtimer=00000000aa function=hrtimer_wakeup now=102000059000
          <idle>-0       [001] d.h2. 102.000062: sched_wakeup: comm=rt-app pid=101 prio=120 target_cpu=001
          <idle>-0       [001] d..2. 102.000070: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rt-app next_pid=101 next_prio=120
";
        let (w, c) = read(text, &[101]);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(
            (w[0].soft_ns, w[0].hard_ns),
            (102_000_000_000, 102_000_050_000)
        );
        assert_eq!(w[0].late_ns(), 9_000);
        assert_eq!(
            (w[0].wakeup_ns, w[0].switch_in_ns),
            (102_000_062_000, 102_000_070_000)
        );
        assert_eq!(
            c,
            TimerPathCounts {
                other_lines: 2,
                malformed_lines: 0,
                incomplete: 1,
            }
        );
    }

    /// Trace timestamps are seconds and a fraction of up to nine digits (ftrace prints six;
    /// the `ns` clocks nine); anything else is not a timestamp, so the token is skipped.
    #[test]
    fn timestamps_are_seconds_and_up_to_nine_fraction_digits() {
        assert_eq!(parse_ts_ns("101.000063"), Some(101_000_063_000));
        assert_eq!(parse_ts_ns("7.123456789"), Some(7_123_456_789));
        assert_eq!(parse_ts_ns("0.5"), Some(500_000_000));
        for bad in [
            "101.",
            "101",
            "7.1234567890",
            "7.+5",
            "7.-5",
            "7. 5",
            "x.5",
            ".5",
        ] {
            assert_eq!(parse_ts_ns(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn an_empty_filter_keeps_every_thread_and_unfinished_timers_are_counted() {
        let (w, c) = read(TRACE, &[]);
        assert_eq!(w.len(), 2);
        // pid 77's timer never fired within the trace.
        assert_eq!(c.incomplete, 1);
    }

    #[test]
    fn the_statistics_split_idle_and_busy_cpus() {
        let (w, _) = read(TRACE, &[]);
        let s = TimerPathStats::of(&w);
        assert_eq!((s.wakes, s.fired_idle), (2, 1));
        assert_eq!(s.late_idle_p50_ns, Some(11_000));
        assert_eq!(s.late_busy_p50_ns, Some(8_000));
        assert_eq!(s.wakeup_to_run_idle_p50_ns, Some(2_000));
        assert_eq!(s.fire_to_wakeup_p50_ns, Some(2_000));
        assert_eq!(TimerPathStats::of(&[]), TimerPathStats::default());
        assert_eq!(percentile(&[5, 1, 3, 2, 4], 50), Some(3));
        assert_eq!(percentile(&[5, 1, 3, 2, 4], 90), Some(5));
        assert_eq!(percentile(&[5, 1, 3, 2, 4], 10), Some(1));
    }

    #[test]
    fn stretches_on_a_cpu_run_from_switch_in_to_switch_out() {
        let text = "\
          <idle>-0       [001] d..2. 1.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rt-app next_pid=101 next_prio=120
          rt-app-101     [001] d..2. 1.000150: sched_switch: prev_comm=rt-app prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d..2. 1.010000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rt-app next_pid=101 next_prio=120
          rt-app-101     [001] d..2. 1.010200: sched_switch: prev_comm=rt-app prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       [001] d..2. 1.020000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=rt-app next_pid=101 next_prio=120
";
        assert_eq!(on_cpu_ns(text, 101), vec![150_000, 200_000]);
        assert!(on_cpu_ns(text, 7).is_empty());
    }
}
