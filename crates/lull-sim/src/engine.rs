//! The discrete-event engine: a priority queue of timed events.
//!
//! Time is integer nanoseconds. Events due at the same instant come out in the order they were
//! scheduled (FIFO by insertion), so a run depends only on its inputs and seed. Randomness comes
//! from a seedable [`SplitMix64`] owned by the engine.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

pub use lull_workload::rng::SplitMix64;

#[derive(Debug)]
struct Entry<E> {
    at_ns: u64,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at_ns == other.at_ns && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // BinaryHeap is a max-heap: invert so the earliest (then first-inserted) entry is on top.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at_ns
            .cmp(&self.at_ns)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// A deterministic event queue with a clock.
#[derive(Debug)]
pub struct Engine<E> {
    now_ns: u64,
    next_seq: u64,
    heap: BinaryHeap<Entry<E>>,
    processed: u64,
    rng: SplitMix64,
}

impl<E> Engine<E> {
    /// An engine at time 0 whose random stream starts from `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Engine<E> {
        Engine {
            now_ns: 0,
            next_seq: 0,
            heap: BinaryHeap::with_capacity(256),
            processed: 0,
            rng: SplitMix64::new(seed),
        }
    }

    /// The current simulated time.
    #[inline]
    #[must_use]
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Schedules `event` at `at_ns`; a time in the past is clamped to now (an event can never run
    /// before the one that scheduled it).
    #[inline]
    pub fn schedule_at(&mut self, at_ns: u64, event: E) {
        let at_ns = at_ns.max(self.now_ns);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at_ns, seq, event });
    }

    /// Schedules `event` `delay_ns` from now.
    #[inline]
    pub fn schedule_in(&mut self, delay_ns: u64, event: E) {
        self.schedule_at(self.now_ns.saturating_add(delay_ns), event);
    }

    /// Takes the next event and advances the clock to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, E)> {
        let e = self.heap.pop()?;
        self.now_ns = e.at_ns;
        self.processed += 1;
        Some((e.at_ns, e.event))
    }

    /// Time of the next event, if any.
    #[must_use]
    pub fn peek_time_ns(&self) -> Option<u64> {
        self.heap.peek().map(|e| e.at_ns)
    }

    /// Events taken so far.
    #[must_use]
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Events waiting.
    #[must_use]
    pub fn pending(&self) -> usize {
        self.heap.len()
    }

    /// The engine's random stream.
    pub fn rng(&mut self) -> &mut SplitMix64 {
        &mut self.rng
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_order_then_insertion_order() {
        let mut e = Engine::new(1);
        e.schedule_at(30, 'c');
        e.schedule_at(10, 'a');
        e.schedule_at(30, 'd');
        e.schedule_at(10, 'b');
        e.schedule_at(20, 'x');
        let got: Vec<_> = std::iter::from_fn(|| e.pop()).collect();
        assert_eq!(
            got,
            vec![(10, 'a'), (10, 'b'), (20, 'x'), (30, 'c'), (30, 'd')]
        );
        assert_eq!(e.processed(), 5);
        assert_eq!(e.now_ns(), 30);
    }

    #[test]
    fn the_past_is_clamped_to_now() {
        let mut e = Engine::new(1);
        e.schedule_at(100, 1);
        assert_eq!(e.pop(), Some((100, 1)));
        e.schedule_at(50, 2);
        e.schedule_in(0, 3);
        assert_eq!(e.pop(), Some((100, 2)));
        assert_eq!(e.pop(), Some((100, 3)));
        assert_eq!(e.pop(), None);
    }

    #[test]
    fn the_random_stream_depends_only_on_the_seed() {
        let mut a: Engine<()> = Engine::new(7);
        let mut b: Engine<()> = Engine::new(7);
        let mut c: Engine<()> = Engine::new(8);
        let va: Vec<u64> = (0..4).map(|_| a.rng().next_u64()).collect();
        let vb: Vec<u64> = (0..4).map(|_| b.rng().next_u64()).collect();
        let vc: Vec<u64> = (0..4).map(|_| c.rng().next_u64()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
    }
}
