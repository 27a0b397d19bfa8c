//! A CPU footprint over time as seed 001's figure 8 draws it: which cluster is active, how many
//! of its cores are online, and at what frequency, one panel each, one line per model.

use plotters::prelude::*;

use super::{
    colour, err, legend, span, stroke, tick, DrawFailure, AXIS_DESC_PX, CAPTION_PX,
    FOOTPRINT_SIZE_PX,
};
use crate::view::Footprint;

/// Which value of a sample a panel shows.
type Pick = fn(&(f64, bool, f64, f64)) -> f64;

pub(super) fn draw(
    out: &mut String,
    caption: &str,
    models: &[Footprint],
) -> Result<(), DrawFailure> {
    let samples = || models.iter().flat_map(|m| m.samples.iter());
    let (t0, t1) = span(samples().map(|s| s.0)).ok_or("no footprint sample to draw")?;
    let (_, cores) = span(samples().map(|s| s.2)).ok_or("no footprint sample to draw")?;
    let (_, mhz) = span(samples().map(|s| s.3)).ok_or("no footprint sample to draw")?;
    let root = SVGBackend::with_string(out, FOOTPRINT_SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let root = root
        .titled(caption, ("sans-serif", CAPTION_PX))
        .map_err(err)?;
    let panels = root.split_evenly((3, 1));
    let specs: [(&str, f64, Pick); 3] = [
        (
            "big cluster (1 = yes)",
            1.3,
            |s| if s.1 { 1.0 } else { 0.0 },
        ),
        ("active cores", cores * 1.3, |s| s.2),
        ("frequency (MHz)", mhz * 1.3, |s| s.3),
    ];
    for (k, (panel, (desc, top, pick))) in panels.iter().zip(specs).enumerate() {
        let mut chart = ChartBuilder::on(panel)
            .margin(8)
            .x_label_area_size(if k == 2 { 40 } else { 22 })
            .y_label_area_size(60)
            .build_cartesian_2d(t0..t1, 0.0..top)
            .map_err(err)?;
        let mut mesh = chart.configure_mesh();
        mesh.y_desc(desc)
            .axis_desc_style(("sans-serif", AXIS_DESC_PX))
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .y_labels(5);
        if k == 2 {
            mesh.x_desc("time (s)");
        }
        mesh.draw().map_err(err)?;
        for (i, m) in models.iter().enumerate() {
            let c = colour(i);
            // Steps: a sample's state holds until the next sample.
            let mut pts = Vec::with_capacity(m.samples.len() * 2);
            for (j, s) in m.samples.iter().enumerate() {
                if j > 0 {
                    pts.push((s.0, pick(&m.samples[j - 1])));
                }
                pts.push((s.0, pick(s)));
            }
            let drawn = chart
                .draw_series(LineSeries::new(
                    pts,
                    c.stroke_width(stroke(i, models.len()) + 1),
                ))
                .map_err(err)?;
            if k == 0 {
                drawn.label(m.model.clone()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
            }
        }
        if k == 0 {
            legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        }
    }
    root.present().map_err(err)?;
    Ok(())
}
