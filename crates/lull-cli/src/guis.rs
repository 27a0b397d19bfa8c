//! `lull guis …`: guiS on this machine. The accounting is `lull_lab::guis_stats`'s; this parses and
//! prints.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use lull::kds_client::default_kds_socket;
use lull_lab::guis_stats::{self, AppStats};

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
                Ok(s) if a.json => {
                    println!("{}", crate::output::to_json(&s));
                    ExitCode::SUCCESS
                }
                Ok(s) => {
                    print!("{}", table(&s));
                    ExitCode::SUCCESS
                }
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
    let _ = writeln!(
        t,
        "{:<10} {:>7} {:<16} {:<11} {:>8} {:>10} {:>9} {:>5}",
        "app", "pid", "name", "category", "tid", "cpu ms", "wakeups", "state"
    );
    for a in apps {
        for th in &a.threads {
            let _ = writeln!(
                t,
                "{:<10} {:>7} {:<16} {:<11} {:>8} {:>10.1} {:>9} {:>5}",
                a.app.to_string(),
                a.pid,
                a.name,
                th.category.name(),
                th.tid,
                th.usage.cpu_ms,
                th.usage.wakeups,
                th.state
                    .map_or_else(|| "gone".to_owned(), |c| c.to_string())
            );
        }
        let _ = writeln!(
            t,
            "{:<10} {:>7} {:<16} {:<11} {:>8} {:>10.1} {:>9}",
            a.app.to_string(),
            a.pid,
            a.name,
            "total",
            "",
            a.total.cpu_ms,
            a.total.wakeups
        );
    }
    t
}
