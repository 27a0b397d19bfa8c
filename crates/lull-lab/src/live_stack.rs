//! The daemon of a live experiment: `lulld`'s [`Daemon`] with its display server, run on a
//! thread of the experiment's own process, stopped and joined once, on drop or by
//! [`LiveDaemon::join`].
//!
//! Every experiment that brings the stack up (`experiment`, `vtcfs_live`, `ucsg_live`,
//! `kds_demo`) builds it here with [`LiveStack`]: where the sockets go, the display server's
//! screen, and a set-up step that runs on the daemon's thread (the daemon's sources are not
//! `Send`) to switch on the experiment's policy and add its devices.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};

use lull_os::bpf::scx_facts::FACTS_PIN_PATH;
use lull_os::sys;
use lulld::daemon::{Daemon, DaemonConfig, DaemonError, DaemonReport, Stopper};
use lulld::kds::KdsConfig;

/// While lull-scx is loaded (its facts map is pinned), has the daemon feed it.
///
/// # Errors
/// The daemon's, without its display server.
pub fn feed_if_loaded(d: &mut Daemon) -> Result<(), DaemonError> {
    if Path::new(FACTS_PIN_PATH).exists() {
        d.enable_scx_feed(Path::new(FACTS_PIN_PATH))?;
    }
    Ok(())
}

/// The two sockets of one live daemon: its ESM clients' and its display server's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonSockets {
    pub esm: PathBuf,
    pub kds: PathBuf,
}

impl DaemonSockets {
    /// Fresh names for `tag`'s sockets: in the runtime directory when there is one, else in
    /// `fallback` (a private scratch directory, never a predictable name in the shared temporary
    /// directory). Unique per process and call, so runs in one process never share a socket.
    #[must_use]
    pub fn fresh(tag: &str, fallback: &Path) -> DaemonSockets {
        static NTH: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::var_os("XDG_RUNTIME_DIR")
            .filter(|d| !d.is_empty())
            .map_or_else(|| fallback.to_owned(), PathBuf::from);
        let stem = format!(
            "lull-{tag}-{}-{}",
            std::process::id(),
            NTH.fetch_add(1, Ordering::Relaxed)
        );
        DaemonSockets {
            esm: dir.join(format!("{stem}.sock")),
            kds: dir.join(format!("{stem}.kds.sock")),
        }
    }

    /// `esm.sock` and `kds.sock` in `dir`, for a daemon that owns a private directory.
    #[must_use]
    pub fn in_dir(dir: &Path) -> DaemonSockets {
        DaemonSockets {
            esm: dir.join("esm.sock"),
            kds: dir.join("kds.sock"),
        }
    }
}

/// An experiment's set-up step's error, whatever its type (binding, the display server, a
/// policy, a device), kept with its source chain.
pub type SetupError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why the live daemon did not start or did not end cleanly.
#[derive(Debug, thiserror::Error)]
pub enum LiveDaemonError {
    #[error("starting the daemon's thread: {0}")]
    Spawn(#[source] std::io::Error),
    /// Binding, the display server, or the experiment's own set-up step failed.
    #[error("setting the daemon up: {0}")]
    Setup(#[source] SetupError),
    #[error("the daemon's thread ended while starting")]
    Gone,
    #[error("the daemon failed: {0}")]
    Run(#[source] DaemonError),
    #[error("the daemon's thread panicked")]
    Panicked,
}

/// How to bring a live daemon up: its sockets, its display server's screen, its thread's name.
#[derive(Clone, Debug)]
pub struct LiveStack {
    sockets: DaemonSockets,
    screen: Option<(u32, u32)>,
    thread_name: String,
}

impl LiveStack {
    /// A daemon at `sockets`, its display server on the default screen (seed 000's 1080p,
    /// headless).
    #[must_use]
    pub fn new(sockets: DaemonSockets) -> LiveStack {
        LiveStack {
            sockets,
            screen: None,
            thread_name: "lull-daemon".into(),
        }
    }

    /// The display server's screen, px.
    #[must_use]
    pub fn screen(mut self, width: u32, height: u32) -> LiveStack {
        self.screen = Some((width, height));
        self
    }

    /// The daemon thread's name, as `/proc` shows it to the experiment's probes.
    #[must_use]
    pub fn thread_name(mut self, name: &str) -> LiveStack {
        name.clone_into(&mut self.thread_name);
        self
    }

    /// The sockets the daemon listens on.
    #[must_use]
    pub fn sockets(&self) -> &DaemonSockets {
        &self.sockets
    }

    /// Binds the daemon and its display server on a new thread, runs `setup` there (the
    /// experiment's policy and devices; its value comes back with the daemon), then runs the
    /// daemon's loop until [`LiveDaemon::join`] or drop.
    ///
    /// # Errors
    /// [`LiveDaemonError`]: the thread, binding or `setup` failed.
    pub fn start<T, E, F>(&self, setup: F) -> Result<(LiveDaemon, T), LiveDaemonError>
    where
        T: Send + 'static,
        E: Into<SetupError>,
        F: FnOnce(&mut Daemon) -> Result<T, E> + Send + 'static,
    {
        let esm = DaemonConfig {
            socket_path: self.sockets.esm.clone(),
            ..DaemonConfig::default()
        };
        let mut kds = KdsConfig {
            socket_path: self.sockets.kds.clone(),
            ..KdsConfig::default()
        };
        if let Some((w, h)) = self.screen {
            kds.screen_width = w;
            kds.screen_height = h;
        }
        let (up_tx, up_rx) = mpsc::channel();
        let handle = thread::Builder::new()
            .name(self.thread_name.clone())
            .spawn(move || {
                let built = (|| {
                    let mut d = Daemon::bind(&esm)?;
                    d.enable_kds(&kds)?;
                    let value = setup(&mut d).map_err(Into::into)?;
                    Ok::<_, SetupError>((d, value))
                })();
                match built {
                    Ok((d, value)) => {
                        let _ = up_tx.send(Ok((d.stopper(), sys::gettid(), value)));
                        d.run().map(Some)
                    }
                    Err(e) => {
                        let _ = up_tx.send(Err(e));
                        Ok(None)
                    }
                }
            })
            .map_err(LiveDaemonError::Spawn)?;
        match up_rx.recv() {
            Ok(Ok((stopper, tid, value))) => Ok((
                LiveDaemon {
                    stopper,
                    tid,
                    handle: Some(handle),
                },
                value,
            )),
            Ok(Err(e)) => {
                let _ = handle.join();
                Err(LiveDaemonError::Setup(e))
            }
            Err(_) => {
                let _ = handle.join();
                Err(LiveDaemonError::Gone)
            }
        }
    }
}

type DaemonThread = JoinHandle<Result<Option<DaemonReport>, DaemonError>>;

/// A running live daemon; dropping it stops and joins it.
#[derive(Debug)]
pub struct LiveDaemon {
    stopper: Stopper,
    tid: i32,
    handle: Option<DaemonThread>,
}

impl LiveDaemon {
    /// The daemon thread's id (for the experiment's `/proc` probes).
    #[must_use]
    pub fn tid(&self) -> i32 {
        self.tid
    }

    /// Asks the daemon's loop to return, without waiting (stop the rest of the stack, then
    /// [`LiveDaemon::join`]).
    pub fn request_stop(&self) {
        self.stopper.stop();
    }

    /// Stops the daemon and waits for its report.
    ///
    /// # Errors
    /// [`LiveDaemonError::Run`] or [`LiveDaemonError::Panicked`].
    pub fn join(mut self) -> Result<DaemonReport, LiveDaemonError> {
        self.stopper.stop();
        let handle = self.handle.take().ok_or(LiveDaemonError::Gone)?;
        match handle.join() {
            Ok(Ok(Some(report))) => Ok(report),
            Ok(Ok(None)) => Err(LiveDaemonError::Gone),
            Ok(Err(e)) => Err(LiveDaemonError::Run(e)),
            Err(_) => Err(LiveDaemonError::Panicked),
        }
    }
}

impl Drop for LiveDaemon {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            self.stopper.stop();
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_sockets_are_distinct_and_named_for_the_tag() {
        let a = DaemonSockets::fresh("t", Path::new("/nonexistent"));
        let b = DaemonSockets::fresh("t", Path::new("/nonexistent"));
        assert_ne!(a, b);
        assert_ne!(a.esm, a.kds);
        let name = a.esm.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("lull-t-"), "{name}");
        let d = DaemonSockets::in_dir(Path::new("/x"));
        assert_eq!(d.esm, Path::new("/x/esm.sock"));
    }

    #[test]
    fn a_failing_setup_is_reported_and_leaves_nothing_running() {
        let dir = lull_os::fileout::ScratchDir::new("lull-live-stack-test").unwrap();
        let stack = LiveStack::new(DaemonSockets::in_dir(dir.path()));
        let err = stack
            .start(|_d| Err::<(), _>("no such policy"))
            .unwrap_err();
        assert!(
            matches!(&err, LiveDaemonError::Setup(m) if m.to_string() == "no such policy"),
            "{err}"
        );
    }

    #[test]
    fn a_started_daemon_stops_with_its_report() {
        let dir = lull_os::fileout::ScratchDir::new("lull-live-stack-test").unwrap();
        let stack = LiveStack::new(DaemonSockets::in_dir(dir.path())).screen(64, 48);
        let (daemon, value) = stack.start(|_d| Ok::<_, String>(7)).unwrap();
        assert_eq!(value, 7);
        assert!(daemon.tid() > 0);
        let report = daemon.join().unwrap();
        assert!(report.kds.is_some());
    }
}
