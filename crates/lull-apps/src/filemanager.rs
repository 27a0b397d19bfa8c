//! The file manager of seed 001's experiments (§4.1, Table II: "open a directory, 1 s; close,
//! 0.5 s; ten times; each a touch"), as a live KDS app.
//!
//! At start it generates a directory tree in a private temporary directory
//! ([`TREE_DIRS`] × [`TREE_FILES_PER_DIR`] small files). Each touch press alternates "open" and
//! "close". Opening lists every directory of the tree, stats every file and sorts the entries
//! as a file manager's list view does (case-folded name, then size), [`OPEN_ROUNDS`] times;
//! closing does the same [`CLOSE_ROUNDS`] times (the listing it goes back to). The work runs in
//! the touch's handler, on the app's event thread, as a UI thread's would; then the drawing
//! thread draws the new view. Response time = the touch's injection → that frame's `DRAW`
//! acknowledged. The tree is removed when the app stops.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lull::kds_runtime::{KdsApp, ThreadCtx};
use lull_kds::{Fill, Layer, Rect, Surface};
use lull_model::{AppEvent, EventKind};
use lull_os::sys;

use super::{drawn, AppError, Drawn, LiveApp, MessagingAppReport, Shared, Stats, VideoAppReport};

/// Directories in the generated tree, and files in each: a phone's photo or download folder
/// holds hundreds of entries; 16 × 64 = 1024 entries listed per round.
pub const TREE_DIRS: u32 = 16;
pub const TREE_FILES_PER_DIR: u32 = 64;
/// Rounds of list + stat + sort per "open": sized so that an open takes about 1 s of CPU on the
/// machine this project measures on, unloaded (seed 001 Table II: 1 s); measured by
/// `lull live ucsg` (its `open_ms_unloaded` extra key) and in `docs/ucsg.md`.
pub const OPEN_ROUNDS: u32 = 420;
/// Rounds per "close": half of an open (Table II: 0.5 s).
pub const CLOSE_ROUNDS: u32 = OPEN_ROUNDS / 2;
/// Window size: the video's 640 × 360, so both foreground apps draw the same area.
pub const WINDOW_W_PX: u32 = 640;
pub const WINDOW_H_PX: u32 = 360;
/// The two views' colours: the opened directory and the listing it closes back to.
const OPEN_ARGB: u32 = 0xFF30_60A0;
const CLOSED_ARGB: u32 = 0xFFE8_E8E8;
const SURFACE_VIEW: u32 = 1;

#[derive(Debug, Default)]
struct State {
    stats: Stats,
    /// Touches handled (even: the next opens).
    touches: u64,
    /// The view to draw next and the injection stamp of the touch that asked for it.
    pending: Option<(bool, u64)>,
    /// Touches whose view a later touch replaced before it was drawn: the one frame drawn
    /// answers both (the newest view wins, as a real file manager would show it).
    superseded: u64,
    /// Per action, the work's duration in the handler (ns), open and close apart.
    open_ns: Vec<u64>,
    close_ns: Vec<u64>,
    /// The listing's checksum, so the work cannot be optimised away.
    checksum: u64,
    stopping: bool,
}

/// The file manager.
#[derive(Debug)]
pub(crate) struct FileManager {
    shared: Shared<State>,
    /// The generated tree's private directory, removed at `stop` or when the app is dropped.
    scratch: std::sync::Mutex<Option<lull_os::fileout::ScratchDir>>,
    tree: PathBuf,
    open_rounds: u32,
    close_rounds: u32,
}

/// Generates the tree under `root` (created).
fn generate_tree(root: &Path) -> std::io::Result<()> {
    for d in 0..TREE_DIRS {
        let dir = root.join(format!("Folder {d:02}"));
        std::fs::create_dir_all(&dir)?;
        for f in 0..TREE_FILES_PER_DIR {
            // Names of mixed case and sizes of a few bytes to a few hundred, so sorting compares
            // real keys.
            let name = if f % 3 == 0 {
                format!("IMG_{:04}.jpg", (f * 37 + d * 11) % 1000)
            } else {
                format!("note {} {}.txt", d, TREE_FILES_PER_DIR - f)
            };
            let len = ((f * 131 + d * 17) % 400) as usize;
            std::fs::write(dir.join(name), vec![b'x'; len])?;
        }
    }
    Ok(())
}

/// One round: lists and stats every entry, sorts as a list view does; returns a checksum.
fn list_round(root: &Path) -> u64 {
    let mut entries: Vec<(String, u64)> = Vec::new();
    let Ok(dirs) = std::fs::read_dir(root) else {
        return 0;
    };
    for d in dirs.filter_map(Result::ok) {
        let Ok(files) = std::fs::read_dir(d.path()) else {
            continue;
        };
        for f in files.filter_map(Result::ok) {
            let len = std::fs::metadata(f.path()).map_or(0, |m| m.len());
            entries.push((f.file_name().to_string_lossy().to_lowercase(), len));
        }
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    entries.iter().fold(0u64, |h, (n, l)| {
        n.bytes()
            .fold(h, |h, b| h.rotate_left(5) ^ u64::from(b))
            .wrapping_add(*l)
    })
}

/// Starts the file manager; `scale` (0 < scale ≤ 1) shrinks its work for tests.
pub(crate) fn start(kds: &KdsApp, scale: f64) -> Result<Arc<dyn LiveApp>, AppError> {
    let scratch = lull_os::fileout::ScratchDir::new("lull-filemanager")?;
    let tree = scratch.path().join("tree");
    generate_tree(&tree)?;
    let rounds = |r: u32| ((f64::from(r) * scale).round() as u32).max(1);
    let app = Arc::new(FileManager {
        shared: Shared::new(State::default()),
        scratch: std::sync::Mutex::new(Some(scratch)),
        tree,
        open_rounds: rounds(OPEN_ROUNDS),
        close_rounds: rounds(CLOSE_ROUNDS),
    });
    crate::run_drawing(kds, &app, draw_loop)?;
    Ok(app)
}

impl LiveApp for FileManager {
    fn kinds(&self) -> &'static [EventKind] {
        &[EventKind::TouchPress]
    }

    fn on_event(&self, ev: &AppEvent, start_ns: u64) {
        let open = {
            let mut g = self.shared.lock();
            g.stats.handled(ev, start_ns);
            g.touches += 1;
            g.touches % 2 == 1
        };
        let rounds = if open {
            self.open_rounds
        } else {
            self.close_rounds
        };
        let t0 = sys::monotonic_ns();
        let mut sum = 0u64;
        for _ in 0..rounds {
            sum = sum.wrapping_add(list_round(&self.tree));
        }
        let took = sys::monotonic_ns() - t0;
        let mut g = self.shared.lock();
        g.checksum = g.checksum.wrapping_add(sum);
        if open {
            g.open_ns.push(took);
        } else {
            g.close_ns.push(took);
        }
        if g.pending.replace((open, ev.injected_ns)).is_some() {
            g.superseded += 1;
        }
        drop(g);
        self.shared.notify();
    }

    fn stop(&self) {
        self.shared.lock().stopping = true;
        self.shared.notify();
        drop(self.scratch.lock().ok().and_then(|mut s| s.take()));
    }

    fn report(&self) -> (Stats, Option<MessagingAppReport>, Option<VideoAppReport>) {
        (self.shared.lock().stats.clone(), None, None)
    }

    fn drain(&self, presses: u64, timeout: std::time::Duration) -> u64 {
        self.shared
            .wait_until_for(timeout, |s| {
                s.touches >= presses
                    && s.stats.frame_latencies_ns.len() as u64 + s.superseded >= s.touches
            })
            .touches
    }

    fn work(&self) -> Option<super::WorkReport> {
        let g = self.shared.lock();
        Some(super::WorkReport {
            open_ns: g.open_ns.clone(),
            close_ns: g.close_ns.clone(),
            superseded_touches: g.superseded,
            ..super::WorkReport::default()
        })
    }
}

fn draw_loop(ctx: &ThreadCtx, app: &FileManager) {
    let window = ctx.window();
    loop {
        // At most one frame per refresh.
        if !app
            .shared
            .next_pass(ctx, |s| s.stopping, |s| s.pending.is_some())
        {
            return;
        }
        let (open, injected) = {
            let mut g = app.shared.lock();
            match g.pending.take() {
                Some(p) => p,
                None => continue,
            }
        };
        let surface = Surface {
            width: window.width,
            height: window.height,
            layers: vec![Layer {
                z: 0,
                rect: Rect::new(0, 0, window.width, window.height),
                fill: Fill::Solid(if open { OPEN_ARGB } else { CLOSED_ARGB }),
            }],
        };
        let r = ctx
            .compose(SURFACE_VIEW, surface)
            .and_then(|()| ctx.draw(SURFACE_VIEW, 0, 0));
        match drawn(r) {
            Drawn::Ok => {
                let done = sys::monotonic_ns();
                app.shared.lock().stats.frame(done, &[injected]);
                // A `drain` may be waiting for this answer.
                app.shared.notify();
            }
            Drawn::Refused => app.shared.lock().stats.draw_errors += 1,
            Drawn::Stop => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_lists_every_file_the_same_way() {
        let scratch = lull_os::fileout::ScratchDir::new("lull-fm-test").unwrap();
        let root = scratch.path().join("tree");
        generate_tree(&root).unwrap();
        let n: usize = std::fs::read_dir(&root)
            .unwrap()
            .map(|d| std::fs::read_dir(d.unwrap().path()).unwrap().count())
            .sum();
        // Some generated names repeat within a folder (the IMG_ numbers wrap): fewer files.
        assert!(n > (TREE_DIRS * TREE_FILES_PER_DIR / 2) as usize);
        let a = list_round(&root);
        assert_eq!(a, list_round(&root));
        assert_ne!(a, 0);
    }
}
