//! One figure against another per item (the simulator against the kernel), with the diagonal
//! where the two agree.

use plotters::coord::combinators::IntoLogRange;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{colour, err, span, tick, AXIS_DESC_PX, CAPTION_PX, PLOT_SIZE_PX};
use crate::view::Series;

pub(super) fn draw(
    out: &mut String,
    caption: &str,
    x_label: &str,
    y_label: &str,
    log: bool,
    series: &[Series],
) -> Result<(), String> {
    let usable =
        |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite() && (!log || (p.0 > 0.0 && p.1 > 0.0));
    let (lo, hi) = span(
        series
            .iter()
            .flat_map(|s| s.points.iter().filter(usable))
            .flat_map(|p| [p.0, p.1]),
    )
    .ok_or("no point to draw")?;
    // Both axes share one range, so the diagonal is the line of agreement.
    let (lo, hi) = if log {
        (lo / 1.5, hi * 1.5)
    } else {
        (lo.min(0.0), hi + (hi - lo.min(0.0)) * 0.1)
    };
    let root = SVGBackend::with_string(out, PLOT_SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let x_desc = if log {
        format!("{x_label}, log scale")
    } else {
        x_label.to_owned()
    };
    let y_desc = if log {
        format!("{y_label}, log scale")
    } else {
        y_label.to_owned()
    };
    if log {
        let chart = builder(&root, caption)
            .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
            .map_err(err)?;
        finish(chart, &x_desc, &y_desc, lo, hi, series, usable)?;
    } else {
        let chart = builder(&root, caption)
            .build_cartesian_2d(lo..hi, lo..hi)
            .map_err(err)?;
        finish(chart, &x_desc, &y_desc, lo, hi, series, usable)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

fn builder<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: &str,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.caption(caption, ("sans-serif", CAPTION_PX))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(60);
    b
}

fn finish<'a, 'b: 'a, X, Y>(
    mut chart: ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
    lo: f64,
    hi: f64,
    series: &[Series],
    usable: impl Fn(&&(f64, f64)) -> bool,
) -> Result<(), String>
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
        .map_err(err)?;
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
        chart
            .draw_series(
                s.points
                    .iter()
                    .filter(&usable)
                    .map(|&p| Circle::new(p, 4, c.filled())),
            )
            .map_err(err)?
            .label(s.name.clone())
            .legend(move |(x, y)| Circle::new((x + 9, y), 4, c.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(err)?;
    Ok(())
}
