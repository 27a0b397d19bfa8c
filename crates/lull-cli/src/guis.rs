//! `lull guis …`: guiS on this machine. The accounting is `lull_lab::guis_stats`'s; this parses and
//! prints.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use lull::kds_client::default_kds_socket;
use lull_lab::guis_stats::{self, AppStats};

use crate::output::{self, fixed, Col};

#[derive(Subcommand, Debug)]
pub enum GuisCommand {
    /// CPU time and wake-ups of every GUI app's declared threads, per category, since each
    /// thread started (read from /proc).
    Stats(StatsArgs),
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// The display server's control socket (default: $LULL_KDS_SOCKET, else kds.sock beside
    /// lulld's default ESM socket).
    #[arg(long)]
    kds_socket: Option<PathBuf>,
    /// Print JSON: [{"app","pid","name","window_state","threads":[{"category","tid",
    /// "usage":{"cpu_ms","wakeups","threads"},"involuntary_switches","state"},…],"total"},…].
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: GuisCommand) -> ExitCode {
    match cmd {
        GuisCommand::Stats(a) => {
            let path = a.kds_socket.unwrap_or_else(default_kds_socket);
            match guis_stats::stats(&path) {
                Ok(s) => output::print_report(&s, a.json, |s| table(s)),
                Err(e) => {
                    // A failed connect names the socket already; later errors do not.
                    if matches!(e, lull::kds_client::KdsClientError::Connect { .. }) {
                        eprintln!("lull guis stats: {e}");
                    } else {
                        eprintln!("lull guis stats: {}: {e}", path.display());
                    }
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn table(apps: &[AppStats]) -> String {
    let mut t = String::new();
    if apps.is_empty() {
        let _ = writeln!(t, "no GUI apps attached");
        return t;
    }
    const COLS: [Col; 8] = [
        Col::Left("app", 10),
        Col::Right("pid", 7),
        Col::Left("name", 16),
        Col::Left("category", 11),
        Col::Right("tid", 8),
        Col::Right("cpu ms", 10),
        Col::Right("wakeups", 9),
        Col::Right("state", 5),
    ];
    let _ = writeln!(t, "{}", output::head(&COLS));
    for a in apps {
        for th in &a.threads {
            let cells = [
                a.app.to_string(),
                a.pid.to_string(),
                a.name.clone(),
                th.category.name().to_owned(),
                th.tid.to_string(),
                fixed(th.usage.cpu_ms, 1),
                th.usage.wakeups.to_string(),
                th.state
                    .map_or_else(|| "gone".to_owned(), |c| c.to_string()),
            ];
            let _ = writeln!(t, "{}", output::row(&COLS, cells));
        }
        // The app's total has no state column.
        let total = [
            a.app.to_string(),
            a.pid.to_string(),
            a.name.clone(),
            "total".to_owned(),
            String::new(),
            fixed(a.total.cpu_ms, 1),
            a.total.wakeups.to_string(),
        ];
        let _ = writeln!(t, "{}", output::row(&COLS[..7], total));
    }
    t
}
