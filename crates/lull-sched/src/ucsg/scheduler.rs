//! Seed 001 §3.2.2: thread allocation and thread migration by sensitivity and workload. (Thread
//! prioritization is [`super::Sensitivity::nice`], applied whenever a state changes.)
//!
//! Cores are the active cluster's online cores by slot, 0-based. Two choices the seed leaves
//! open are made deterministic: ties between cores go to the lowest slot, and ties between
//! threads of equal sensitivity (the seed breaks them at random) go to the one that arrived on
//! its core first. A thread whose move would overshoot the balance is passed over and the next
//! candidate tried (the seed moves "one by one … until immediately before" the source falls
//! below the destination).

use crate::ucsg::sensitivity::Sensitivity;

/// A thread on a core, as allocation and migration see it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Resident<K> {
    pub thread: K,
    pub sensitivity: Sensitivity,
    /// Its workload: cycles it ran in the last sampling period (§3.3, workload estimation).
    pub cycles: u64,
    /// When it arrived on its core (a counter), for FIFO order.
    pub arrived: u64,
}

/// A core's sums (§3.2.2: total sensitivity, total workload).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct CoreTotals {
    pub sensitivity: u32,
    pub cycles: u64,
}

impl CoreTotals {
    /// The sums over `residents`.
    #[must_use]
    pub fn of<K>(residents: &[Resident<K>]) -> CoreTotals {
        residents
            .iter()
            .fold(CoreTotals::default(), |t, r| CoreTotals {
                sensitivity: t.sensitivity + r.sensitivity.value(),
                cycles: t.cycles + r.cycles,
            })
    }
}

/// Thread allocation: the core a newly forked thread (or one whose core went off) goes to — the
/// least total sensitivity for medium and high threads (more resources for them), the least total
/// workload for low ones (balanced utilisation). `None` with no cores.
#[must_use]
pub fn allocate(s: Sensitivity, cores: &[CoreTotals]) -> Option<usize> {
    let key = |c: &CoreTotals| match s {
        Sensitivity::Low => c.cycles,
        Sensitivity::Medium | Sensitivity::High => u64::from(c.sensitivity),
    };
    (0..cores.len()).min_by_key(|&i| (key(&cores[i]), i))
}

/// A thread moved from one core slot to another.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Move<K> {
    pub thread: K,
    pub from: usize,
    pub to: usize,
}

/// The slots with the largest and the smallest value of `key` (lowest slot on ties), if they
/// differ.
fn extremes(n: usize, key: impl Fn(usize) -> u64) -> Option<(usize, usize)> {
    let max = (0..n).max_by_key(|&i| (key(i), std::cmp::Reverse(i)))?;
    let min = (0..n).min_by_key(|&i| (key(i), i))?;
    (max != min).then_some((max, min))
}

/// Moves candidates of `cores[src]`, taken in `order`, to `cores[dst]` while the source's total
/// (by `weight`) stays at least the destination's.
fn balance<K: Copy + PartialEq>(
    cores: &mut [Vec<Resident<K>>],
    (src, dst): (usize, usize),
    order: &mut dyn FnMut(&Resident<K>, &Resident<K>) -> std::cmp::Ordering,
    weight: fn(&Resident<K>) -> u64,
    skip: &[K],
    moves: &mut Vec<Move<K>>,
    clock: &mut u64,
) {
    let mut src_total: u64 = cores[src].iter().map(weight).sum();
    let mut dst_total: u64 = cores[dst].iter().map(weight).sum();
    let mut candidates: Vec<Resident<K>> = cores[src]
        .iter()
        .filter(|r| !skip.contains(&r.thread))
        .copied()
        .collect();
    candidates.sort_by(|a, b| order(a, b));
    for c in candidates {
        let w = weight(&c);
        if w == 0 || src_total - w < dst_total + w {
            continue;
        }
        src_total -= w;
        dst_total += w;
        cores[src].retain(|r| r.thread != c.thread);
        *clock += 1;
        cores[dst].push(Resident {
            arrived: *clock,
            ..c
        });
        moves.push(Move {
            thread: c.thread,
            from: src,
            to: dst,
        });
    }
}

/// Thread migration at a sampling period: first from the core with the most total sensitivity to
/// the one with the least, higher sensitivity first; then from the most total workload to the
/// least, lower sensitivity first in FIFO order, leaving alone what the first step moved.
/// `cores` is updated; `clock` numbers arrivals; the moves are appended to `moves`.
pub fn migrate<K: Copy + PartialEq>(
    cores: &mut [Vec<Resident<K>>],
    clock: &mut u64,
    moves: &mut Vec<Move<K>>,
) {
    let first = moves.len();
    let sens = |r: &Resident<K>| u64::from(r.sensitivity.value());
    if let Some((src, dst)) = extremes(cores.len(), |i| {
        CoreTotals::of(&cores[i]).sensitivity.into()
    }) {
        balance(
            cores,
            (src, dst),
            &mut |a, b| {
                b.sensitivity
                    .cmp(&a.sensitivity)
                    .then(a.arrived.cmp(&b.arrived))
            },
            sens,
            &[],
            moves,
            clock,
        );
    }
    let moved: Vec<K> = moves[first..].iter().map(|m| m.thread).collect();
    if let Some((src, dst)) = extremes(cores.len(), |i| CoreTotals::of(&cores[i]).cycles) {
        balance(
            cores,
            (src, dst),
            &mut |a, b| {
                a.sensitivity
                    .cmp(&b.sensitivity)
                    .then(a.arrived.cmp(&b.arrived))
            },
            |r| r.cycles,
            &moved,
            moves,
            clock,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Sensitivity::{High, Low, Medium};

    fn r(thread: u32, sensitivity: Sensitivity, mcycles: u64, arrived: u64) -> Resident<u32> {
        Resident {
            thread,
            sensitivity,
            cycles: mcycles * 1_000_000,
            arrived,
        }
    }

    fn ids(core: &[Resident<u32>]) -> Vec<u32> {
        core.iter().map(|r| r.thread).collect()
    }

    #[test]
    fn allocation_by_sensitivity_or_by_workload() {
        let cores = [
            CoreTotals {
                sensitivity: 2,
                cycles: 90,
            },
            CoreTotals {
                sensitivity: 3,
                cycles: 10,
            },
            CoreTotals {
                sensitivity: 2,
                cycles: 50,
            },
        ];
        // Medium and high: least total sensitivity, lowest slot on a tie.
        assert_eq!(allocate(Medium, &cores), Some(0));
        assert_eq!(allocate(High, &cores), Some(0));
        // Low: least total workload.
        assert_eq!(allocate(Low, &cores), Some(1));
        assert_eq!(allocate(Low, &[]), None);
    }

    #[test]
    fn the_seeds_motivating_example_gives_the_social_app_a_core_of_its_own() {
        // §2.2, figure 2(b): the video threads V1, V2 (now behind: low) on cores 0 and 1, the
        // social thread S (in front: medium) forked onto core 0 next to V1. Step 1 moves V1 to
        // core 1 (3 vs 1 → 2 vs 2), S keeps core 0 alone; step 2 leaves V2 where it is (moving
        // it would leave core 1 below core 0).
        let mut cores = vec![
            vec![r(1, Low, 60, 1), r(3, Medium, 60, 3)],
            vec![r(2, Low, 60, 2)],
        ];
        let mut clock = 3;
        let mut moves = Vec::new();
        migrate(&mut cores, &mut clock, &mut moves);
        assert_eq!(
            moves,
            vec![Move {
                thread: 1,
                from: 0,
                to: 1
            }]
        );
        assert_eq!(ids(&cores[0]), vec![3]);
        assert_eq!(ids(&cores[1]), vec![2, 1]);
    }

    #[test]
    fn sensitivity_first_then_workload_without_moving_back() {
        // A high thread among low ones on core 0, core 1 empty: the high one leaves first
        // (6 → 3 vs 3); then the workload step moves low threads, oldest first, while core 0
        // stays at least as loaded as core 1 — never the thread the first step moved.
        let mut cores = vec![
            vec![
                r(10, Low, 100, 1),
                r(11, Low, 100, 2),
                r(12, High, 20, 3),
                r(13, Low, 100, 4),
            ],
            vec![],
        ];
        let mut clock = 4;
        let mut moves = Vec::new();
        migrate(&mut cores, &mut clock, &mut moves);
        assert_eq!(moves[0].thread, 12);
        // After step 1: core 0 = 300 Mcycles, core 1 = 20. Move 10: 200 vs 120; 11: 100 vs 220
        // would undershoot, as would 13.
        assert_eq!(
            moves.iter().map(|m| m.thread).collect::<Vec<_>>(),
            vec![12, 10]
        );
        assert_eq!(ids(&cores[0]), vec![11, 13]);
        assert_eq!(ids(&cores[1]), vec![12, 10]);
        assert!(cores[1][1].arrived > 4);
    }

    #[test]
    fn a_lone_thread_or_a_balanced_pair_stays() {
        let mut clock = 0;
        let mut moves = Vec::new();
        let mut cores = vec![vec![r(1, High, 100, 0)], vec![]];
        migrate(&mut cores, &mut clock, &mut moves);
        assert!(moves.is_empty());
        let mut cores = vec![vec![r(1, Medium, 50, 0)], vec![r(2, Medium, 50, 0)]];
        migrate(&mut cores, &mut clock, &mut moves);
        assert!(moves.is_empty());
        let mut one: Vec<Vec<Resident<u32>>> = vec![vec![r(1, Low, 5, 0), r(2, Low, 5, 0)]];
        migrate(&mut one, &mut clock, &mut moves);
        assert!(moves.is_empty());
    }

    #[test]
    fn a_passed_over_thread_does_not_stop_a_smaller_one() {
        // ZIP (100) and FTP (5) behind on core 0, an idle medium thread on core 1 (sensitivity
        // balanced): ZIP cannot move without undershooting, FTP can.
        let mut cores = vec![
            vec![r(1, Low, 100, 1), r(2, Low, 5, 2)],
            vec![r(3, Medium, 0, 3)],
        ];
        let mut clock = 2;
        let mut moves = Vec::new();
        migrate(&mut cores, &mut clock, &mut moves);
        assert_eq!(moves.iter().map(|m| m.thread).collect::<Vec<_>>(), vec![2]);
    }
}
