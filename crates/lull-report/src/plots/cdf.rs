//! Latency distributions: percent of events at or below a latency, on a logarithmic latency axis
//! (the models differ by orders of magnitude at the tail).

use plotters::coord::combinators::IntoLogRange;
use plotters::prelude::*;

use super::{axes, colour, err, frac, legend, legend_corner, span, DrawFailure, PLOT_SIZE_PX};
use crate::view::Series;

pub(super) fn draw(
    out: &mut String,
    caption: &str,
    unit: &str,
    series: &[Series],
) -> Result<(), DrawFailure> {
    // A log axis has no place for zero or negative latencies: they sit at the axis' start.
    let positive = |v: f64| v.is_finite() && v > 0.0;
    let (lo, hi) = span(
        series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .filter(|&v| positive(v)),
    )
    .ok_or("no positive latency to draw")?;
    let (lo, hi) = (lo / 1.5, hi * 1.5);
    let root = SVGBackend::with_string(out, PLOT_SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = super::framed(&root, caption)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..100.0)
        .map_err(err)?;
    axes(
        &mut chart,
        &format!("latency ({unit}), log scale"),
        "samples at or below (%)",
    )?;
    for (i, s) in series.iter().enumerate() {
        let c = colour(i);
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|&(v, p)| (if positive(v) { v } else { lo }, p))
            .filter(|p| p.1.is_finite())
            .collect();
        // A step line: the share stays at p until the next sample's latency.
        let mut steps = Vec::with_capacity(pts.len() * 2);
        for (k, &(v, p)) in pts.iter().enumerate() {
            if k > 0 {
                steps.push((v, pts[k - 1].1));
            }
            steps.push((v, p));
        }
        chart
            .draw_series(LineSeries::new(steps, c.stroke_width(2)))
            .map_err(err)?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(err)?;
    }
    legend(
        &mut chart,
        legend_corner(
            series
                .iter()
                .flat_map(|s| s.points.iter())
                .map(|&(v, p)| (frac(v, lo, hi, true), p / 100.0)),
        ),
    )?;
    root.present().map_err(err)?;
    Ok(())
}
