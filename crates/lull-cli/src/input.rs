//! `lull input show|record|inject`: read a `lull-trace 1` file, write one from a running
//! `lulld` or an input device, replay one into a running `lulld` (docs/traces.md).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use lull_lab::input_io::{self, RecordLimits, TraceWriter};
use lull_model::{EventKind, RawEvent};
use lull_os::fileout::AtomicFile;

#[derive(Subcommand, Debug)]
pub enum InputCommand {
    /// Check a `lull-trace 1` file and print it: span, events per kind, then each event with
    /// its time in seconds (docs/traces.md describes the format).
    Show(ShowArgs),
    /// Write a trace of the events a running lulld delivers (registered for --kinds, as an
    /// app), or of what an input device reports (--device). The file replaces -o's when the
    /// recording ends, Ctrl-C included, and is never written through a symbolic link.
    Record(RecordArgs),
    /// Replay a trace into a running lulld, each event at its time from now, to every app
    /// registered for its kind (as a data-plane producer, like `lulld --replay`).
    Inject(InjectArgs),
}

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The trace file to write (`-` for standard output).
    #[arg(long, short = 'o', value_name = "FILE")]
    out: PathBuf,
    /// Record an input device (/dev/input/eventN, or a pipe of struct input_event records)
    /// instead of a running lulld.
    #[arg(long, value_name = "PATH")]
    device: Option<PathBuf>,
    /// lulld's ESM socket (default: $XDG_RUNTIME_DIR/lull/esm.sock, else /run/lull/esm.sock).
    #[arg(long, value_name = "PATH", conflicts_with = "device")]
    socket: Option<PathBuf>,
    /// The kinds to record from lulld, comma-separated: touch_press, touch_motion,
    /// touch_release, key, mouse, net_message, timer, or all.
    #[arg(long, default_value = "all", conflicts_with = "device")]
    kinds: String,
    /// Stop after this many events.
    #[arg(long, value_name = "N")]
    count: Option<u64>,
    /// Stop after this many seconds (--device only: a lulld client waits for its next event).
    #[arg(long, value_name = "S", requires = "device")]
    seconds: Option<f64>,
}

#[derive(Args, Debug)]
pub struct InjectArgs {
    /// The trace file.
    file: PathBuf,
    /// lulld's ESM socket (default: $XDG_RUNTIME_DIR/lull/esm.sock, else /run/lull/esm.sock).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
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
    match cmd {
        InputCommand::Show(a) => show(a),
        InputCommand::Record(a) => record(a),
        InputCommand::Inject(a) => inject(a),
    }
}

/// Reads and checks a trace; the error names the file once (the reader's errors name it
/// already, the parser's do not).
fn load(path: &std::path::Path) -> Result<lull_workload::Trace, String> {
    let text = lull_os::input_file::read_bounded_text(path, lull_os::input_file::TRACE)
        .map_err(|e| e.to_string())?;
    lull_workload::Trace::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn parse_kinds(text: &str) -> Result<Vec<EventKind>, String> {
    if text == "all" {
        return Ok(EventKind::ALL.to_vec());
    }
    let mut kinds = Vec::new();
    for name in text.split(',').map(str::trim) {
        let k = EventKind::from_name(name).ok_or_else(|| {
            let names: Vec<&str> = EventKind::ALL.iter().map(|k| k.name()).collect();
            format!(
                "--kinds: unknown kind {name}; the kinds are {} (or all)",
                names.join(", ")
            )
        })?;
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    Ok(kinds)
}

/// A count on stderr every so often while a long command runs, so that a piped run is not
/// silent; a terminal gets the same lines.
struct Ticker {
    what: &'static str,
    last: std::time::Instant,
}

impl Ticker {
    /// How often a running count is printed.
    const EVERY: std::time::Duration = std::time::Duration::from_secs(5);

    fn new(what: &'static str) -> Ticker {
        Ticker {
            what,
            last: std::time::Instant::now(),
        }
    }

    fn tick(&mut self, n: u64) {
        if self.last.elapsed() >= Ticker::EVERY {
            self.last = std::time::Instant::now();
            eprintln!("{}: {n} events so far", self.what);
        }
    }
}

fn record(a: RecordArgs) -> ExitCode {
    const CMD: &str = "lull input record";
    let limits = RecordLimits {
        max_events: a.count,
        max_ns: a.seconds.map(|s| (s.max(0.0) * 1e9) as u64),
    };
    let kinds = match parse_kinds(&a.kinds) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("{CMD}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let socket = a
        .socket
        .clone()
        .unwrap_or_else(lull_os::sys::default_socket_path);
    let source = match &a.device {
        Some(d) => format!("recorded from the input device {}", d.display()),
        None => format!(
            "recorded from lulld at {} (kinds: {})",
            socket.display(),
            kinds
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    // A file goes through lull-os's atomic writer (never through a planted symlink or into a
    // device) and replaces the destination when the recording ends, Ctrl-C included.
    let mut file = if a.out.as_os_str() == "-" {
        None
    } else {
        match AtomicFile::create(&a.out) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("{CMD}: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    let mut stdout = std::io::stdout();
    let out: Box<dyn std::io::Write + '_> = match file.as_mut() {
        Some(f) => Box::new(f),
        None => Box::new(&mut stdout),
    };
    let mut writer = match TraceWriter::new(out, &source) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("{CMD}: writing {}: {e}", a.out.display());
            return ExitCode::FAILURE;
        }
    };
    eprintln!("{CMD}: {source}; stop with Ctrl-C (the file stays whole)");
    let mut ticker = Ticker::new(CMD);
    let r = match &a.device {
        Some(d) => input_io::DeviceRecorder::open(d)
            .and_then(|mut r| r.record(limits, &mut writer, |n| ticker.tick(n))),
        None => input_io::DaemonRecorder::connect(&socket, &kinds)
            .and_then(|mut r| r.record(limits, &mut writer, |n| ticker.tick(n))),
    };
    drop(writer);
    // What was recorded before an error is kept too: every line written is whole.
    if let Some(f) = file {
        if let Err(e) = f.commit() {
            eprintln!("{CMD}: {e}");
            return ExitCode::FAILURE;
        }
    }
    match r {
        Ok(r) => {
            eprintln!(
                "{CMD}: {} events over {:.3} s written to {} ({}){}{}",
                r.events,
                r.span_ns as f64 / 1e9,
                a.out.display(),
                r.ended,
                if r.dropped > 0 {
                    format!(
                        "; {} events were dropped before they were read and are not in it",
                        r.dropped
                    )
                } else {
                    String::new()
                },
                if r.reordered > 0 {
                    format!(
                        "; {} stamped before their predecessor, written at its time",
                        r.reordered
                    )
                } else {
                    String::new()
                }
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{CMD}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn inject(a: InjectArgs) -> ExitCode {
    const CMD: &str = "lull input inject";
    let trace = match load(&a.file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{CMD}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let socket = a.socket.unwrap_or_else(lull_os::sys::default_socket_path);
    let span_s = trace.span_ns() as f64 / 1e9;
    if span_s >= 3.0 {
        eprintln!(
            "{CMD}: {} events over {span_s:.1} s into lulld at {}",
            trace.events.len(),
            socket.display()
        );
    }
    let mut ticker = Ticker::new(CMD);
    match input_io::inject(&socket, &trace, |n| ticker.tick(n)) {
        Ok(r) if a.json => {
            println!("{}", crate::output::to_json(&r));
            ExitCode::SUCCESS
        }
        Ok(r) => {
            println!(
                "{} events injected into {} app(s): {} deliveries queued, {} events for no app, \
                 {} dropped at full rings; at most {:.3} ms late",
                r.events,
                r.apps,
                r.queued,
                r.unrouted,
                r.dropped,
                r.late_max_ns as f64 / 1e6
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{CMD}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn show(args: ShowArgs) -> ExitCode {
    let trace = match load(&args.file) {
        Ok(t) => t,
        Err(e) => return crate::output::failed("lull input show", &e, false),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_read_by_name_once_each() {
        assert_eq!(parse_kinds("all").unwrap(), EventKind::ALL);
        assert_eq!(
            parse_kinds("key, touch_press,key").unwrap(),
            [EventKind::Key, EventKind::TouchPress]
        );
        let err = parse_kinds("key,tap").unwrap_err();
        assert!(
            err.starts_with("--kinds: unknown kind tap; the kinds are touch_motion"),
            "{err}"
        );
    }
}
