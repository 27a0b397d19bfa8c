//! What `lull reproduce` shows while it runs: which section and run is going and how long is
//! left. On a terminal, one live status line on stderr; piped, plain lines on stderr. Tables
//! and JSON stay on stdout either way.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// How often the status line redraws (its clock and estimate move between runs too).
const TICK: Duration = Duration::from_millis(250);

/// The sections planned, with the time each is expected to take, and where the run is.
struct Plan {
    expected_s: Vec<f64>,
    current: usize,
    section_start: Instant,
}

impl Plan {
    /// Seconds left: the sections not started, plus what the current one is expected to need
    /// beyond what it has taken (never below zero: an overrun shows as nothing left of it).
    fn left_s(&self, elapsed_in_current_s: f64) -> f64 {
        let later: f64 = self.expected_s.iter().skip(self.current + 1).sum();
        let now = self.expected_s.get(self.current).copied().unwrap_or(0.0);
        later + (now - elapsed_in_current_s).max(0.0)
    }

    fn left_now_s(&self) -> f64 {
        self.left_s(self.section_start.elapsed().as_secs_f64())
    }
}

enum Display {
    Line(ProgressBar),
    Plain,
}

/// The progress of one `lull reproduce`.
pub struct Progress {
    display: Display,
    plan: Arc<Mutex<Plan>>,
    tag: Arc<Mutex<String>>,
}

/// `1h02m`, `4m10s`, `12s`.
pub fn duration_text(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

impl Progress {
    /// A progress display for sections expected to take `expected_s` each, live when stderr is
    /// a terminal.
    pub fn new(expected_s: Vec<f64>) -> Self {
        let plan = Arc::new(Mutex::new(Plan {
            expected_s,
            current: 0,
            section_start: Instant::now(),
        }));
        let display = if std::io::stderr().is_terminal() {
            let left = Arc::clone(&plan);
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {prefix} · ~{left} left · {wide_msg}",
            )
            .expect("the template is valid")
            .with_key(
                "left",
                move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let secs = left.lock().map_or(0.0, |p| p.left_now_s());
                    let _ = w.write_str(&duration_text(secs));
                },
            );
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(style);
            bar.enable_steady_tick(TICK);
            Display::Line(bar)
        } else {
            Display::Plain
        };
        Progress {
            display,
            plan,
            tag: Arc::new(Mutex::new(String::new())),
        }
    }

    /// Section `nth` of `of` (counting the selected ones) starts.
    pub fn section(&self, nth: usize, of: usize, key: &str, title: &str) {
        let left = if let Ok(mut p) = self.plan.lock() {
            p.current = nth - 1;
            p.section_start = Instant::now();
            p.left_now_s()
        } else {
            0.0
        };
        let tag = format!("[{nth}/{of}] {key}");
        if let Ok(mut t) = self.tag.lock() {
            t.clone_from(&tag);
        }
        match &self.display {
            Display::Line(bar) => {
                bar.set_prefix(tag);
                bar.set_message(title.to_owned());
            }
            Display::Plain => eprintln!(
                "lull reproduce: {tag}: {title} (about {} left)",
                duration_text(left)
            ),
        }
    }

    /// A sink for `lull_lab::progress`, sharing this display.
    pub fn sink(&self) -> impl Fn(&str) + Send + Sync + 'static {
        let display = match &self.display {
            Display::Line(bar) => Display::Line(bar.clone()),
            Display::Plain => Display::Plain,
        };
        let tag = Arc::clone(&self.tag);
        move |line: &str| note_on(&display, &tag, line)
    }

    /// The current section ended after `secs`.
    pub fn section_done(&self, secs: f64, ok: bool) {
        if let Display::Plain = self.display {
            let tag = self.tag.lock().map(|t| t.clone()).unwrap_or_default();
            let how = if ok { "done" } else { "failed" };
            eprintln!("lull reproduce: {tag} {how} in {}", duration_text(secs));
        }
    }

    /// Prints `text` on stdout without tearing the status line.
    pub fn print(&self, text: &str) {
        match &self.display {
            Display::Line(bar) => bar.suspend(|| println!("{text}")),
            Display::Plain => println!("{text}"),
        }
    }

    /// Prints `text` on stderr without tearing the status line.
    pub fn eprint(&self, text: &str) {
        match &self.display {
            Display::Line(bar) => bar.suspend(|| eprintln!("{text}")),
            Display::Plain => eprintln!("{text}"),
        }
    }

    pub fn finish(&self) {
        if let Display::Line(bar) = &self.display {
            bar.finish_and_clear();
        }
    }
}

fn note_on(display: &Display, tag: &Mutex<String>, line: &str) {
    match display {
        Display::Line(bar) => bar.set_message(line.trim().to_owned()),
        Display::Plain => {
            let tag = tag.lock().map(|t| t.clone()).unwrap_or_default();
            eprintln!("lull reproduce: {tag}: {}", line.trim());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration_text(0.4), "0s");
        assert_eq!(duration_text(59.0), "59s");
        assert_eq!(duration_text(250.0), "4m10s");
        assert_eq!(duration_text(3725.0), "1h02m");
    }

    #[test]
    fn time_left_counts_later_sections_and_the_rest_of_this_one() {
        let p = Plan {
            expected_s: vec![100.0, 50.0, 25.0],
            current: 1,
            section_start: Instant::now(),
        };
        assert_eq!(p.left_s(0.0), 75.0);
        assert_eq!(p.left_s(20.0), 55.0);
        // An overrun of the current section leaves only the later ones.
        assert_eq!(p.left_s(80.0), 25.0);
        let past = Plan { current: 3, ..p };
        assert_eq!(past.left_s(0.0), 0.0);
    }
}
