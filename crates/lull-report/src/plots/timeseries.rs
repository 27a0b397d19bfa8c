//! Values over time (power from the simulator's meter, TLP per window), one line per series.

use plotters::prelude::*;

use super::{
    axes, colour, err, frac, legend, legend_corner, span, stroke, DrawFailure, PLOT_SIZE_PX,
};
use crate::view::Series;

pub(super) fn draw(
    out: &mut String,
    caption: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> Result<(), DrawFailure> {
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let all = || series.iter().flat_map(|s| s.points.iter().filter(finite));
    let (x0, x1) = span(all().map(|p| p.0)).ok_or("no point to draw")?;
    let (y0, y1) = span(all().map(|p| p.1)).ok_or("no point to draw")?;
    // The data's range, not from zero: the models' levels differ by a few percent, which a
    // zero-based axis flattens; headroom above for the legend.
    let pad = (y1 - y0) * 0.08;
    let (y0, y1) = (
        (y0 - pad).max(if y0 >= 0.0 { 0.0 } else { f64::MIN }),
        y1 + 4.0 * pad,
    );
    let root = SVGBackend::with_string(out, PLOT_SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = super::framed(&root, caption)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    axes(&mut chart, x_label, y_label)?;
    for (i, s) in series.iter().enumerate() {
        let c = colour(i);
        let pts: Vec<(f64, f64)> = s.points.iter().filter(finite).copied().collect();
        chart
            .draw_series(LineSeries::new(
                pts,
                c.stroke_width(stroke(i, series.len())),
            ))
            .map_err(err)?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    legend(
        &mut chart,
        legend_corner(all().map(|&(x, y)| (frac(x, x0, x1, false), frac(y, y0, y1, false)))),
    )?;
    root.present().map_err(err)?;
    Ok(())
}
