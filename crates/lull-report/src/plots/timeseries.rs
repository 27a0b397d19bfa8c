//! Values over time (power from the simulator's meter, TLP per window), one line per series.

use plotters::prelude::*;

use super::{
    colour, err, frac, legend_corner, span, stroke, tick, DrawFailure, AXIS_DESC_PX, PLOT_SIZE_PX,
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
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .axis_desc_style(("sans-serif", AXIS_DESC_PX))
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(err)?;
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
    chart
        .configure_series_labels()
        .position(legend_corner(
            all().map(|&(x, y)| (frac(x, x0, x1, false), frac(y, y0, y1, false))),
        ))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}
