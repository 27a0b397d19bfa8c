//! Thread-level parallelism as seed 004 §1.1.3 defines it:
//! TLP = Σᵢ i·Cᵢ / (1 − C₀), where Cᵢ is the fraction of time exactly i CPUs run the target
//! tasks. A CPU is busy from a target task's switch-in until it switches out; idle and tasks
//! outside the target (and counted-not-logged tasks, which have no records) leave it idle.
//!
//! Dropped events are reconciled as the seed describes: when a task is seen switching in on one
//! CPU, or switching out of one, while it was last running on another, it migrated and the other
//! CPU became idle at that moment; a CPU that switches a task in while another task was still
//! running on it, or switches out a task it was not running, also missed an event. Each such
//! inference counts one dropped event.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use crate::log::AuditLog;
use crate::record::{AuditEventKind, AuditRecord};

/// Which tasks count as the target application.
#[derive(Debug, Clone, Default)]
pub struct TaskFilter {
    /// Thread ids; empty = no constraint.
    pub tids: HashSet<u32>,
    /// Process ids; empty = no constraint.
    pub tgids: HashSet<u32>,
    /// Exact command names; empty = no constraint.
    pub comms: HashSet<String>,
}

impl TaskFilter {
    pub fn all() -> Self {
        Self::default()
    }

    /// Every non-empty constraint must hold.
    pub fn matches(&self, r: &AuditRecord) -> bool {
        (self.tids.is_empty() || self.tids.contains(&r.tid))
            && (self.tgids.is_empty() || self.tgids.contains(&r.tgid))
            && (self.comms.is_empty() || self.comms.contains(&r.comm.to_string_lossy()))
    }
}

/// Default window of the TLP-over-time series: 100 ms, fine enough to see phases of seconds and
/// coarse enough that each window holds many scheduler ticks (4 ms at HZ=250).
pub const DEFAULT_WINDOW_NS: u64 = 100_000_000;

/// Most windows of one report: bounds memory and time for any input (a corrupt timestamp can
/// make the span enormous); 100,000 windows of 100 ms cover 2.8 hours. Longer spans get wider
/// windows (`TlpReport::window_ns` says which).
pub const MAX_WINDOWS: u64 = 100_000;
/// Most window × busy-count cells of one report (each an f64 of `busy_cpus_fraction`): with many
/// CPUs the window count shrinks so a report stays under about 8 MB.
pub const MAX_WINDOW_CELLS: u64 = 1_000_000;

/// TLP of one window of time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TlpWindow {
    pub start_ns: u64,
    pub end_ns: u64,
    /// `None` when no target task ran in the window.
    pub tlp: Option<f64>,
    /// C₀ … Cₙ of the window.
    pub busy_cpus_fraction: Vec<f64>,
}

/// The result of the analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TlpReport {
    /// TLP over the whole span; `None` when no target task ran.
    pub tlp: Option<f64>,
    /// Cᵢ keyed by i ("0", "1", …, up to the CPU count).
    pub busy_cpus_fraction: BTreeMap<String, f64>,
    /// Events inferred missing and reconciled (seed 004).
    pub dropped_events: u64,
    /// Records missing by sequence number (overwritten or lost by the kernel).
    pub lost_records: u64,
    pub cpus: u16,
    pub span_ns: u64,
    /// Time with at least one target task running.
    pub busy_ns: u64,
    pub window_ns: u64,
    pub windows: Vec<TlpWindow>,
    /// (time, busy CPUs) at every change, for counter tracks.
    #[serde(skip)]
    pub steps: Vec<(u64, u16)>,
}

impl TlpReport {
    /// Seed 004's figure 1.3: the share of the busy time (at least one target task running)
    /// during which exactly i CPUs ran target tasks, keyed by i ("1" … up to the CPU count):
    /// Cᵢ / (1 − C₀). Empty when no target task ran; otherwise the shares sum to 1.
    #[must_use]
    pub fn busy_share(&self) -> BTreeMap<String, f64> {
        let at = |i: u16| {
            self.busy_cpus_fraction
                .get(&i.to_string())
                .copied()
                .unwrap_or(0.0)
        };
        // The busy time as the sum of its parts rather than 1 − C₀: each share is then at most 1
        // in floating point too.
        let busy: f64 = (1..=self.cpus).map(at).sum();
        if self.tlp.is_none() || busy <= 0.0 {
            return BTreeMap::new();
        }
        (1..=self.cpus)
            .map(|i| (i.to_string(), at(i) / busy))
            .collect()
    }
}

struct Accum {
    hist_ns: Vec<u64>,
}

impl Accum {
    fn new(cpus: u16) -> Self {
        Accum {
            hist_ns: vec![0; usize::from(cpus) + 1],
        }
    }
    fn add(&mut self, busy: u16, dt: u64) {
        self.hist_ns[usize::from(busy)] += dt;
    }
    fn fractions(&self) -> Vec<f64> {
        let total: u64 = self.hist_ns.iter().sum();
        if total == 0 {
            return vec![0.0; self.hist_ns.len()];
        }
        self.hist_ns
            .iter()
            .map(|&t| t as f64 / total as f64)
            .collect()
    }
    fn tlp(&self) -> Option<f64> {
        let busy: u64 = self.hist_ns[1..].iter().sum();
        if busy == 0 {
            return None;
        }
        let weighted: f64 = self
            .hist_ns
            .iter()
            .enumerate()
            .map(|(i, &t)| i as f64 * t as f64)
            .sum();
        Some(weighted / busy as f64)
    }
}

/// [`analyze`] over a whole log: its rings are the CPUs and its sequence-number gaps
/// ([`crate::log::LogStats::gap_records`]) the lost records.
pub fn analyze_log(log: &AuditLog, filter: &TaskFilter, window_ns: u64) -> TlpReport {
    analyze(
        &log.records,
        log.header.rings,
        filter,
        window_ns,
        crate::log::stats(log).gap_records,
    )
}

/// Computes TLP over `records` (any order; they are time-ordered here) on `cpus` CPUs.
/// `lost_records` is passed through into the report (from [`crate::log::stats`]).
pub fn analyze(
    records: &[AuditRecord],
    cpus: u16,
    filter: &TaskFilter,
    window_ns: u64,
    lost_records: u64,
) -> TlpReport {
    let cpus = cpus.max(1);
    let recs = crate::time_ordered(records);
    let span = match (recs.first(), recs.last()) {
        (Some(a), Some(b)) => b.ts_ns - a.ts_ns,
        _ => 0,
    };
    let max_windows = (MAX_WINDOW_CELLS / (u64::from(cpus) + 1)).clamp(1, MAX_WINDOWS);
    let window_ns = window_ns.max(1).max(span.div_ceil(max_windows));
    let mut running: Vec<Option<(u32, bool)>> = vec![None; usize::from(cpus)];
    let mut on_cpu: HashMap<u32, u16> = HashMap::new();
    let mut dropped = 0u64;
    let mut total = Accum::new(cpus);
    let mut windows = Vec::new();
    let t0 = recs.first().map_or(0, |r| r.ts_ns);
    let t_end = recs.last().map_or(0, |r| r.ts_ns);
    let mut win = Accum::new(cpus);
    let mut win_start = t0;
    let mut last_t = t0;
    let mut steps = Vec::new();
    let busy_of = |running: &Vec<Option<(u32, bool)>>| {
        running
            .iter()
            .filter(|s| matches!(s, Some((_, true))))
            .count() as u16
    };
    let mut busy = 0u16;
    steps.push((t0, 0));

    let advance = |to: u64,
                   busy: u16,
                   total: &mut Accum,
                   win: &mut Accum,
                   win_start: &mut u64,
                   windows: &mut Vec<TlpWindow>,
                   last_t: &mut u64| {
        loop {
            let wend = win_start.saturating_add(window_ns);
            if to < wend || wend == *win_start {
                break;
            }
            let dt = wend.saturating_sub(*last_t);
            total.add(busy, dt);
            win.add(busy, dt);
            windows.push(TlpWindow {
                start_ns: *win_start,
                end_ns: wend,
                tlp: win.tlp(),
                busy_cpus_fraction: win.fractions(),
            });
            *win = Accum::new(cpus);
            *win_start = wend;
            *last_t = wend;
        }
        let dt = to.saturating_sub(*last_t);
        total.add(busy, dt);
        win.add(busy, dt);
        *last_t = to.max(*last_t);
    };

    for r in &recs {
        advance(
            r.ts_ns,
            busy,
            &mut total,
            &mut win,
            &mut win_start,
            &mut windows,
            &mut last_t,
        );
        let cpu = usize::from(r.cpu.min(cpus - 1));
        match r.kind {
            AuditEventKind::SwitchIn => {
                if let Some((other, _)) = running[cpu] {
                    if other != r.tid {
                        dropped += 1;
                        on_cpu.remove(&other);
                    }
                }
                if let Some(&prev_cpu) = on_cpu.get(&r.tid) {
                    let pc = usize::from(prev_cpu);
                    if pc != cpu && matches!(running[pc], Some((t, _)) if t == r.tid) {
                        // Seen running elsewhere without switching out there: it migrated and
                        // the old CPU became idle (seed 004's reconciliation).
                        dropped += 1;
                        running[pc] = None;
                    }
                }
                running[cpu] = Some((r.tid, filter.matches(r)));
                on_cpu.insert(r.tid, cpu as u16);
            }
            AuditEventKind::Preempt | AuditEventKind::Block => {
                // Still running on another CPU as far as the records tell: it migrated here
                // (its switch-in was lost) and that CPU became idle.
                let elsewhere = on_cpu
                    .get(&r.tid)
                    .map(|&c| usize::from(c))
                    .filter(|&pc| pc != cpu && matches!(running[pc], Some((t, _)) if t == r.tid));
                match running[cpu] {
                    Some((t, _)) if t == r.tid => {}
                    Some((other, _)) => {
                        dropped += 1;
                        on_cpu.remove(&other);
                    }
                    // Nothing known running: either the recording just began (the task was
                    // running before it) or its switch-in was lost.
                    None => {
                        if elsewhere.is_some() {
                            dropped += 1;
                        }
                    }
                }
                if let Some(pc) = elsewhere {
                    running[pc] = None;
                }
                running[cpu] = None;
                on_cpu.remove(&r.tid);
            }
            AuditEventKind::Unblock | AuditEventKind::Terminate => {}
        }
        let b = busy_of(&running);
        if b != busy {
            busy = b;
            steps.push((r.ts_ns, b));
        }
    }
    if last_t > win_start || windows.is_empty() && !recs.is_empty() {
        windows.push(TlpWindow {
            start_ns: win_start,
            end_ns: last_t,
            tlp: win.tlp(),
            busy_cpus_fraction: win.fractions(),
        });
    }
    let fr = total.fractions();
    TlpReport {
        tlp: total.tlp(),
        busy_cpus_fraction: fr
            .iter()
            .enumerate()
            .map(|(i, f)| (i.to_string(), *f))
            .collect(),
        dropped_events: dropped,
        lost_records,
        cpus,
        span_ns: t_end - t0,
        busy_ns: total.hist_ns[1..].iter().sum(),
        window_ns,
        windows,
        steps,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    pub fn r(ts: u64, cpu: u16, tid: u32, kind: AuditEventKind) -> AuditRecord {
        AuditRecord::synthetic(ts, cpu, tid, kind)
    }

    use AuditEventKind::{Block, Preempt, SwitchIn};

    /// `analyze` over every task, with the default window, from the first record.
    fn every_task(recs: &[AuditRecord], cpus: u16) -> TlpReport {
        analyze(recs, cpus, &TaskFilter::all(), DEFAULT_WINDOW_NS, 0)
    }

    /// `every_task`'s count of lost events and its busy time.
    fn dropped_and_busy_ns(recs: &[AuditRecord], cpus: u16) -> (u64, u64) {
        let rep = every_task(recs, cpus);
        (rep.dropped_events, rep.busy_ns)
    }

    const S_NS: u64 = 1_000_000_000;

    /// CPU0 runs task 1 for 0..6 s, CPU1 runs task 2 for 0..3 s.
    fn two_busy_then_one() -> Vec<AuditRecord> {
        vec![
            r(0, 0, 1, SwitchIn),
            r(0, 1, 2, SwitchIn),
            r(3 * S_NS, 1, 2, Block),
            r(6 * S_NS, 0, 1, Block),
        ]
    }

    /// `got` within 1e-12 of `want` (a sum of exact binary fractions may round).
    #[track_caller]
    fn assert_near(got: f64, want: f64) {
        assert!((got - want).abs() < 1e-12, "{got} is not {want}");
    }

    #[test]
    fn two_then_one_busy_gives_one_and_a_half() {
        // TLP = (2·3 + 1·3)/6 = 1.5.
        let rep = analyze(&two_busy_then_one(), 2, &TaskFilter::all(), S_NS, 0);
        assert_near(rep.tlp.unwrap(), 1.5);
        assert_eq!(rep.busy_cpus_fraction["2"], 0.5);
        assert_eq!(rep.busy_cpus_fraction["1"], 0.5);
        assert_eq!(rep.busy_cpus_fraction["0"], 0.0);
        assert_eq!(rep.windows.len(), 6);
        assert_eq!(rep.windows[0].tlp, Some(2.0));
        assert_eq!(rep.windows[5].tlp, Some(1.0));
        assert_eq!(rep.dropped_events, 0);
    }

    #[test]
    fn a_huge_span_widens_the_windows_instead_of_exhausting_memory() {
        let recs = vec![r(0, 0, 1, SwitchIn), r(u64::MAX / 2, 0, 1, Block)];
        let rep = analyze(&recs, 1, &TaskFilter::all(), 1, 0);
        assert!(rep.windows.len() as u64 <= MAX_WINDOWS + 1);
        assert_eq!(rep.tlp, Some(1.0));
        let recs = vec![r(u64::MAX - 10, 0, 1, SwitchIn), r(u64::MAX, 0, 1, Block)];
        let rep = analyze(&recs, 1, &TaskFilter::all(), 1_000_000, 0);
        assert_eq!(rep.tlp, Some(1.0));
    }

    #[test]
    fn idle_time_is_excluded_and_filter_applies() {
        let recs = vec![
            r(0, 0, 1, SwitchIn),
            r(10, 0, 1, Block),
            r(10, 1, 9, SwitchIn),
            r(100, 1, 9, Block),
        ];
        let mut f = TaskFilter::all();
        f.tids.insert(1);
        let rep = analyze(&recs, 2, &f, DEFAULT_WINDOW_NS, 0);
        assert_eq!(rep.tlp, Some(1.0));
        assert_near(rep.busy_cpus_fraction["0"], 0.9);
    }

    #[test]
    fn migration_without_switch_out_is_reconciled_and_counted() {
        // Task 1's switch-out on CPU0 is lost; it appears on CPU1 at t=50.
        let recs = vec![
            r(0, 0, 1, SwitchIn),
            r(50, 1, 1, SwitchIn),
            r(100, 1, 1, Block),
        ];
        let rep = every_task(&recs, 2);
        assert_eq!(rep.dropped_events, 1);
        assert_eq!(
            rep.tlp,
            Some(1.0),
            "CPU0 became idle when the task showed up on CPU1"
        );
    }

    /// A task switching in again on the CPU it already runs on lost nothing that the records
    /// can tell (its switch-out and switch-in were a pair): nothing is counted as dropped and
    /// the CPU stays busy.
    #[test]
    fn a_repeated_switch_in_on_the_same_cpu_drops_nothing() {
        let recs = vec![
            r(0, 0, 1, SwitchIn),
            r(40, 0, 1, SwitchIn),
            r(100, 0, 1, Block),
        ];
        let rep = every_task(&recs, 1);
        assert_eq!(rep.dropped_events, 0);
        assert_eq!(rep.tlp, Some(1.0));
        assert_eq!(rep.busy_ns, 100);
    }

    /// A record from a CPU past the count given (a log read with fewer CPUs than it was
    /// recorded on) is counted on the last CPU, not out of bounds.
    #[test]
    fn a_cpu_past_the_count_is_counted_on_the_last() {
        let recs = vec![
            r(10, 0, 1, SwitchIn),
            r(10, 7, 2, SwitchIn),
            r(110, 7, 2, Block),
            r(110, 0, 1, Block),
        ];
        let rep = every_task(&recs, 2);
        assert_eq!(rep.dropped_events, 0);
        assert_eq!(rep.tlp, Some(2.0));
        assert_eq!((rep.span_ns, rep.busy_ns), (100, 100));
    }

    /// One record makes one window of no length; no records, none. The span runs from the
    /// first record to the last, wherever the clock started.
    #[test]
    fn a_single_record_makes_one_empty_window_and_none_makes_none() {
        let rep = analyze(&[r(500, 0, 1, SwitchIn)], 1, &TaskFilter::all(), 100, 0);
        assert_eq!(rep.windows.len(), 1);
        assert_eq!((rep.windows[0].start_ns, rep.windows[0].end_ns), (500, 500));
        assert_eq!((rep.span_ns, rep.tlp), (0, None));
        let rep = analyze(&[], 1, &TaskFilter::all(), 100, 0);
        assert!(rep.windows.is_empty());
        assert_eq!((rep.span_ns, rep.tlp), (0, None));
    }

    /// With many CPUs the window count is capped at `MAX_WINDOW_CELLS` cells over the busy
    /// counts 0..=cpus, so the windows widen: 99 CPUs over 1 s allow 10,000 windows of 100 µs.
    #[test]
    fn many_cpus_widen_the_windows_to_bound_the_cells() {
        let recs = vec![r(7, 0, 1, SwitchIn), r(7 + S_NS, 0, 1, Block)];
        let rep = analyze(&recs, 99, &TaskFilter::all(), 1, 0);
        assert_eq!(rep.window_ns, 100_000);
        assert_eq!(rep.windows.len(), 10_000);
        assert_eq!(rep.span_ns, S_NS);
        assert_eq!(rep.tlp, Some(1.0));
    }

    #[test]
    fn a_switch_in_over_another_task_counts_one_dropped_event() {
        // Task 2 switches in on CPU0 while task 1 still runs there: task 1's switch-out was
        // lost. Task 1 then shows up on CPU1: it is no longer running on CPU0, so that is not
        // a second inference (no migration to reconcile).
        let recs = vec![
            r(0, 0, 1, SwitchIn),
            r(40, 0, 2, SwitchIn),
            r(60, 1, 1, SwitchIn),
            r(100, 0, 2, Block),
            r(100, 1, 1, Block),
        ];
        let rep = every_task(&recs, 2);
        assert_eq!(rep.dropped_events, 1);
        // One CPU busy for 0..60, two for 60..100: TLP = (60 + 2·40) / 100.
        assert_near(rep.busy_cpus_fraction["1"], 0.6);
        assert_near(rep.busy_cpus_fraction["2"], 0.4);
        assert_near(rep.tlp.unwrap(), 1.4);
    }

    #[test]
    fn a_switch_out_by_a_task_not_running_there_idles_the_cpu() {
        // CPU0 runs task 1; at 50 task 2 switches out there (task 1's switch-out and task 2's
        // switch-in were lost): one dropped event, and CPU0 is idle from 50 on.
        let recs = vec![
            r(0, 0, 1, SwitchIn),
            r(50, 0, 2, Preempt),
            r(100, 0, 3, SwitchIn),
            r(100, 0, 3, Block),
        ];
        let rep = every_task(&recs, 1);
        assert_eq!(rep.dropped_events, 1);
        assert_near(rep.busy_cpus_fraction["1"], 0.5);
        assert_near(rep.busy_cpus_fraction["0"], 0.5);
        assert_eq!(rep.busy_ns, 50);
        // Task 1 is no longer known to run anywhere: its own switch-out later is from a CPU
        // with nothing running, which is a second lost event only if it was still listed.
        let recs = vec![r(0, 0, 1, SwitchIn), r(50, 0, 2, Block), r(70, 0, 1, Block)];
        assert_eq!(dropped_and_busy_ns(&recs, 1), (1, 50));
    }

    #[test]
    fn a_switch_out_on_another_cpu_idles_the_cpu_it_was_running_on() {
        // Task 1 runs on CPU0 and blocks on CPU1, where nothing was known to run: its move
        // (switch-out on CPU0, switch-in on CPU1) was lost, and CPU0 idles from then on.
        let recs = vec![
            r(0, 0, 1, SwitchIn),
            r(50, 1, 1, Block),
            r(100, 1, 3, SwitchIn),
            r(100, 1, 3, Block),
        ];
        assert_eq!(dropped_and_busy_ns(&recs, 2), (1, 50));
        // A task displaced by a lost switch-out is no longer running anywhere: its later
        // switch-out on an idle CPU is the start-of-recording case, not a second inference.
        let recs = vec![
            r(0, 0, 1, SwitchIn),
            r(40, 0, 2, SwitchIn),
            r(60, 1, 1, Block),
            r(100, 0, 2, Block),
        ];
        assert_eq!(dropped_and_busy_ns(&recs, 2), (1, 100));
    }

    #[test]
    fn preempt_by_untracked_task_leaves_cpu_idle() {
        let recs = vec![
            r(0, 0, 1, SwitchIn),
            r(40, 0, 1, Preempt),
            r(60, 0, 1, SwitchIn),
            r(100, 0, 1, Block),
        ];
        let rep = every_task(&recs, 1);
        assert_near(rep.busy_cpus_fraction["1"], 0.8);
    }

    #[test]
    fn busy_share_leaves_out_the_idle_time() {
        // Two busy CPUs for 3 s, one for 3 s, none for 4 s: shares ½ and ½ of the busy 6 s.
        let mut recs = two_busy_then_one();
        recs.push(r(10 * S_NS, 0, 3, SwitchIn));
        let mut f = TaskFilter::all();
        f.tids.extend([1, 2]);
        let rep = analyze(&recs, 2, &f, S_NS, 0);
        assert_near(rep.busy_cpus_fraction["0"], 0.4);
        let share = rep.busy_share();
        assert_eq!(share.keys().collect::<Vec<_>>(), ["1", "2"]);
        assert_near(share["1"], 0.5);
        assert_near(share["2"], 0.5);
        let none = analyze(
            &recs,
            2,
            &TaskFilter {
                tids: [9].into(),
                ..TaskFilter::all()
            },
            S_NS,
            0,
        );
        assert!(none.busy_share().is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]
        /// For any record stream: fractions sum to 1 (or all zero), TLP lies in [1, cpus].
        #[test]
        fn fractions_and_bounds(ev in prop::collection::vec((0u64..1000, 0u16..4, 1u32..6, 0u8..5), 1..200)) {
            let recs: Vec<_> = ev.iter().map(|&(t, c, tid, k)| r(t, c, tid, AuditEventKind::ALL[k as usize])).collect();
            let rep = analyze(&recs, 4, &TaskFilter::all(), 100, 0);
            let sum: f64 = rep.busy_cpus_fraction.values().sum();
            prop_assert!(sum == 0.0 || (sum - 1.0).abs() < 1e-9);
            let share = rep.busy_share();
            let share_sum: f64 = share.values().sum();
            prop_assert!(share.is_empty() == rep.tlp.is_none());
            prop_assert!(share.is_empty() || (share_sum - 1.0).abs() < 1e-9);
            prop_assert!(share.values().all(|f| (0.0..=1.0 + 1e-9).contains(f)));
            if let Some(t) = rep.tlp {
                prop_assert!((1.0 - 1e-9..=4.0 + 1e-9).contains(&t));
            }
            for w in &rep.windows {
                if let Some(t) = w.tlp { prop_assert!((1.0 - 1e-9..=4.0 + 1e-9).contains(&t)); }
            }
        }
    }
}
