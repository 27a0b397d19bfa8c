//! A `lull-app` process driven by a live experiment (the UCSG cells, the painting run): spawned,
//! its ready line read, told `go` and `stop` on its stdin, its report read from its stdout,
//! killed if dropped while it runs.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::Duration;

use lull_os::sys;

use lull_apps::{AppReport, Ready};

/// How long an app may take to start, and to report after `stop`.
const APP_TIMEOUT: Duration = Duration::from_secs(60);

/// Why talking to an app process failed.
#[derive(Debug, thiserror::Error)]
pub enum AppProcError {
    #[error("{app}: {why}")]
    App { app: &'static str, why: String },
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// One `lull-app` process, spoken to over its stdin and stdout (`lull_apps`' protocol).
pub(crate) struct AppProc {
    pub(crate) name: &'static str,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    pub(crate) pid: u32,
}

impl AppProc {
    pub(crate) fn spawn(name: &'static str, mut cmd: Command) -> Result<AppProc, AppProcError> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take();
        let out = child.stdout.take();
        let (tx, rx) = mpsc::channel();
        if let Some(out) = out {
            thread::Builder::new()
                .name("lull-app-out".into())
                .spawn(move || {
                    for line in BufReader::new(out).lines().map_while(Result::ok) {
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                })?;
        }
        let mut p = AppProc {
            name,
            child,
            stdin,
            lines: rx,
            pid: 0,
        };
        let line = p.line(APP_TIMEOUT, "ready line")?;
        let ready: Ready =
            serde_json::from_str(&line).map_err(|e| p.err(format!("{line}: {e}")))?;
        p.pid = ready.pid;
        Ok(p)
    }

    pub(crate) fn err(&self, why: String) -> AppProcError {
        AppProcError::App {
            app: self.name,
            why,
        }
    }

    pub(crate) fn line(&mut self, timeout: Duration, what: &str) -> Result<String, AppProcError> {
        self.lines
            .recv_timeout(timeout)
            .map_err(|e| self.err(format!("no {what} ({e})")))
    }

    pub(crate) fn say(&mut self, what: &str) -> Result<(), AppProcError> {
        let s = self.stdin.as_mut().ok_or_else(|| AppProcError::App {
            app: self.name,
            why: "stdin closed".into(),
        })?;
        writeln!(s, "{what}")?;
        s.flush()?;
        Ok(())
    }

    /// CPU time of the process and its reaped children, ms.
    pub(crate) fn cpu_ms(&self) -> f64 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) else {
            return 0.0;
        };
        let Some(i) = stat.rfind(')') else { return 0.0 };
        let f: Vec<&str> = stat[i + 1..].split_whitespace().collect();
        // Fields 14–17 (utime, stime, cutime, cstime), counted from field 3 after the name.
        let ticks: u64 = (14..=17)
            .filter_map(|n| f.get(n - 3).and_then(|v| v.parse::<u64>().ok()))
            .sum();
        let hz = sys::clock_ticks_per_s() as f64;
        ticks as f64 * 1_000.0 / hz
    }

    pub(crate) fn stop(mut self) -> Result<AppReport, AppProcError> {
        self.say("stop")?;
        let line = self.line(APP_TIMEOUT, "report")?;
        let r = serde_json::from_str(&line).map_err(|e| self.err(format!("report: {e}")))?;
        self.stdin = None;
        let _ = self.child.wait();
        Ok(r)
    }
}

impl Drop for AppProc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
