//! What seed 004 states about its scheduling schemes. Figure 3.9 is a bar chart whose only number
//! in the text is the best speedup; figures 3.1–3.8 are core-over-time plots, described here by
//! what the text says they show.

use serde::Serialize;

/// The scheme figure 3.9 finds fastest on both programs: "the best speeds are obtained by
/// toggling each thread between big and LITTLE every 0.25s".
pub const BEST_MODEL: &str = "toggle-0.25s";
/// §3.2: "we speed up the multi-threaded applications up to 14%".
pub const MAX_SPEEDUP_PCT: f64 = 14.0;

/// What the text says one of figures 3.1–3.8 shows.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct FigureNote {
    pub figure: &'static str,
    pub program: &'static str,
    pub model: &'static str,
    pub shows: &'static str,
}

/// Figure 3.9 as the text states it, and the notes on figures 3.1–3.8.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct Figure39 {
    pub best_model: &'static str,
    pub max_speedup_pct: f64,
    pub figures: Vec<FigureNote>,
}

/// Seed 004's statements.
#[must_use]
pub fn figure_3_9() -> Figure39 {
    let n = |figure, program, model, shows| FigureNote {
        figure,
        program,
        model,
        shows,
    };
    Figure39 {
        best_model: BEST_MODEL,
        max_speedup_pct: MAX_SPEEDUP_PCT,
        figures: vec![
            n("3.1", "blackscholes", "baseline", "threads end unevenly: one always on a big core ends first, one mostly on a LITTLE core ends last"),
            n("3.2", "vips", "baseline", "threads end at about the same time; the synchronisation makes them change cores all the time"),
            n("3.3", "blackscholes", "affinity-1", "uneven ends again (no synchronisation)"),
            n("3.4", "vips", "affinity-1", "threads still end together, and faster than the baseline (no needless migrations)"),
            n("3.5", "blackscholes", "affinity-2", "a busy thread is not moved between its two cores (Linux keeps a task that uses its core well)"),
            n("3.6", "vips", "affinity-2", "plot only; the text states no finding"),
            n("3.7", "blackscholes", "toggle-0.25s", "faster execution than every other scheme"),
            n("3.8", "vips", "toggle-0.25s", "faster execution than every other scheme"),
        ],
    }
}
