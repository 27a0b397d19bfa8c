//! `lull report DIR`: renders `DIR/report/index.html` from the results files `lull reproduce
//! --out DIR` wrote. Parsing and printing only; the page is `lull_report::render`'s.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The directory `lull reproduce --out` wrote (it holds `results/*.json`).
    pub dir: PathBuf,
}

pub fn run(args: &ReportArgs) -> ExitCode {
    match lull_report::render(&args.dir) {
        Ok(s) => {
            println!(
                "{}: {} sections, {} plots{}{}",
                s.index.display(),
                s.sections,
                s.plots,
                if s.missing_plots > 0 {
                    format!(
                        ", {} plots without data (noted on the page)",
                        s.missing_plots
                    )
                } else {
                    String::new()
                },
                if s.failed_sections > 0 {
                    format!(", {} sections that did not run", s.failed_sections)
                } else {
                    String::new()
                }
            );
            ExitCode::SUCCESS
        }
        Err(e) => crate::output::failed("lull report", &e, false),
    }
}
