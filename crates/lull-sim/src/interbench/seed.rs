//! What seed 003 reports of interbench (§VI-B-2 and figure 7), for printing beside the modelled
//! figures. The paper's text has lost its letters a and i and the figure's bars are gone; what is
//! left are the numbers printed above the bars (each bar's maximum latency) in an order that no
//! longer says which bar they belong to. Readings the text states in words are certain; the
//! others are listed per panel as the garbled text places them, marked uncertain.

use super::spec::Bench;

/// One number of figure 7.
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize)]
pub struct SeedReading {
    /// The panel: (a) X, (b) Audio, (c) Video, (d) Gaming; `None` where the text does not say.
    pub bench: Option<Bench>,
    /// The scheduler the number belongs to, when known (`cfs`, `vtcfs-3ms`).
    pub model: Option<&'static str>,
    /// A maximum latency over the panel's loads, ms.
    pub max_ms: f64,
    /// Stated in the text (certain) or only printed in the figure (uncertain bar).
    pub certain: bool,
}

const fn r(
    bench: Option<Bench>,
    model: Option<&'static str>,
    max_ms: f64,
    certain: bool,
) -> SeedReading {
    SeedReading {
        bench,
        model,
        max_ms,
        certain,
    }
}

/// Figure 7's numbers. §VI-B-2: "The maximum latency was 15.28 ms when we set the preemption
/// tick to 3 ms" (every benchmark but Gaming); "huge scheduling latency of 94.3 ms with the
/// Gaming interactive task" (CFS); "In the Gaming benchmark, VT-CFS caused the maximum
/// scheduling latency of 90.68 ms". The rest come out of the figure in the order
/// "93 15.28 | 5.72 5.04 | (a) X: 0.16 0.1 0.06 0.34 0.14 0.02 6.74 | (c) Video: 19.82 0.08 0.02
/// 1.26 2.68 0.08 0.06 | (b) Audio | (d) Gaming: 94.3 90.68 12.12 7.38".
pub const FIGURE_7: [SeedReading; 24] = [
    r(None, Some("vtcfs-3ms"), 15.28, true),
    r(Some(Bench::Gaming), Some("cfs"), 94.3, true),
    r(Some(Bench::Gaming), Some("vtcfs-3ms"), 90.68, true),
    r(None, None, 93.0, false),
    r(None, None, 5.72, false),
    r(None, None, 5.04, false),
    r(Some(Bench::X), None, 0.16, false),
    r(Some(Bench::X), None, 0.1, false),
    r(Some(Bench::X), None, 0.06, false),
    r(Some(Bench::X), None, 0.34, false),
    r(Some(Bench::X), None, 0.14, false),
    r(Some(Bench::X), None, 0.02, false),
    r(Some(Bench::X), None, 6.74, false),
    r(Some(Bench::Video), None, 19.82, false),
    r(Some(Bench::Video), None, 0.08, false),
    r(Some(Bench::Video), None, 0.02, false),
    r(Some(Bench::Video), None, 1.26, false),
    r(Some(Bench::Video), None, 2.68, false),
    r(Some(Bench::Video), None, 0.08, false),
    r(Some(Bench::Video), None, 0.06, false),
    r(Some(Bench::Gaming), None, 94.3, false),
    r(Some(Bench::Gaming), None, 90.68, false),
    r(Some(Bench::Gaming), None, 12.12, false),
    r(Some(Bench::Gaming), None, 7.38, false),
];

/// The seed's maximum over the loads of `bench` for the model called `model`, where the text
/// states it: the Gaming maxima, and 15.28 ms as the bound of every other benchmark under VT-CFS
/// with a 3 ms preemption tick.
#[must_use]
pub fn stated_max_ms(bench: Bench, model: &str) -> Option<f64> {
    FIGURE_7
        .iter()
        .filter(|s| s.certain && s.model == Some(model))
        .find(|s| match s.bench {
            Some(b) => b == bench,
            None => bench != Bench::Gaming,
        })
        .map(|s| s.max_ms)
}

/// The uncertain numbers the garbled text places in `bench`'s panel.
#[must_use]
pub fn panel_numbers_ms(bench: Bench) -> Vec<f64> {
    FIGURE_7
        .iter()
        .filter(|s| !s.certain && s.bench == Some(bench))
        .map(|s| s.max_ms)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stated_maxima_are_found_per_benchmark() {
        assert_eq!(stated_max_ms(Bench::Gaming, "cfs"), Some(94.3));
        assert_eq!(stated_max_ms(Bench::Gaming, "vtcfs-3ms"), Some(90.68));
        assert_eq!(stated_max_ms(Bench::Audio, "vtcfs-3ms"), Some(15.28));
        assert_eq!(stated_max_ms(Bench::Audio, "cfs"), None);
        assert_eq!(stated_max_ms(Bench::X, "eevdf"), None);
        assert_eq!(panel_numbers_ms(Bench::Audio), Vec::<f64>::new());
        assert_eq!(panel_numbers_ms(Bench::X).len(), 7);
    }
}
