//! The per-thread core-over-time plot of seed 004's figures 3.1–3.8, as a small hand-written SVG:
//! one line per thread, y = the core (0–3 LITTLE at the bottom, 4–7 big above, as in the seed),
//! x = time, a dashed vertical line where each thread ends.

use std::fmt::Write as _;

use super::ThreadRun;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 40.0;
/// Eight distinguishable line colours, cycled for more threads.
const COLOURS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// The SVG of one model's run: `threads` with their core traces, `cores` cores of which the
/// first `slow` are LITTLE, over `end_s` seconds.
#[must_use]
pub fn svg(title: &str, threads: &[ThreadRun], cores: usize, slow: usize, end_s: f64) -> String {
    let cores = cores.max(1);
    let end_s = if end_s > 0.0 { end_s } else { 1.0 };
    let pw = WIDTH - LEFT - RIGHT;
    let ph = HEIGHT - TOP - BOTTOM;
    let lane = ph / cores as f64;
    let x = |s: f64| LEFT + s / end_s * pw;
    // Threads are drawn a little apart within a lane so that lines on one core stay visible.
    let y = |core: usize, i: usize| {
        let off = (i % 8) as f64 / 8.0 * lane * 0.6 - lane * 0.3;
        TOP + ph - (core as f64 + 0.5) * lane + off
    };
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="20" font-size="13">{}</text>"#,
        escape(title)
    );
    for c in 0..cores {
        let yc = TOP + ph - (c as f64 + 0.5) * lane;
        let kind = if c < slow { "LITTLE" } else { "big" };
        let fill = if c < slow { "#f4f4f4" } else { "#ffffff" };
        let _ = writeln!(
            s,
            r##"<rect x="{LEFT}" y="{:.1}" width="{pw}" height="{lane:.1}" fill="{fill}" stroke="#ddd"/>"##,
            TOP + ph - (c as f64 + 1.0) * lane
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{c} {kind}</text>"#,
            LEFT - 4.0,
            yc + 4.0
        );
    }
    let ticks = 5;
    for i in 0..=ticks {
        let t = end_s * f64::from(i) / f64::from(ticks);
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{t:.2} s</text>"#,
            x(t),
            TOP + ph + 16.0
        );
    }
    for (i, th) in threads.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let end = th.end_s.unwrap_or(end_s);
        let mut pts = String::new();
        for (j, &(from_s, core)) in th.cores.iter().enumerate() {
            let to_s = th.cores.get(j + 1).map_or(end, |&(t, _)| t);
            let yy = y(core.min(cores - 1), i);
            let _ = write!(pts, "{:.1},{yy:.1} {:.1},{yy:.1} ", x(from_s), x(to_s));
        }
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"><title>thread {i}</title></polyline>"#,
            pts.trim_end()
        );
        if let Some(e) = th.end_s {
            let _ = writeln!(
                s,
                r#"<line x1="{:.1}" y1="{TOP}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-dasharray="4 3"/>"#,
                x(e),
                x(e),
                TOP + ph
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
