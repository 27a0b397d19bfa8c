//! `lull report DIR`: reads `DIR/results/`, draws each section's plots to `DIR/report/*.svg` and
//! writes `DIR/report/index.html` referring to them.
//!
//! Plots are separate files referenced by `<img>` rather than inlined: each is a figure one can
//! take out of the page as it is, the page stays small enough to read as text, and a browser
//! check can tell a plot that loaded from one that did not.

use std::path::{Path, PathBuf};

use crate::html::{self, PageBlock, SectionPage};
use crate::view::Block;
use crate::{extract, load_dir, plots, Outcome, ResultsError};

/// Where under `DIR` the page goes.
pub const REPORT_SUBDIR: &str = "report";

/// What [`render`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderSummary {
    /// `DIR/report/index.html`.
    pub index: PathBuf,
    pub sections: usize,
    /// SVG files written.
    pub plots: usize,
    /// Plots the results had no data for, or that could not be drawn (each a note on the page).
    pub missing_plots: usize,
    /// Sections whose results file holds an error instead of data.
    pub failed_sections: usize,
}

/// Why a report could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Results(#[from] ResultsError),
    #[error("{path}: {source}", path = .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Renders the report of `dir`'s results files.
///
/// # Errors
/// [`ReportError::Results`] for a missing directory, no results, a file of another version or a
/// stray file; [`ReportError::Io`] when the report cannot be written.
pub fn render(dir: &Path) -> Result<RenderSummary, ReportError> {
    let files = load_dir(dir)?;
    let out = dir.join(REPORT_SUBDIR);
    std::fs::create_dir_all(&out).map_err(io(&out))?;
    remove_old_plots(&out)?;
    let mut plots_written = 0;
    let mut missing = 0;
    let mut pages = Vec::new();
    for file in &files {
        let mut blocks = Vec::new();
        for block in extract::blocks(file) {
            match block {
                Block::Plot(plot) => match plots::draw(&plot) {
                    Ok(svg) => {
                        plots_written += 1;
                        let name = format!("{}-{plots_written}.svg", file.section);
                        let path = out.join(&name);
                        std::fs::write(&path, svg).map_err(io(&path))?;
                        blocks.push(PageBlock::Plot {
                            svg: name,
                            alt: plot.caption(),
                        });
                    }
                    Err(e) => {
                        missing += 1;
                        blocks.push(PageBlock::Note(e.to_string()));
                    }
                },
                other => {
                    if let Block::Note(n) = &other {
                        if n.starts_with(extract::NO_DATA) {
                            missing += 1;
                        }
                    }
                    blocks.extend(PageBlock::of(other));
                }
            }
        }
        pages.push(SectionPage { file, blocks });
    }
    let index = out.join("index.html");
    let tmp = out.join(".index.html.tmp");
    std::fs::write(&tmp, html::page(&pages)).map_err(io(&tmp))?;
    std::fs::rename(&tmp, &index).map_err(io(&index))?;
    Ok(RenderSummary {
        index,
        sections: files.len(),
        plots: plots_written,
        missing_plots: missing,
        failed_sections: files
            .iter()
            .filter(|f| matches!(f.outcome, Outcome::Error(_)))
            .count(),
    })
}

/// The SVGs of an earlier render: a section that now has fewer plots must not leave old ones.
fn remove_old_plots(out: &Path) -> Result<(), ReportError> {
    for entry in std::fs::read_dir(out).map_err(io(out))? {
        let path = entry.map_err(io(out))?.path();
        if path.extension().is_some_and(|e| e == "svg") {
            std::fs::remove_file(&path).map_err(io(&path))?;
        }
    }
    Ok(())
}
