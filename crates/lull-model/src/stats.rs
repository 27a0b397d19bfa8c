//! Summary statistics every report shares, so live, simulated and audited latencies are computed
//! the same way.

/// The nearest-rank percentile of `sorted` (ascending): the smallest sample with at least
/// `percent` % of the samples at or below it. Integer arithmetic, so p99 of 100 samples is the
/// 99th exactly. `None` for no samples; `percent` above 100 is taken as 100.
#[must_use]
pub fn nearest_rank<T: Copy>(sorted: &[T], percent: u32) -> Option<T> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let p = percent.min(100) as usize;
    let rank = (p * n).div_ceil(100).max(1);
    Some(sorted[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_exact() {
        let s: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&s, 50), Some(50));
        assert_eq!(nearest_rank(&s, 99), Some(99));
        assert_eq!(nearest_rank(&s, 100), Some(100));
        assert_eq!(nearest_rank(&s, 0), Some(1));
        assert_eq!(nearest_rank(&[7], 99), Some(7));
        assert_eq!(nearest_rank(&[1, 2, 3], 50), Some(2));
        assert_eq!(nearest_rank::<u64>(&[], 50), None);
    }
}
