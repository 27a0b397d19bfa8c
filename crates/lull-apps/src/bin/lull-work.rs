//! `lull-work --threads N --work-ms W [--barrier-ms B] [--report FILE]`: a fixed amount of CPU
//! work over N threads, with or without a barrier every B ms of work; run by
//! `lull live toggling` (see `lull_apps::work`).

// Unsafe code lives in the OS layer (`lull_os::sys`), behind safe wrappers.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use lull_apps::work::{self, WorkArgs};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("usage: lull-work --threads N --work-ms W [--barrier-ms B] [--report FILE]");
        return ExitCode::SUCCESS;
    }
    let args = match WorkArgs::parse(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("lull-work: {e}");
            return ExitCode::from(2);
        }
    };
    let report = work::run(&args);
    let json = match serde_json::to_string(&report) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("lull-work: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(path) = &args.report {
        if let Err(e) = lull_os::fileout::write_file_atomically(path, json.as_bytes()) {
            eprintln!("lull-work: cannot write the report: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
