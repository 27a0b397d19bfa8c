//! The table's arithmetic: median, min and max of the repetitions, speedup against baseline,
//! the spread of the threads' finish times. Pure.

use serde::Serialize;

/// Median, min and max of a row's completion times, seconds.
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// The summary of `values` (`None` when empty). An even count's median is the mean of the two
/// middle values.
#[must_use]
pub fn summary(values: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Summary {
        median,
        min: v[0],
        max: v[n - 1],
    })
}

/// How much faster a run of `t_s` is than the baseline's `baseline_s`, percent: the baseline's
/// time over this one's, minus one (seed 004 figure 3.9's "speedup"; 14 % = the baseline takes
/// 1.14 times as long). `None` for a zero or negative time.
#[must_use]
pub fn speedup_pct(baseline_s: f64, t_s: f64) -> Option<f64> {
    (baseline_s > 0.0 && t_s > 0.0).then(|| (baseline_s / t_s - 1.0) * 100.0)
}

/// The spread of the threads' finish times, seconds: last minus first (`None` for no threads).
#[must_use]
pub fn spread_s(finish_ns: &[u64]) -> Option<f64> {
    let max = finish_ns.iter().max()?;
    let min = finish_ns.iter().min()?;
    Some((max - min) as f64 / 1e9)
}

/// The order in which repetition `rep` runs `arms` arms: rotated by one each repetition, so a
/// drift of the machine's state falls on every arm alike.
#[must_use]
pub fn rotation(arms: usize, rep: usize) -> Vec<usize> {
    (0..arms).map(|i| (i + rep) % arms.max(1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_odd_and_even_counts() {
        let s = summary(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert_eq!(summary(&[1.0, 4.0, 2.0, 3.0]).unwrap().median, 2.5);
        assert!(summary(&[]).is_none());
        assert!(summary(&[f64::NAN]).is_none());
    }

    #[test]
    fn speedup_is_baseline_over_time() {
        assert!((speedup_pct(1.14, 1.0).unwrap() - 14.0).abs() < 1e-9);
        assert!(speedup_pct(1.0, 1.25).unwrap() < 0.0);
        assert!(speedup_pct(0.0, 1.0).is_none());
    }

    #[test]
    fn spread_and_rotation() {
        assert_eq!(
            spread_s(&[1_000_000_000, 3_000_000_000, 2_000_000_000]),
            Some(2.0)
        );
        assert_eq!(spread_s(&[]), None);
        assert_eq!(rotation(3, 0), vec![0, 1, 2]);
        assert_eq!(rotation(3, 1), vec![1, 2, 0]);
        assert_eq!(rotation(3, 4), vec![1, 2, 0]);
    }
}
