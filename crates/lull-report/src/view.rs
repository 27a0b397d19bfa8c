//! What a section of the report shows, as data: plots, tables of numbers and notes. The
//! extractors (`extract`) build it from a section's JSON; `plots` draws it and `html` lays it out.

use crate::Label;

/// One block of a section, in page order.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A sub-heading inside the section (one experiment of several).
    Heading(String),
    Plot(Plot),
    Table(Table),
    /// A plain sentence about the section's data.
    Note(String),
    /// A plot the section's JSON has no data for: which one and why, shown as a note.
    NoData(String),
    /// A group of blocks shown folded under a one-line summary, opened by a click: many plots
    /// of one kind that would otherwise push the section's tables far down the page.
    Fold {
        summary: String,
        blocks: Vec<Block>,
    },
}

/// One plot: what it shows, its label, and the data of its kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// The plot's title; the SVG caption adds the measured/modelled label to it.
    pub title: String,
    pub label: Label,
    pub kind: PlotKind,
}

/// A named series of points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// One model's CPU footprint over time (seed 001 figure 8).
#[derive(Debug, Clone, PartialEq)]
pub struct Footprint {
    pub model: String,
    /// (time s, on the big cluster, active cores, frequency MHz).
    pub samples: Vec<(f64, bool, f64, f64)>,
}

/// One thread's cores over time (seed 004 figures 3.1–3.8).
#[derive(Debug, Clone, PartialEq)]
pub struct CoreTrace {
    pub name: String,
    /// (from when s, CPU number) at each change of core, in time order.
    pub steps: Vec<(f64, usize)>,
    /// When it ended (s); `None` if it had not.
    pub end_s: Option<f64>,
}

/// One bar of a bar chart: what it stands for, its value, and the smallest and largest of the
/// runs behind it where there were several (drawn as a whisker).
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub name: String,
    pub value: f64,
    pub range: Option<(f64, f64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PlotKind {
    /// A latency distribution per model: each series is (value, percent at or below it), drawn
    /// as a step line on a logarithmic value axis.
    Cdf { unit: String, series: Vec<Series> },
    /// Values over time, one line per series.
    TimeSeries {
        x_label: String,
        y_label: String,
        series: Vec<Series>,
    },
    /// Three panels over time: big cluster or not, active cores, frequency.
    Footprint(Vec<Footprint>),
    /// One figure against another per item (e.g. simulated against measured), with the line
    /// where they agree.
    Scatter {
        x_label: String,
        y_label: String,
        log: bool,
        series: Vec<Series>,
    },
    /// One figure per item (a model, a policy) as bars from zero, negative values below it.
    Bars { y_label: String, bars: Vec<Bar> },
    /// Each thread's core over time as a step line, one lane per CPU, the slow (LITTLE) CPUs'
    /// lanes shaded, a dot where each thread ended; time runs from 0 to `end_s`.
    Cores {
        fast_cpus: Vec<usize>,
        slow_cpus: Vec<usize>,
        end_s: f64,
        threads: Vec<CoreTrace>,
    },
}

/// A table of numbers: ours beside the seed's where the section's JSON carries them.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Plot {
    /// The caption written inside the SVG: the title and the label, so a plot copied out of the
    /// page still says whether it was measured or modelled.
    #[must_use]
    pub fn caption(&self) -> String {
        format!("{} ({})", self.title, self.label)
    }
}
