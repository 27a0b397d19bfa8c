//! Which run of a long experiment is going, for whoever shows progress.
//!
//! The lab's long experiments (the live apps, the toggling runs…) call [`note`] as each run
//! begins or ends. Without a sink the line goes to stderr, as it always did; `lull reproduce`
//! installs one with [`set_sink`] that puts the line on its progress display instead. A
//! process-wide sink keeps the experiments' signatures free of a reporting parameter that every
//! other caller would have to pass.

use std::sync::RwLock;

type Sink = Box<dyn Fn(&str) + Send + Sync>;

static SINK: RwLock<Option<Sink>> = RwLock::new(None);

/// Installs the function given every progress line, replacing any earlier one.
pub fn set_sink(sink: impl Fn(&str) + Send + Sync + 'static) {
    if let Ok(mut slot) = SINK.write() {
        *slot = Some(Box::new(sink));
    }
}

/// Removes the sink: lines go to stderr again.
pub fn clear_sink() {
    if let Ok(mut slot) = SINK.write() {
        *slot = None;
    }
}

/// Tells the sink, or stderr when there is none, one line about the run in progress.
pub fn note(line: &str) {
    match SINK.read().as_deref() {
        Ok(Some(sink)) => sink(line),
        _ => eprintln!("{line}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn sink_gets_lines_while_installed() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        note("before (stderr)");
        let s = Arc::clone(&seen);
        set_sink(move |w| s.lock().unwrap().push(w.to_owned()));
        note("progress test: a");
        note("progress test: b");
        clear_sink();
        note("after (stderr)");
        // Other tests of this binary may note lines meanwhile; only this test's count.
        let seen = seen.lock().unwrap();
        let ours: Vec<&String> = seen
            .iter()
            .filter(|l| l.starts_with("progress test"))
            .collect();
        assert_eq!(ours, ["progress test: a", "progress test: b"]);
    }
}
