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

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
#[must_use]
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 0 {
        (v[mid - 1] + v[mid]) / 2.0
    } else {
        v[mid]
    })
}

/// The change from `base` to `new`, in % of `base` (-100: `new` is zero; +100: double); `None`
/// when `base` is zero. Every "change %" of the reports, live and modelled, is this one.
#[must_use]
pub fn change_pct(base: f64, new: f64) -> Option<f64> {
    (base != 0.0).then(|| (new - base) / base * 100.0)
}

/// The percentiles a latency distribution is reported at (`latency_cdf_*` in the JSON reports),
/// so a reader can draw its CDF: 0 is the smallest sample and 100 the largest. Dense at the tail,
/// where the models differ.
pub const CDF_PERCENTS: [u32; 15] = [0, 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 100];

/// The nearest-rank value of `sorted` (ascending) at each of [`CDF_PERCENTS`]; empty for no
/// samples.
#[must_use]
pub fn cdf_points<T: Copy>(sorted: &[T]) -> Vec<T> {
    CDF_PERCENTS
        .iter()
        .filter_map(|&p| nearest_rank(sorted, p))
        .collect()
}

/// The file manager's response times as seed 001's figure 7(a) reports them, simulated or live.
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize)]
pub struct ResponseMs {
    pub mean: f64,
    /// Nearest rank ([`nearest_rank`]).
    pub p99: f64,
}

impl ResponseMs {
    /// Mean and p99 of `ns`; `None` for no samples.
    #[must_use]
    pub fn of_ns(ns: &[u64]) -> Option<ResponseMs> {
        let mut v = ns.to_vec();
        v.sort_unstable();
        let p99 = nearest_rank(&v, 99)?;
        let sum: u128 = v.iter().map(|&x| u128::from(x)).sum();
        Some(ResponseMs {
            mean: sum as f64 / v.len() as f64 / 1e6,
            p99: p99 as f64 / 1e6,
        })
    }
}

/// Completion times of seed 001's background apps (figure 7(c), (d)), s; `None` for one that did
/// not run or did not finish.
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize)]
pub struct CompletionS {
    pub zip: Option<f64>,
    pub ftp: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_exact() {
        let s: Vec<u64> = (1..=100).collect();
        assert_eq!(nearest_rank(&s, 50), Some(50));
        assert_eq!(nearest_rank(&s, 99), Some(99));
        let r = ResponseMs::of_ns(&[3_000_000, 1_000_000, 2_000_000]).unwrap();
        assert_eq!((r.mean, r.p99), (2.0, 3.0));
        assert_eq!(ResponseMs::of_ns(&[]), None);
        let cdf = cdf_points(&s);
        assert_eq!(cdf.len(), CDF_PERCENTS.len());
        assert_eq!((cdf[0], cdf[7], cdf[14]), (1, 50, 100));
        assert!(cdf_points::<u64>(&[]).is_empty());
        assert_eq!(nearest_rank(&s, 100), Some(100));
        assert_eq!(nearest_rank(&s, 0), Some(1));
        assert_eq!(nearest_rank(&[7], 99), Some(7));
        assert_eq!(nearest_rank(&[1, 2, 3], 50), Some(2));
        assert_eq!(nearest_rank::<u64>(&[], 50), None);
    }

    #[test]
    fn median_and_change() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(change_pct(200.0, 50.0), Some(-75.0));
        assert_eq!(change_pct(10.0, 20.0), Some(100.0));
        assert_eq!(change_pct(0.0, 5.0), None);
    }
}
