//! CPU footprints (seed 001 figure 8): the active cluster, the number of active cores and the
//! frequency over time, sampled every [`FOOTPRINT_PERIOD_NS`], and their time-weighted means;
//! written as CSV and drawn as an SVG plot.

use std::fmt::Write as _;

use lull_model::time::NS_PER_MS;

/// The footprint's sampling period: 100 ms (figure 8's resolution is of the order of a second;
/// the Galaxy S4's governor period, §3.3).
pub const FOOTPRINT_PERIOD_NS: u64 = 100 * NS_PER_MS;

/// One sample.
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize)]
pub struct FootprintSample {
    pub time_s: f64,
    /// The active cluster is the big one.
    pub big: bool,
    pub active_cores: u32,
    pub freq_mhz: u64,
}

/// Time-weighted accounting of the footprint.
#[derive(Clone, Debug, Default)]
pub struct Footprint {
    pub samples: Vec<FootprintSample>,
    next_sample_ns: u64,
    last_ns: u64,
    big_ns: u64,
    core_ns: u128,
    khz_ns: u128,
    total_ns: u64,
}

impl Footprint {
    /// Accounts the state held since the last call up to `now`: `big`, `cores` online, `khz`.
    pub fn account(&mut self, now: u64, big: bool, cores: u32, khz: u64) {
        while self.next_sample_ns <= now {
            self.samples.push(FootprintSample {
                time_s: self.next_sample_ns as f64 / 1e9,
                big,
                active_cores: cores,
                freq_mhz: khz / 1000,
            });
            self.next_sample_ns += FOOTPRINT_PERIOD_NS;
        }
        let dt = now.saturating_sub(self.last_ns);
        self.last_ns = now;
        if big {
            self.big_ns += dt;
        }
        self.core_ns += u128::from(cores) * u128::from(dt);
        self.khz_ns += u128::from(khz) * u128::from(dt);
        self.total_ns += dt;
    }

    /// Share of the time on the big cluster, %.
    #[must_use]
    pub fn big_pct(&self) -> f64 {
        self.big_ns as f64 * 100.0 / self.total_ns.max(1) as f64
    }

    /// Mean number of active (online) cores.
    #[must_use]
    pub fn cores_mean(&self) -> f64 {
        self.core_ns as f64 / self.total_ns.max(1) as f64
    }

    /// Mean frequency of the active cluster, MHz.
    #[must_use]
    pub fn freq_mhz_mean(&self) -> f64 {
        self.khz_ns as f64 / 1000.0 / self.total_ns.max(1) as f64
    }
}

/// The samples as CSV: `time_s,cluster,active_cores,freq_mhz`.
#[must_use]
pub fn to_csv(samples: &[FootprintSample]) -> String {
    let mut s = String::from("time_s,cluster,active_cores,freq_mhz\n");
    for x in samples {
        let _ = writeln!(
            s,
            "{:.1},{},{},{}",
            x.time_s,
            if x.big { "big" } else { "little" },
            x.active_cores,
            x.freq_mhz
        );
    }
    s
}

const W: f64 = 900.0;
const PANEL_H: f64 = 150.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 50.0;
const GAP: f64 = 50.0;

/// An SVG plot of one or more models' footprints: three panels (cluster, active cores,
/// frequency) sharing the time axis, one coloured line per model, with axes, labels and a legend.
#[must_use]
pub fn to_svg(title: &str, series: &[(&str, &[FootprintSample])]) -> String {
    let colours = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"];
    let t_max = series
        .iter()
        .flat_map(|(_, s)| s.last().map(|x| x.time_s))
        .fold(1.0_f64, f64::max);
    let h = TOP + 3.0 * PANEL_H + 2.0 * GAP + 50.0;
    let plot_w = W - LEFT - RIGHT;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{} (modelled)</text>"#,
        W / 2.0,
        escape(title)
    );
    type Get = fn(&FootprintSample) -> f64;
    /// Label, range, ticks, value.
    type Panel<'a> = (&'a str, f64, f64, &'a [(f64, &'a str)], Get);
    let panels: [Panel<'_>; 3] = [
        ("cluster", 0.0, 1.0, &[(0.0, "LITTLE"), (1.0, "big")], |x| {
            f64::from(u8::from(x.big))
        }),
        (
            "active cores",
            0.0,
            4.0,
            &[(0.0, "0"), (1.0, "1"), (2.0, "2"), (3.0, "3"), (4.0, "4")],
            |x| f64::from(x.active_cores),
        ),
        (
            "frequency (MHz)",
            0.0,
            1600.0,
            &[
                (250.0, "250"),
                (600.0, "600"),
                (800.0, "800"),
                (1200.0, "1200"),
                (1600.0, "1600"),
            ],
            |x| x.freq_mhz as f64,
        ),
    ];
    for (p, (label, lo, hi, ticks, get)) in panels.iter().enumerate() {
        let y0 = TOP + p as f64 * (PANEL_H + GAP);
        let ypos = |v: f64| y0 + PANEL_H - (v - lo) / (hi - lo) * PANEL_H;
        let _ = writeln!(
            s,
            r#"<rect x="{LEFT}" y="{y0}" width="{plot_w}" height="{PANEL_H}" fill="none" stroke="black"/>"#
        );
        let _ = writeln!(
            s,
            r#"<text x="16" y="{}" transform="rotate(-90 16 {})" text-anchor="middle">{label}</text>"#,
            y0 + PANEL_H / 2.0,
            y0 + PANEL_H / 2.0
        );
        for (v, name) in ticks.iter() {
            let y = ypos(*v);
            let _ = writeln!(
                s,
                r##"<line x1="{LEFT}" x2="{}" y1="{y}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{name}</text>"##,
                LEFT + plot_w,
                LEFT - 6.0,
                y + 4.0
            );
        }
        for (i, (_, samples)) in series.iter().enumerate() {
            let mut d = String::new();
            for (j, x) in samples.iter().enumerate() {
                let px = LEFT + x.time_s / t_max * plot_w;
                let py = ypos(get(x));
                let _ = write!(d, "{}{px:.1},{py:.1} ", if j == 0 { "M" } else { "L" });
            }
            let _ = writeln!(
                s,
                r#"<path d="{d}" fill="none" stroke="{}" stroke-width="1.2" opacity="0.85"/>"#,
                colours[i % colours.len()]
            );
        }
    }
    // Time axis under the last panel.
    let y_axis = TOP + 3.0 * PANEL_H + 2.0 * GAP;
    let step = if t_max > 60.0 { 20.0 } else { 10.0 };
    let mut t = 0.0;
    while t <= t_max + 1e-9 {
        let x = LEFT + t / t_max * plot_w;
        let _ = writeln!(
            s,
            r#"<line x1="{x}" x2="{x}" y1="{y_axis}" y2="{}" stroke="black"/><text x="{x}" y="{}" text-anchor="middle">{t:.0}</text>"#,
            y_axis + 5.0,
            y_axis + 18.0
        );
        t += step;
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">time (s)</text>"#,
        LEFT + plot_w / 2.0,
        y_axis + 36.0
    );
    for (i, (name, _)) in series.iter().enumerate() {
        let y = TOP + 10.0 + i as f64 * 18.0;
        let x = W - RIGHT + 15.0;
        let _ = writeln!(
            s,
            r#"<line x1="{x}" x2="{}" y1="{y}" y2="{y}" stroke="{}" stroke-width="3"/><text x="{}" y="{}">{}</text>"#,
            x + 20.0,
            colours[i % colours.len()],
            x + 26.0,
            y + 4.0,
            escape(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
