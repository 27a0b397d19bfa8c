//! `lull report DIR`: reads `DIR/results/`, draws each section's plots to `DIR/report/*.svg` and
//! writes `DIR/report/index.html` referring to them.
//!
//! Plots are separate files referenced by `<img>` rather than inlined: each is a figure one can
//! take out of the page as it is, the page stays small enough to read as text, and a browser
//! check can tell a plot that loaded from one that did not.

use std::path::{Path, PathBuf};

use crate::html::{self, PageBlock, SectionPage};
use crate::scoreboard::{self, Evidence, EvidenceError};
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
    #[error(transparent)]
    Evidence(#[from] EvidenceError),
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
    let mut drawn = Drawn::default();
    let mut pages = Vec::new();
    for file in &files {
        let blocks = drawn.page_blocks(extract::blocks(file), &file.section, &out)?;
        pages.push(SectionPage { file, blocks });
    }
    let evidence = Evidence::load(dir)?;
    let rows = scoreboard::rows(&files, evidence.as_ref());
    let board = html::Board {
        rows: &rows,
        evidence: evidence.as_ref(),
    };
    let index = out.join("index.html");
    lull_os::fileout::write_file_atomically(&index, html::page(&pages, &board).as_bytes())
        .map_err(|e| io(&index)(e.into_io()))?;
    Ok(RenderSummary {
        index,
        sections: files.len(),
        plots: drawn.plots,
        missing_plots: drawn.missing,
        failed_sections: files
            .iter()
            .filter(|f| matches!(f.outcome, Outcome::Error(_)))
            .count(),
    })
}

/// The plots written so far and the plots that had no data or could not be drawn.
#[derive(Default)]
struct Drawn {
    plots: usize,
    missing: usize,
}

impl Drawn {
    /// `blocks` as the page shows them, each plot drawn to `out/<section>-<n>.svg` (numbered
    /// across the whole report), a folded group's blocks in turn.
    fn page_blocks(
        &mut self,
        blocks: Vec<Block>,
        section: &str,
        out: &Path,
    ) -> Result<Vec<PageBlock>, ReportError> {
        let mut page = Vec::with_capacity(blocks.len());
        for block in blocks {
            match block {
                Block::Plot(plot) => match plots::draw(&plot) {
                    Ok(svg) => {
                        self.plots += 1;
                        let name = format!("{section}-{}.svg", self.plots);
                        let path = out.join(&name);
                        lull_os::fileout::write_file_atomically(&path, svg.as_bytes())
                            .map_err(|e| io(&path)(e.into_io()))?;
                        page.push(PageBlock::Plot {
                            svg: name,
                            alt: plot.caption(),
                        });
                    }
                    Err(e) => {
                        self.missing += 1;
                        page.push(PageBlock::Note(e.to_string()));
                    }
                },
                Block::Fold { summary, blocks } => {
                    let blocks = self.page_blocks(blocks, section, out)?;
                    page.push(PageBlock::Fold { summary, blocks });
                }
                other => {
                    self.missing += usize::from(matches!(other, Block::NoData(_)));
                    page.extend(PageBlock::of(other));
                }
            }
        }
        Ok(page)
    }
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

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::{write, Label, Provenance, ResultFile};

    fn file(section: &str, index: usize, outcome: Outcome) -> ResultFile {
        let mut provenance = Provenance::fixture();
        // A name the page must escape.
        provenance.machine.hostname = "h<ost>".into();
        ResultFile::new(
            section,
            index,
            "T & t",
            Label::Modelled,
            provenance,
            0.5,
            outcome,
        )
    }

    /// A directory not made yet, inside a fresh private one removed on drop (even when the test
    /// fails).
    fn tempdir(tag: &str) -> (lull_os::fileout::ScratchDir, PathBuf) {
        let scratch = lull_os::fileout::ScratchDir::new(&format!("lull-render-{tag}")).unwrap();
        let dir = scratch.path().join("results");
        (scratch, dir)
    }

    #[test]
    fn plots_notes_and_error_sections_on_one_page() {
        let (_scratch, dir) = tempdir("page");
        let power = json!({"tracking-10s": {"models": {"esm": {"events_handled": 0, "power_mw_per_100ms": [900.0, 910.0]}}}});
        write(&dir, &file("marz_sim", 1, Outcome::Data(power))).unwrap();
        // Results from before the distributions: a note, not a plot.
        let old = json!({"tracking_20s": [{"model": "esm", "latency_us": {"mean": 70.0}}]});
        write(&dir, &file("live_esm", 2, Outcome::Data(old))).unwrap();
        write(
            &dir,
            &file("audit", 3, Outcome::Error("no <tracefs>".into())),
        )
        .unwrap();
        // A stale plot of an earlier render goes.
        let out = dir.join(REPORT_SUBDIR);
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("old-9.svg"), "<svg/>").unwrap();

        let s = render(&dir).unwrap();
        assert_eq!(
            (s.sections, s.plots, s.missing_plots, s.failed_sections),
            (3, 1, 1, 1)
        );
        let html = std::fs::read_to_string(&s.index).unwrap();
        assert!(html.contains("<img class=\"plot\" src=\"marz_sim-1.svg\""));
        assert!(html.contains("No data for the plot of"));
        assert!(html.contains("<div class=\"error\">"));
        // Words align left, numbers right.
        assert!(
            html.contains("<td class=\"t\">esm</td><td>–</td>"),
            "{html}"
        );
        assert!(html.contains("no &lt;tracefs&gt;") && html.contains("h&lt;ost&gt;"));
        assert!(!html.contains("http://") && !html.contains("https://"));
        let svg = std::fs::read_to_string(out.join("marz_sim-1.svg")).unwrap();
        assert!(svg.contains("(modelled)"));
        assert!(!out.join("old-9.svg").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn folded_plots_are_drawn_and_counted_inside_details() {
        let (_scratch, dir) = tempdir("fold");
        let thread = |cores: Value| json!({"end_s": 1.0, "cores": cores});
        let data = json!({"vips": {"fast_cpus": [1], "slow_cpus": [0], "models": [
            {"model": "baseline", "completion_s": 1.0,
             "threads": [thread(json!([[0.0, 1], [0.5, 0]]))]},
            {"model": "equalise", "completion_s": 1.0, "threads": [thread(json!([[0.0, 2]]))]},
        ]}});
        write(&dir, &file("toggling_sim", 1, Outcome::Data(data))).unwrap();
        let s = render(&dir).unwrap();
        // Each scheme's speedup is missing (one note) and equalise's core 2 is not a CPU.
        assert_eq!((s.plots, s.missing_plots), (1, 2));
        let html = std::fs::read_to_string(&s.index).unwrap();
        let fold = &html[html.find("<details><summary>").expect("a fold")..];
        let fold = &fold[..fold.find("</details>").unwrap()];
        assert!(fold.contains("<img class=\"plot\" src=\"toggling_sim-1.svg\""));
        assert!(
            fold.contains("core 2 at 0 s, not one of the CPUs"),
            "{fold}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_directories_are_typed_errors() {
        let (_scratch, dir) = tempdir("bad");
        assert!(matches!(
            render(&dir),
            Err(ReportError::Results(ResultsError::MissingDir(_)))
        ));
        std::fs::create_dir_all(crate::results_dir(&dir)).unwrap();
        assert!(matches!(
            render(&dir),
            Err(ReportError::Results(ResultsError::Empty(_)))
        ));
        let other = json!({"format": "lull-results", "version": 2, "section": "x"});
        std::fs::write(crate::results_dir(&dir).join("x.json"), other.to_string()).unwrap();
        let e = render(&dir).unwrap_err();
        assert!(matches!(
            e,
            ReportError::Results(ResultsError::Version { found: 2, .. })
        ));
        assert!(e.to_string().contains("version 2"), "{e}");
        std::fs::write(crate::results_dir(&dir).join("x.json"), "{}").unwrap();
        assert!(matches!(
            render(&dir),
            Err(ReportError::Results(ResultsError::NotResults { .. }))
        ));
        // Nothing was written for a directory that failed.
        assert!(!dir.join(REPORT_SUBDIR).exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_page_opens_with_the_scoreboard_computed_from_the_results() {
        let (_scratch, dir) = tempdir("board");
        let marz = |esm_mw: f64| {
            json!({"tracking-10s": {"experiment": "tracking-10s", "models": {
                "pull-16ms": {"power_mw_mean": 1000.0}, "esm-kds-guis": {"power_mw_mean": esm_mw}}}})
        };
        write(&dir, &file("marz_sim", 7, Outcome::Data(marz(998.0)))).unwrap();
        let claim = json!({"title": "Marz power, 10 s", "seed": -5.2, "seed_source": "seed 000 ch. 6",
            "unit": "%", "tolerance": 1.5, "signed": true, "ours_at_defaults": -0.2,
            "region": {"framework.app_poll_cycles": [4000000]}, "plausible_holding_points": 0,
            "cause": "most sensitive to the <poll>"});
        let evidence = json!({"version": 1, "command": "python -m lull.verdicts", "date": "2026-11-28",
            "elapsed_s": 1.0, "runs": 3, "claims": {"marz_power_tracking_10s": claim}});
        std::fs::write(dir.join(scoreboard::EVIDENCE_FILE), evidence.to_string()).unwrap();
        render(&dir).unwrap();
        let page = std::fs::read_to_string(dir.join(REPORT_SUBDIR).join("index.html")).unwrap();
        let board = page.find("id=\"scoreboard\"").expect("a scoreboard");
        let first_section = page.find("<section id=\"marz_sim\"").unwrap();
        assert!(board < first_section && board < page.find("<nav>").unwrap());
        let row = &page[page.find("id=\"claim-marz_power_tracking_10s\"").unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        // Ours is this run's -0.2 %, the verdict differs, the cause is escaped, the section linked.
        assert!(row.contains("-0.2 %") && row.contains("-5.2 %"), "{row}");
        assert!(
            row.contains(">differs<") && row.contains("the &lt;poll&gt;"),
            "{row}"
        );
        assert!(row.contains("href=\"#marz_sim\""), "{row}");
        // A claim whose section did not run says so.
        let ucsg = &page[page.find("id=\"claim-ucsg_energy_fm_none\"").unwrap()..];
        assert!(ucsg[..ucsg.find("</tr>").unwrap()].contains("not reproducible here"));
        // The same evidence with a run whose figure is the seed's: reproduced.
        write(&dir, &file("marz_sim", 7, Outcome::Data(marz(948.0)))).unwrap();
        render(&dir).unwrap();
        let page = std::fs::read_to_string(dir.join(REPORT_SUBDIR).join("index.html")).unwrap();
        let row = &page[page.find("id=\"claim-marz_power_tracking_10s\"").unwrap()..];
        assert!(row[..row.find("</tr>").unwrap()].contains(">reproduced<"));
        // An evidence file of another version stops the report with a typed error.
        std::fs::write(
            dir.join(scoreboard::EVIDENCE_FILE),
            r#"{"version": 9, "command": "", "date": "", "claims": {}}"#,
        )
        .unwrap();
        assert!(matches!(render(&dir), Err(ReportError::Evidence(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
