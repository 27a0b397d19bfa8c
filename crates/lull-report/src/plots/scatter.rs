//! One figure against another per item (the simulator against the kernel), with the diagonal
//! where the two agree.

use plotters::coord::combinators::IntoLogRange;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;

use super::{
    axes, colour, err, frac, legend, legend_corner, span, DrawFailure, PALETTE, PLOT_SIZE_PX,
};
use crate::view::Series;

/// The axes both coordinates share, so the diagonal is the line of agreement.
struct Frame {
    x_desc: String,
    y_desc: String,
    lo: f64,
    hi: f64,
    log: bool,
}

impl Frame {
    /// A point this frame can place: finite, and positive on a log scale.
    fn usable(&self, p: (f64, f64)) -> bool {
        p.0.is_finite() && p.1.is_finite() && (!self.log || (p.0 > 0.0 && p.1 > 0.0))
    }
}

pub(super) fn draw(
    out: &mut String,
    caption: &str,
    x_label: &str,
    y_label: &str,
    log: bool,
    series: &[Series],
) -> Result<(), DrawFailure> {
    let scale = if log { ", log scale" } else { "" };
    let mut frame = Frame {
        x_desc: format!("{x_label}{scale}"),
        y_desc: format!("{y_label}{scale}"),
        lo: 0.0,
        hi: 0.0,
        log,
    };
    let (lo, hi) = span(
        series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|&p| frame.usable(p))
            .flat_map(|p| [p.0, p.1]),
    )
    .ok_or("no point to draw")?;
    (frame.lo, frame.hi) = if log {
        (lo / 1.5, hi * 1.5)
    } else {
        (lo.min(0.0), hi + (hi - lo.min(0.0)) * 0.1)
    };
    let (lo, hi) = (frame.lo, frame.hi);
    let root = SVGBackend::with_string(out, PLOT_SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    if log {
        let chart = super::framed(&root, caption)
            .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
            .map_err(err)?;
        finish(chart, &frame, series)?;
    } else {
        let chart = super::framed(&root, caption)
            .build_cartesian_2d(lo..hi, lo..hi)
            .map_err(err)?;
        finish(chart, &frame, series)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

fn finish<'a, 'b: 'a, X, Y>(
    mut chart: ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    frame: &Frame,
    series: &[Series],
) -> Result<(), DrawFailure>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let (lo, hi) = (frame.lo, frame.hi);
    axes(&mut chart, &frame.x_desc, &frame.y_desc)?;
    chart
        .draw_series(LineSeries::new(
            [(lo, lo), (hi, hi)],
            BLACK.mix(0.4).stroke_width(1),
        ))
        .map_err(err)?
        .label("agreement")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK.mix(0.4)));
    for (i, s) in series.iter().enumerate() {
        let c = colour(i);
        let pts = s.points.iter().copied().filter(|&p| frame.usable(p));
        // Past the palette's length, a new marker shape keeps the series apart.
        let shape = i / PALETTE.len();
        let drawn = match shape {
            0 => chart
                .draw_series(pts.map(|p| Circle::new(p, 4, c.filled())))
                .map_err(err)?,
            1 => chart
                .draw_series(pts.map(|p| TriangleMarker::new(p, 6, c.filled())))
                .map_err(err)?,
            _ => chart
                .draw_series(pts.map(|p| Cross::new(p, 4, c.stroke_width(2))))
                .map_err(err)?,
        };
        drawn.label(s.name.clone()).legend(move |(x, y)| {
            let at = (x + 9, y);
            match shape {
                0 => Circle::new(at, 4, c.filled()).into_dyn(),
                1 => TriangleMarker::new(at, 6, c.filled()).into_dyn(),
                _ => Cross::new(at, 4, c.stroke_width(2)).into_dyn(),
            }
        });
    }
    let placed = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|&p| frame.usable(p))
        .map(|(x, y)| (frac(x, lo, hi, frame.log), frac(y, lo, hi, frame.log)));
    legend(&mut chart, legend_corner(placed))
}
