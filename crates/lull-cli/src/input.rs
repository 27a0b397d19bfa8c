//! `lull input show`: a `lull-trace 1` file, human-readably (docs/traces.md).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use lull_model::RawEvent;

#[derive(Subcommand, Debug)]
pub enum InputCommand {
    /// Check a `lull-trace 1` file and print it: span, events per kind, then each event with
    /// its time in seconds (docs/traces.md describes the format).
    Show(ShowArgs),
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// The trace file.
    file: PathBuf,
    /// Print at most this many events (the summary covers them all).
    #[arg(long, value_name = "N")]
    head: Option<usize>,
}

fn kind(raw: &RawEvent) -> &'static str {
    match raw {
        RawEvent::Touch { .. } => "touch",
        RawEvent::Key { .. } => "key",
        RawEvent::Mouse { .. } => "mouse",
        RawEvent::Net { .. } => "net",
        RawEvent::Timer { .. } => "timer",
    }
}

pub fn run(cmd: InputCommand) -> ExitCode {
    let InputCommand::Show(args) = cmd;
    let trace = match lull_lab::live::load_trace(&args.file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("lull input show: {}: {e}", args.file.display());
            return ExitCode::FAILURE;
        }
    };
    let mut per_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for ev in &trace.events {
        *per_kind.entry(kind(&ev.raw)).or_default() += 1;
    }
    let span_s = trace.events.last().map_or(0.0, |e| e.at_ns as f64 / 1e9);
    let kinds: Vec<String> = per_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
    println!(
        "{}: lull-trace 1, {} events over {span_s:.3} s ({})",
        args.file.display(),
        trace.events.len(),
        if kinds.is_empty() {
            "none".to_owned()
        } else {
            kinds.join(", ")
        }
    );
    let shown = args.head.unwrap_or(usize::MAX);
    for ev in trace.events.iter().take(shown) {
        println!("{:>14.6} s  {}", ev.at_ns as f64 / 1e9, ev.raw);
    }
    if trace.events.len() > shown {
        println!("… {} more", trace.events.len() - shown);
    }
    ExitCode::SUCCESS
}
