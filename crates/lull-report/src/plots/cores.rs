//! Each thread's core over time, as seed 004's figures 3.1–3.8 draw it: one lane per CPU (y is
//! the CPU number), the slow (LITTLE) CPUs' lanes shaded, a step line per thread and a dot where
//! it ended.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{colour, err, tick, DrawFailure, AXIS_DESC_PX, PLOT_SIZE_PX};
use crate::view::CoreTrace;

/// The lane shade of a slow (LITTLE) CPU and of a fast (big) one.
const SLOW_LANE: RGBColor = RGBColor(226, 226, 226);
const FAST_LANE: RGBColor = RGBColor(250, 250, 250);
/// The share of a lane the threads' lines spread over, so that threads on one CPU stay apart.
const LANE_SPREAD: f64 = 0.7;
/// Threads spread over a lane before their places repeat: the palette's eight colours.
const LANE_SLOTS: usize = 8;
/// A thread's line and the dot where it ended, px.
const LINE_PX: u32 = 2;
const END_DOT_PX: u32 = 4;
/// Opacity of the line joining a thread's segments where it changed core.
const JUMP_ALPHA: f64 = 0.3;
/// Room after the run's end so that the dots of the last threads to end are whole.
const END_ROOM: f64 = 1.02;
/// The CPU numbers beside the lanes, px, and their gap to the plot area.
const CPU_LABEL_PX: u32 = 13;
const CPU_LABEL_GAP_PX: i32 = 6;

pub(super) fn draw(
    out: &mut String,
    caption: &str,
    fast_cpus: &[usize],
    slow_cpus: &[usize],
    end_s: f64,
    threads: &[CoreTrace],
) -> Result<(), DrawFailure> {
    let mut cpus: Vec<usize> = fast_cpus.iter().chain(slow_cpus).copied().collect();
    cpus.sort_unstable();
    cpus.dedup();
    let top = *cpus.last().ok_or("no CPU to draw")?;
    for t in threads {
        if let Some(&(at, c)) = t.steps.iter().find(|(_, c)| !cpus.contains(c)) {
            return Err(DrawFailure::OffCpu {
                thread: t.name.clone(),
                core: c,
                at: tick(at),
                cpus,
            });
        }
    }
    if threads.iter().all(|t| t.steps.is_empty()) {
        return Err(DrawFailure::Nothing("no thread's core to draw"));
    }
    // The run's end, or else the last time the traces know of.
    let t_end = if end_s.is_finite() && end_s > 0.0 {
        end_s
    } else {
        threads
            .iter()
            .flat_map(|t| t.steps.iter().map(|s| s.0).chain(t.end_s))
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max)
    };
    if t_end <= 0.0 {
        return Err(DrawFailure::Nothing("no time span to draw"));
    }
    let y_desc = format!(
        "CPU (LITTLE {} shaded, big {})",
        cpu_list(slow_cpus),
        cpu_list(fast_cpus)
    );
    let root = SVGBackend::with_string(out, PLOT_SIZE_PX).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = super::framed(&root, caption)
        .build_cartesian_2d(0.0..t_end * END_ROOM, -0.5..top as f64 + 0.5)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("time (s)")
        .y_desc(y_desc)
        .axis_desc_style(("sans-serif", AXIS_DESC_PX))
        .x_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(err)?;
    let lane = |c: usize| [(0.0, c as f64 - 0.5), (t_end, c as f64 + 0.5)];
    chart
        .draw_series(cpus.iter().map(|&c| {
            let shade = if slow_cpus.contains(&c) {
                SLOW_LANE
            } else {
                FAST_LANE
            };
            Rectangle::new(lane(c), shade.filled())
        }))
        .map_err(err)?;
    chart
        .draw_series(
            cpus.iter()
                .map(|&c| Rectangle::new(lane(c), BLACK.mix(0.15).stroke_width(1))),
        )
        .map_err(err)?;
    // The CPU numbers, each beside its lane's middle (the mesh's own labels would fall between
    // lanes on a fractional axis).
    let label = TextStyle::from(("sans-serif", CPU_LABEL_PX).into_font())
        .pos(Pos::new(HPos::Right, VPos::Center));
    for &c in &cpus {
        let (x, y) = chart.backend_coord(&(0.0, c as f64));
        root.draw(&Text::new(
            c.to_string(),
            (x - CPU_LABEL_GAP_PX, y),
            label.clone(),
        ))
        .map_err(err)?;
    }
    let slots = threads.len().clamp(1, LANE_SLOTS);
    for (i, t) in threads.iter().enumerate() {
        let c = colour(i);
        let off = ((i % slots) as f64 + 0.5) / slots as f64 * LANE_SPREAD - LANE_SPREAD / 2.0;
        let end = t.end_s.filter(|e| e.is_finite()).unwrap_or(t_end);
        let steps: Vec<(f64, usize)> = t
            .steps
            .iter()
            .filter(|s| s.0.is_finite())
            .copied()
            .collect();
        // A core holds from its change until the next change, or the thread's end: a bold
        // segment in its lane, joined to the next by a faint line (faint so that a thread that
        // migrates thousands of times does not hide the lanes under its jumps).
        let segments: Vec<[(f64, f64); 2]> = steps
            .iter()
            .enumerate()
            .map(|(j, &(from, core))| {
                let to = steps.get(j + 1).map_or(end, |s| s.0);
                let y = core as f64 + off;
                [(from, y), (to, y)]
            })
            .collect();
        chart
            .draw_series(LineSeries::new(
                segments.iter().flatten().copied(),
                c.mix(JUMP_ALPHA).stroke_width(1),
            ))
            .map_err(err)?;
        chart
            .draw_series(
                segments
                    .iter()
                    .map(|s| PathElement::new(s.to_vec(), c.stroke_width(LINE_PX))),
            )
            .map_err(err)?;
        if let (Some(e), Some(&(_, core))) = (t.end_s.filter(|e| e.is_finite()), steps.last()) {
            chart
                .draw_series(std::iter::once(Circle::new(
                    (e, core as f64 + off),
                    END_DOT_PX,
                    c.filled(),
                )))
                .map_err(err)?;
        }
    }
    root.present().map_err(err)?;
    Ok(())
}

/// CPU numbers for an axis title: a run as "4–7", others listed ("0, 2").
fn cpu_list(cpus: &[usize]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    match (v.first(), v.last()) {
        (Some(&a), Some(&b)) if v.len() > 2 && b - a + 1 == v.len() => format!("{a}–{b}"),
        (Some(_), _) => v
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        (None, _) => "none".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list(&[7, 4, 5, 6]), "4–7");
        assert_eq!(cpu_list(&[0, 2]), "0, 2");
        assert_eq!(cpu_list(&[3]), "3");
        assert_eq!(cpu_list(&[]), "none");
    }
}
