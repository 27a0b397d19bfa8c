//! Draws a [`Plot`] as an SVG document with `plotters`' SVG backend, one file per plot kind.
//! Text is written as SVG `<text>` in a generic sans-serif family: the page needs no font files.

mod bars;
mod cdf;
mod cores;
mod footprint;
mod scatter;
mod timeseries;

use plotters::chart::{ChartBuilder, ChartContext, SeriesLabelPosition};
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::{CoordTranslate, Shift};
use plotters::drawing::DrawingArea;
use plotters::prelude::SVGBackend;
use plotters::prelude::{Cartesian2d, Ranged};
use plotters::style::RGBColor;
use plotters::style::{Color, BLACK, WHITE};

use crate::view::{Plot, PlotKind};

/// Width and height of every plot, px: two fit side by side on a laptop screen, and the axis
/// labels stay legible when the browser scales the image down.
pub const PLOT_SIZE_PX: (u32, u32) = (760, 420);
/// The footprint's three panels need more height than one chart.
pub const FOOTPRINT_SIZE_PX: (u32, u32) = (760, 620);

/// Caption and axis-label sizes, px.
const CAPTION_PX: u32 = 17;
const AXIS_DESC_PX: u32 = 14;
/// A single-panel chart's margin and the room kept for each axis' tick labels and title, px
/// (the y axis takes numbers up to five digits, as power in mW).
const MARGIN_PX: u32 = 12;
const X_LABEL_AREA_PX: u32 = 44;
const Y_LABEL_AREA_PX: u32 = 60;

/// The frame every single-panel chart shares: caption, margin and the axes' label areas.
fn framed<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: &str,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.caption(caption, ("sans-serif", CAPTION_PX))
        .margin(MARGIN_PX)
        .x_label_area_size(X_LABEL_AREA_PX)
        .y_label_area_size(Y_LABEL_AREA_PX);
    b
}

/// Both axes' titles and number labels, as every single-panel plot with two numeric axes
/// draws them.
fn axes<'a, 'b: 'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
) -> Result<(), DrawFailure>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style(("sans-serif", AXIS_DESC_PX))
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(err)
}

/// The series' legend at `corner`, on a nearly opaque white box so that lines under it still
/// show.
fn legend<'a, 'b: 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, CT>,
    corner: SeriesLabelPosition,
) -> Result<(), DrawFailure> {
    chart
        .configure_series_labels()
        .position(corner)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(err)
}

/// Series colours, distinguishable in print and for the common colour-vision deficiencies
/// (Okabe and Ito's palette, with black last).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 94, 60),
    RGBColor(0, 0, 0),
];

/// Line width of series `i` of `n`: the first drawn (underneath) widest, so a series hidden
/// under a later one with the same values still shows as a band around it.
fn stroke(i: usize, n: usize) -> u32 {
    if n <= 1 {
        return 2;
    }
    // From 4 px down to 1 px across the series.
    (1 + (n - 1 - i.min(n - 1)) * 3 / (n - 1)) as u32
}

/// The corner of the plot area with the fewest points, for the legend. `points` are in axis
/// fractions (0..1 along each axis, after any log scale).
fn legend_corner(points: impl Iterator<Item = (f64, f64)>) -> SeriesLabelPosition {
    // The legend box covers about this share of the width and height.
    const BOX_W: f64 = 0.35;
    const BOX_H: f64 = 0.45;
    let mut counts = [0usize; 4];
    for (x, y) in points {
        let left = x <= BOX_W;
        let right = x >= 1.0 - BOX_W;
        let low = y <= BOX_H;
        let high = y >= 1.0 - BOX_H;
        for (k, hit) in [high && left, high && right, low && left, low && right]
            .into_iter()
            .enumerate()
        {
            counts[k] += usize::from(hit);
        }
    }
    // Ties keep the order: upper right first, where most of these plots leave room.
    let order = [1, 0, 3, 2];
    let best = order.into_iter().min_by_key(|&k| counts[k]).unwrap_or(1);
    match best {
        0 => SeriesLabelPosition::UpperLeft,
        1 => SeriesLabelPosition::UpperRight,
        2 => SeriesLabelPosition::LowerLeft,
        _ => SeriesLabelPosition::LowerRight,
    }
}

/// `v`'s place along an axis from `lo` to `hi` (0..1), on a log scale if `log`.
fn frac(v: f64, lo: f64, hi: f64, log: bool) -> f64 {
    if log {
        (v.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln())
    } else {
        (v - lo) / (hi - lo)
    }
}

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Why a plot could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("drawing the plot {title:?}: {why}")]
pub struct PlotError {
    pub title: String,
    pub why: String,
}

impl PlotError {
    fn new(plot: &Plot, why: impl std::fmt::Display) -> Self {
        PlotError {
            title: plot.title.clone(),
            why: why.to_string(),
        }
    }
}

/// The SVG text of `plot`.
///
/// # Errors
/// [`PlotError`] when the plot has no finite point to draw or the backend fails.
pub fn draw(plot: &Plot) -> Result<String, PlotError> {
    let mut svg = String::new();
    let res = match &plot.kind {
        PlotKind::Cdf { unit, series } => cdf::draw(&mut svg, &plot.caption(), unit, series),
        PlotKind::TimeSeries {
            x_label,
            y_label,
            series,
        } => timeseries::draw(&mut svg, &plot.caption(), x_label, y_label, series),
        PlotKind::Footprint(models) => footprint::draw(&mut svg, &plot.caption(), models),
        PlotKind::Scatter {
            x_label,
            y_label,
            log,
            series,
        } => scatter::draw(&mut svg, &plot.caption(), x_label, y_label, *log, series),
        PlotKind::Bars { y_label, bars } => bars::draw(&mut svg, &plot.caption(), y_label, bars),
        PlotKind::Cores {
            fast_cpus,
            slow_cpus,
            end_s,
            threads,
        } => cores::draw(
            &mut svg,
            &plot.caption(),
            fast_cpus,
            slow_cpus,
            *end_s,
            threads,
        ),
    };
    res.map_err(|why| PlotError::new(plot, why))?;
    Ok(svg)
}

/// The smallest and largest finite value of `values`, widened when they are equal so an axis
/// always has a span; `None` without any finite value.
fn span(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return None;
    }
    if lo == hi {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return Some((lo - pad, hi + pad));
    }
    Some((lo, hi))
}

/// A compact axis number: no trailing zeros, thousands without decimals.
fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 || v == v.trunc() {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Why one drawing function could not draw its plot.
#[derive(Debug, thiserror::Error)]
pub enum DrawFailure {
    /// The data hold nothing to draw; the text says what is missing.
    #[error("{0}")]
    Nothing(&'static str),
    #[error("{thread} is on core {core} at {at} s, not one of the CPUs {cpus:?}")]
    OffCpu {
        thread: String,
        core: usize,
        at: String,
        cpus: Vec<usize>,
    },
    /// The plotting backend's error, as text (its error types differ per backend).
    #[error("{0}")]
    Backend(String),
}

impl From<&'static str> for DrawFailure {
    fn from(what: &'static str) -> Self {
        DrawFailure::Nothing(what)
    }
}

/// Turns a plotters error into a [`DrawFailure`].
fn err<E: std::fmt::Display>(e: E) -> DrawFailure {
    DrawFailure::Backend(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{Bar, CoreTrace, Footprint, Series};
    use crate::Label;

    fn plot(kind: PlotKind) -> Plot {
        Plot {
            title: "t <&>".into(),
            label: Label::Modelled,
            kind,
        }
    }

    fn series(points: Vec<(f64, f64)>) -> Vec<Series> {
        vec![Series {
            name: "a".into(),
            points,
        }]
    }

    #[test]
    fn every_kind_draws_svg_with_its_label() {
        let kinds = [
            PlotKind::Cdf {
                unit: "µs".into(),
                series: series(vec![(1.0, 0.0), (10.0, 50.0), (100.0, 100.0)]),
            },
            PlotKind::TimeSeries {
                x_label: "s".into(),
                y_label: "mW".into(),
                series: series(vec![(0.0, 1.0), (0.1, 2.0)]),
            },
            PlotKind::Footprint(vec![Footprint {
                model: "m".into(),
                samples: vec![(0.0, true, 4.0, 1600.0), (0.1, false, 2.0, 500.0)],
            }]),
            PlotKind::Scatter {
                x_label: "x".into(),
                y_label: "y".into(),
                log: true,
                series: series(vec![(1.0, 2.0), (3.0, 3.0)]),
            },
            PlotKind::Bars {
                y_label: "%".into(),
                bars: vec![
                    Bar {
                        name: "a".into(),
                        value: -3.5,
                        range: None,
                    },
                    Bar {
                        name: "b".into(),
                        value: 2.0,
                        range: Some((1.5, 2.5)),
                    },
                ],
            },
            PlotKind::Cores {
                fast_cpus: vec![2, 3],
                slow_cpus: vec![0, 1],
                end_s: 2.0,
                threads: vec![CoreTrace {
                    name: "thread 0".into(),
                    steps: vec![(0.0, 0), (1.0, 3)],
                    end_s: Some(1.5),
                }],
            },
        ];
        for kind in kinds {
            let svg = draw(&plot(kind)).unwrap();
            assert!(svg.starts_with("<svg"), "{svg}");
            // The caption carries the label, escaped.
            assert!(svg.contains("t &lt;&amp;&gt; (modelled)"), "{svg}");
        }
    }

    #[test]
    fn nothing_finite_is_an_error_not_a_panic() {
        for kind in [
            PlotKind::Cdf {
                unit: "µs".into(),
                series: series(vec![(f64::NAN, 0.0)]),
            },
            PlotKind::TimeSeries {
                x_label: "s".into(),
                y_label: "mW".into(),
                series: vec![],
            },
            PlotKind::Footprint(vec![]),
            PlotKind::Scatter {
                x_label: "x".into(),
                y_label: "y".into(),
                log: true,
                series: series(vec![(0.0, -1.0)]),
            },
            PlotKind::Bars {
                y_label: "%".into(),
                bars: vec![Bar {
                    name: "a".into(),
                    value: f64::NAN,
                    range: None,
                }],
            },
            // A core outside the platform's CPUs, and no CPUs at all.
            PlotKind::Cores {
                fast_cpus: vec![1],
                slow_cpus: vec![0],
                end_s: 1.0,
                threads: vec![CoreTrace {
                    name: "thread 0".into(),
                    steps: vec![(0.0, 9)],
                    end_s: None,
                }],
            },
            PlotKind::Cores {
                fast_cpus: vec![],
                slow_cpus: vec![],
                end_s: 1.0,
                threads: vec![],
            },
        ] {
            assert!(draw(&plot(kind)).is_err());
        }
    }

    #[test]
    fn spans_and_ticks() {
        assert_eq!(span([1.0, f64::NAN, 3.0].into_iter()), Some((1.0, 3.0)));
        assert_eq!(span([0.0].into_iter()), Some((-1.0, 1.0)));
        assert_eq!(span(std::iter::empty()), None);
        assert_eq!(tick(1500.25), "1500");
        assert_eq!(tick(12.34), "12.3");
        assert_eq!(tick(2.0), "2");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!((stroke(0, 7), stroke(3, 7), stroke(6, 7)), (4, 2, 1));
        assert_eq!(stroke(0, 1), 2);
        // Points in the upper right push the legend to the upper left.
        let crowded = [(0.9, 0.9), (0.8, 0.95), (0.1, 0.1), (0.9, 0.1)];
        assert!(matches!(
            legend_corner(crowded.into_iter()),
            SeriesLabelPosition::UpperLeft
        ));
        assert!(matches!(
            legend_corner(std::iter::empty()),
            SeriesLabelPosition::UpperRight
        ));
        assert!((frac(100.0, 1.0, 10_000.0, true) - 0.5).abs() < 1e-12);
    }
}
