//! One figure per item (seed 004 figure 3.9's speedup per scheme, the live completion time per
//! policy) as bars from zero, each with its value written over it and, where the item stands for
//! several runs, a whisker from the smallest to the largest.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{colour, err, span, tick, DrawFailure, AXIS_DESC_PX, PLOT_SIZE_PX};
use crate::view::Bar;

/// Size of the value written over each bar and of the item names under the axis, px.
const VALUE_PX: u32 = 12;
/// Share of a bar's slot left empty on each side, so neighbouring bars stay apart.
const GAP_FRACTION: f64 = 0.15;
/// Half the width of a whisker's end caps, in slots.
const CAP_HALF_WIDTH: f64 = 0.12;

pub(super) fn draw(
    out: &mut String,
    caption: &str,
    y_label: &str,
    bars: &[Bar],
) -> Result<(), DrawFailure> {
    let bars: Vec<&Bar> = bars.iter().filter(|b| b.value.is_finite()).collect();
    if bars.is_empty() {
        return Err(DrawFailure::Nothing("no finite bar to draw"));
    }
    // Every bar starts at zero, so the axis includes it; whiskers widen it.
    let ends = bars.iter().flat_map(|b| {
        let (lo, hi) = b.range.unwrap_or((b.value, b.value));
        [0.0, b.value, lo, hi]
    });
    let (y0, y1) = span(ends).ok_or("no finite bar to draw")?;
    // Headroom for the values written beyond the bars' ends.
    let pad = (y1 - y0) * 0.12;
    let (y0, y1) = (if y0 < 0.0 { y0 - pad } else { 0.0 }, y1 + pad);
    let n = bars.len();
    let root = SVGBackend::with_string(out, PLOT_SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = super::framed(&root, caption)
        .build_cartesian_2d(0.0..n as f64, y0..y1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_x_axis()
        .y_desc(y_label)
        .axis_desc_style(("sans-serif", AXIS_DESC_PX))
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(err)?;
    // The zero line the bars grow from.
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(0.0, 0.0), (n as f64, 0.0)],
            BLACK.stroke_width(1),
        )))
        .map_err(err)?;
    let name_style = TextStyle::from(("sans-serif", VALUE_PX).into_font())
        .pos(Pos::new(HPos::Center, VPos::Top));
    for (i, b) in bars.iter().enumerate() {
        let x = i as f64;
        let c = colour(i);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x + GAP_FRACTION, 0.0), (x + 1.0 - GAP_FRACTION, b.value)],
                c.filled(),
            )))
            .map_err(err)?;
        if let Some((lo, hi)) = b.range.filter(|(lo, hi)| lo.is_finite() && hi.is_finite()) {
            let mid = x + 0.5;
            let (l, r) = (mid - CAP_HALF_WIDTH, mid + CAP_HALF_WIDTH);
            chart
                .draw_series(
                    [
                        vec![(mid, lo), (mid, hi)],
                        vec![(l, lo), (r, lo)],
                        vec![(l, hi), (r, hi)],
                    ]
                    .into_iter()
                    .map(|p| PathElement::new(p, BLACK.stroke_width(1))),
                )
                .map_err(err)?;
        }
        // The value beyond the bar's end (or the whisker's), on the side it grows to.
        let top = b.range.map_or(b.value, |(lo, hi)| {
            if b.value < 0.0 {
                lo.min(b.value)
            } else {
                hi.max(b.value)
            }
        });
        let (anchor, off) = if b.value < 0.0 {
            (VPos::Top, 4)
        } else {
            (VPos::Bottom, -4)
        };
        let (px, py) = chart.backend_coord(&(x + 0.5, top));
        root.draw(&Text::new(
            tick(b.value),
            (px, py + off),
            TextStyle::from(("sans-serif", VALUE_PX).into_font())
                .pos(Pos::new(HPos::Center, anchor)),
        ))
        .map_err(err)?;
        // The item's name under the plot area.
        let (px, _) = chart.backend_coord(&(x + 0.5, y0));
        let y_px = chart.plotting_area().get_pixel_range().1.end + 6;
        root.draw(&Text::new(b.name.clone(), (px, y_px), name_style.clone()))
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}
