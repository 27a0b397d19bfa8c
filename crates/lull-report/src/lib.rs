//! Lull's results as files.
//!
//! `lull reproduce --out DIR` writes one [`ResultFile`] per experiment under `DIR/results/`;
//! `lull report DIR` and the Python package read them back through [`load_dir`]. The format is
//! versioned ([`FORMAT_VERSION`]): a reader meets a file of another version with
//! [`ResultsError::Version`], never a guess. [`render`] turns a results directory into a static
//! HTML page with SVG plots (`docs/report.md`).

mod extract;
mod html;
mod plots;
mod provenance;
mod render;
mod results;
pub mod scoreboard;
mod view;

pub use extract::{core_svgs, NoCoreSvg};
pub use plots::PlotError;
pub use provenance::{civil_date_utc, Machine, Provenance};
pub use render::{render, RenderSummary, ReportError, REPORT_SUBDIR};
pub use results::{
    load_dir, load_file, results_dir, write, Label, Outcome, ResultFile, ResultsError, FORMAT,
    FORMAT_VERSION, RESULTS_SUBDIR,
};
