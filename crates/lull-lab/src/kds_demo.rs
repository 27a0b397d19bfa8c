//! What `lull kds` does: the window manager's requests and snapshots for people, and the
//! figure-18 demonstration — seed 000's figure 18 as a C program (`apps/kds-c/figure18.c`,
//! embedded here) built against the static library, run as its own process against a private
//! headless display server, and its screen checked pixel by pixel against the compositor.

use crate::c_client::{self, CBuildError, CProgram, STATIC_LIB};
use crate::live_stack::{DaemonSockets, LiveStack, SetupError};
use lull_os::fileout::ScratchDir;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use lull_kds::server::BACKDROP_ARGB;
use lull_kds::wire::WindowInfo;
use lull_kds::{compose, ComposeError, DrawError, Fill, Layer, Pixmap, Rect, Surface};
use serde::{Deserialize, Serialize};

// The `lull` command names these through this module.
pub use lull_model::{AppId, Screen};

use lull::capi_kds::app_id_from_bits;
use lull::kds_client::{KdsAdmin, KdsClientError};

/// The C source of the figure-18 example, built by [`figure18`].
pub const FIGURE18_C: &str = include_str!("../../../apps/kds-c/figure18.c");
/// The private server's screen unless told otherwise: VGA, large enough to show the 25 × 25
/// window centred with backdrop on every side, small enough to check every pixel at once.
pub const DEFAULT_DEMO_SCREEN_PX: (u32, u32) = (640, 480);

/// Why a `lull kds` request or the demonstration failed.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("{0}")]
    Build(#[from] CBuildError),
    #[error("cannot find the running executable: {0}")]
    Exe(#[source] io::Error),
    #[error("the private display server: {0}")]
    Daemon(String),
    #[error("the figure-18 example failed ({status}): {stderr}")]
    Example { status: ExitStatus, stderr: String },
    #[error("the figure-18 example printed {line:?}, not its JSON line: {reason}")]
    ExampleOutput { line: String, reason: String },
    #[error("the server's view disagrees with the example: {0}")]
    Windows(String),
    #[error(transparent)]
    Verify(#[from] VerifyError),
    #[error(transparent)]
    Client(#[from] KdsClientError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> DemoError {
    let what = what.into();
    move |source| DemoError::Io { what, source }
}

/// Why a snapshot is not the screen it should be.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the snapshot is {got_width}x{got_height}, the screen {width}x{height}")]
    Size {
        width: u32,
        height: u32,
        got_width: u32,
        got_height: u32,
    },
    #[error("{mismatched} pixels differ from the expected screen; the first at ({x}, {y}) is {got:#010x}, expected {want:#010x}")]
    Pixels {
        mismatched: u64,
        x: u32,
        y: u32,
        want: u32,
        got: u32,
    },
    #[error("the expected screen cannot be built: {0}")]
    Compose(#[from] ComposeError),
    #[error("the window does not fit the screen: {0}")]
    Window(#[from] DrawError),
}

/// Why an app id did not parse.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an app id: write app<index>.<generation> as `lull kds windows` shows it (app3.0), or <index>.<generation> (3.0), or <index> for generation 0 (3)")]
pub struct AppParseError(pub String);

/// An app id as `lull kds` takes it: `app3.0` (`AppId`'s display), `3.0`, or `3` (generation 0).
/// Only ASCII digits: no sign, space, or other base.
///
/// # Errors
/// [`AppParseError`] for anything else.
pub fn parse_app(s: &str) -> Result<AppId, AppParseError> {
    let bad = || AppParseError(s.to_owned());
    let number = |t: &str| {
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        t.parse::<u32>().map_err(|_| bad())
    };
    let body = s.strip_prefix("app").unwrap_or(s);
    let (index, generation) = match body.split_once('.') {
        Some((i, g)) => (number(i)?, number(g)?),
        None => (number(body)?, 0),
    };
    Ok(AppId { index, generation })
}

/// A window-manager request of `lull kds`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum WmAction {
    Foreground(AppId),
    Background(AppId),
    Cover(AppId),
    Uncover(AppId),
    Screen(Screen),
}

/// Sends `action` to the display server at `socket`.
///
/// # Errors
/// [`KdsClientError::Connect`] without a server; `Refused` for an unknown app or a peer that may
/// not manage windows.
pub fn wm(socket: &Path, action: WmAction) -> Result<(), KdsClientError> {
    let mut a = KdsAdmin::connect(socket)?;
    match action {
        WmAction::Foreground(app) => a.foreground(app),
        WmAction::Background(app) => a.background(app),
        WmAction::Cover(app) => a.cover(app, true),
        WmAction::Uncover(app) => a.cover(app, false),
        WmAction::Screen(s) => a.set_screen(s),
    }
}

/// Every window of the server at `socket`, bottom to top.
///
/// # Errors
/// As [`wm`].
pub fn windows(socket: &Path) -> Result<Vec<WindowInfo>, KdsClientError> {
    KdsAdmin::connect(socket)?.windows()
}

/// Saves the screen of the server at `socket` as a PNG; returns its size.
///
/// # Errors
/// [`DemoError::Client`] from the server, [`DemoError::Io`] writing the file.
pub fn snapshot(socket: &Path, out: &Path) -> Result<(u32, u32), DemoError> {
    let shot = KdsAdmin::connect(socket)?.snapshot()?;
    // `write_png` names the path in its error.
    crate::png::write_png(out, &shot).map_err(io_err("the snapshot"))?;
    Ok((shot.width(), shot.height()))
}

/// A layer as the example reports it and the demonstration prints it: a rectangle in window
/// coordinates, its z-index, and its colour as a hex string (`"0xffff0000"`).
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerReport {
    pub z: i32,
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    pub argb: String,
}

/// A layer's colour in the example's report that is not `0x` and eight hex digits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("argb {0:?} is not 0x and eight hex digits")]
pub struct BadArgb(pub String);

impl LayerReport {
    /// The solid layer this describes.
    ///
    /// # Errors
    /// [`BadArgb`] when `argb` is not `0x` and eight hex digits.
    pub fn layer(&self) -> Result<Layer, BadArgb> {
        let argb = self
            .argb
            .strip_prefix("0x")
            .filter(|h| h.len() == 8 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|hex| u32::from_str_radix(hex, 16).ok())
            .ok_or_else(|| BadArgb(self.argb.clone()))?;
        Ok(Layer {
            z: self.z,
            rect: Rect::new(self.x, self.y, self.width, self.height),
            fill: Fill::Solid(argb),
        })
    }
}

/// The example's line on stdout.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExampleLine {
    app: u64,
    window: Rect,
    layers: Vec<LayerReport>,
}

/// A screen size in reports.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub struct Size {
    pub width: u32,
    pub height: u32,
}

/// What the figure-18 demonstration shows.
#[derive(Clone, Debug, Serialize)]
pub struct Figure18Report {
    /// The example's app id, as `lull kds windows` writes it.
    pub app: String,
    pub screen: Size,
    /// The window on the screen.
    pub window: Rect,
    /// The layers, in window coordinates.
    pub layers: Vec<LayerReport>,
    /// Screen pixels checked against the expected screen (all of them).
    pub verified_pixels: u64,
    /// The snapshot written.
    pub png: PathBuf,
}

/// How to run the demonstration.
#[derive(Clone, Debug)]
pub struct Figure18Config {
    pub screen_width: u32,
    pub screen_height: u32,
    /// The directory holding [`STATIC_LIB`].
    pub lib_dir: PathBuf,
    /// The C compiler to run.
    pub cc: String,
    /// Where the snapshot goes.
    pub png: PathBuf,
}

impl Figure18Config {
    /// The demonstration as `lull kds demo figure18` runs it: the static library next to the
    /// running executable, `$CC` or `cc`.
    ///
    /// # Errors
    /// [`DemoError::Exe`] when the executable cannot be found, [`CBuildError::NoStaticLib`] when
    /// the library is not beside it.
    pub fn beside_exe(screen: (u32, u32), png: PathBuf) -> Result<Figure18Config, DemoError> {
        let exe = std::env::current_exe().map_err(DemoError::Exe)?;
        let lib_dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
        if !lib_dir.join(STATIC_LIB).is_file() {
            return Err(CBuildError::NoStaticLib { dir: lib_dir }.into());
        }
        Ok(Figure18Config {
            screen_width: screen.0,
            screen_height: screen.1,
            lib_dir,
            cc: std::env::var("CC")
                .ok()
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| "cc".into()),
            png,
        })
    }
}

/// The screen a server of `screen` size must show with one window at `window` whose whole
/// surface is the flattening of `layers`, drawn at the window's origin: backdrop everywhere
/// else.
///
/// # Errors
/// [`VerifyError::Compose`] for layers the compositor refuses, [`VerifyError::Window`] for a
/// window off the screen.
pub fn expected_screen(
    screen: Size,
    window: Rect,
    layers: &[Layer],
) -> Result<Pixmap, VerifyError> {
    let mut s = Pixmap::filled(screen.width, screen.height, BACKDROP_ARGB)?;
    let flat = compose(&Surface {
        width: window.width,
        height: window.height,
        layers: layers.to_vec(),
    })?;
    s.draw(window.x, window.y, &flat)?;
    Ok(s)
}

/// Checks every pixel of `shot` against `expected`; returns how many were checked.
///
/// # Errors
/// [`VerifyError::Size`] or [`VerifyError::Pixels`] (with the count and the first difference).
pub fn verify(shot: &Pixmap, expected: &Pixmap) -> Result<u64, VerifyError> {
    if (shot.width(), shot.height()) != (expected.width(), expected.height()) {
        return Err(VerifyError::Size {
            width: expected.width(),
            height: expected.height(),
            got_width: shot.width(),
            got_height: shot.height(),
        });
    }
    let width = expected.width().max(1) as usize;
    let mut first = None;
    let mut mismatched = 0u64;
    for (i, (got, want)) in shot.pixels().iter().zip(expected.pixels()).enumerate() {
        if got != want {
            mismatched += 1;
            first.get_or_insert((i, *want, *got));
        }
    }
    match first {
        None => Ok(shot.pixels().len() as u64),
        Some((i, want, got)) => Err(VerifyError::Pixels {
            mismatched,
            // The index is within a pixmap of u32 sides.
            x: (i % width) as u32,
            y: (i / width) as u32,
            want,
            got,
        }),
    }
}

/// The example process, killed on drop unless it was waited for.
struct Example {
    child: Child,
    waited: bool,
}

impl Example {
    /// Waits for it and fails unless it exited with status 0.
    fn finish(&mut self) -> Result<(), DemoError> {
        let status = self
            .child
            .wait()
            .map_err(io_err("waiting for the example"))?;
        self.waited = true;
        if status.success() {
            return Ok(());
        }
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        Err(DemoError::Example {
            status,
            stderr: stderr.trim_end().to_owned(),
        })
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        if !self.waited {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Compiles the embedded example in `dir` against `config`'s static library.
fn build_example(dir: &Path, config: &Figure18Config) -> Result<PathBuf, DemoError> {
    let program = CProgram {
        stem: "figure18",
        source: FIGURE18_C,
        opt: "-O1",
    };
    Ok(c_client::build(dir, &config.lib_dir, &config.cc, program)?)
}

/// Seed 000's figure 18, end to end: builds `apps/kds-c/figure18.c` with `config.cc` against
/// the static library, starts a private headless display server on this process's thread,
/// runs the example as its own process, snapshots the screen while the window is up, checks
/// every pixel against [`expected_screen`] of what the example reports, writes the PNG, lets
/// the example detach and checks its window is gone.
///
/// # Errors
/// [`DemoError`] naming the step that failed; [`DemoError::Verify`] when the screen is wrong.
pub fn figure18(config: &Figure18Config) -> Result<Figure18Report, DemoError> {
    let dir = ScratchDir::new("lull-kds-demo").map_err(io_err("creating a scratch directory"))?;
    let bin = build_example(dir.path(), config)?;
    let live = LiveStack::new(DaemonSockets::in_dir(dir.path()))
        .screen(config.screen_width, config.screen_height)
        .thread_name("kds-demo-lulld");
    let socket = live.sockets().kds.clone();
    let (daemon, ()) = live
        .start(|_d| Ok::<_, SetupError>(()))
        .map_err(|e| DemoError::Daemon(e.to_string()))?;
    let mut example = Example {
        child: Command::new(&bin)
            .arg("--socket")
            .arg(&socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(io_err(format!("starting {}", bin.display())))?,
        waited: false,
    };
    let mut line = String::new();
    if let Some(out) = example.child.stdout.take() {
        BufReader::new(out)
            .read_line(&mut line)
            .map_err(io_err("reading the example's output"))?;
    }
    if line.is_empty() {
        // It ended (or closed stdout) before reporting: its status and stderr say why.
        example.finish()?;
        return Err(DemoError::ExampleOutput {
            line,
            reason: "it exited without a line".into(),
        });
    }
    let reported: ExampleLine =
        serde_json::from_str(line.trim_end()).map_err(|e| DemoError::ExampleOutput {
            line: line.clone(),
            reason: e.to_string(),
        })?;
    let layers = reported
        .layers
        .iter()
        .map(LayerReport::layer)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| DemoError::ExampleOutput {
            line: line.clone(),
            reason: e.to_string(),
        })?;
    let app = app_id_from_bits(reported.app);

    let mut admin = KdsAdmin::connect(&socket)?;
    let listed = admin.windows()?;
    match listed.as_slice() {
        [w] if w.app == app && w.rect == reported.window => {}
        _ => {
            return Err(DemoError::Windows(format!(
                "the example reported {app} at {:?}; the server lists {:?}",
                reported.window,
                listed.iter().map(|w| (w.app, w.rect)).collect::<Vec<_>>()
            )))
        }
    }
    let shot = admin.snapshot()?;
    let screen = Size {
        width: config.screen_width,
        height: config.screen_height,
    };
    let verified = verify(&shot, &expected_screen(screen, reported.window, &layers)?)?;
    crate::png::write_png(&config.png, &shot).map_err(io_err("the figure's snapshot"))?;

    // Let it detach: a line on its stdin, then end of file.
    if let Some(mut input) = example.child.stdin.take() {
        input
            .write_all(b"\n")
            .map_err(io_err("telling the example to detach"))?;
    }
    example.finish()?;
    let left = admin.windows()?;
    if !left.is_empty() {
        return Err(DemoError::Windows(format!(
            "after the example detached the server still lists {} window(s)",
            left.len()
        )));
    }
    drop(admin);
    let report = daemon
        .join()
        .map_err(|e| DemoError::Daemon(e.to_string()))?;
    report
        .accounting
        .clone()
        .map_err(|e| DemoError::Daemon(format!("ESM accounting broken: {e}")))?;
    if let Some(k) = report.kds {
        if (k.server.attached, k.server.detached) != (1, 1) {
            return Err(DemoError::Windows(format!(
                "the server counted {} attach(es) and {} detach(es), not one of each",
                k.server.attached, k.server.detached
            )));
        }
    }
    Ok(Figure18Report {
        app: app.to_string(),
        screen,
        window: reported.window,
        layers: reported.layers,
        verified_pixels: verified,
        png: config.png.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use lull_kds::figure18::{self, GREEN_ARGB as GREEN, RED_ARGB as RED};

    #[test]
    fn app_ids_parse_strictly() {
        let a = |index, generation| AppId { index, generation };
        assert_eq!(parse_app("app3.0"), Ok(a(3, 0)));
        assert_eq!(parse_app("3.2"), Ok(a(3, 2)));
        assert_eq!(parse_app("3"), Ok(a(3, 0)));
        assert_eq!(parse_app("app7"), Ok(a(7, 0)));
        assert_eq!(parse_app(&a(9, 4).to_string()), Ok(a(9, 4)));
        for bad in [
            "",
            "app",
            "app.",
            "3.",
            ".0",
            "+3",
            "-1",
            " 3",
            "3 ",
            "3.0.1",
            "0x3",
            "app3.x",
            "4294967296",
        ] {
            let e = parse_app(bad).unwrap_err();
            assert!(e.to_string().contains("app3.0"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn layer_colours_are_hex_strings() {
        let r = LayerReport {
            z: 1,
            x: 10,
            y: 10,
            width: 15,
            height: 15,
            argb: "0xff00ff00".into(),
        };
        assert_eq!(r.layer().unwrap(), figure18::layers()[1]);
        for bad in ["ff00ff00", "0xff00ff0", "0x+f00ff00", "0xff00ff000"] {
            let r = LayerReport {
                argb: bad.into(),
                ..r.clone()
            };
            assert!(r.layer().is_err(), "{bad}");
        }
    }

    #[test]
    fn the_expected_screen_is_figure_18_over_the_backdrop() {
        let screen = Size {
            width: 40,
            height: 30,
        };
        let window = Rect::new(7, 2, 25, 25);
        let want = expected_screen(screen, window, &figure18::layers()).unwrap();
        for y in 0..30u32 {
            for x in 0..40u32 {
                let (wx, wy) = (x.wrapping_sub(7), y.wrapping_sub(2));
                let pixel = if wx < 25 && wy < 25 {
                    figure18::pixel(wx, wy)
                } else {
                    BACKDROP_ARGB
                };
                assert_eq!(want.get(x, y), Some(pixel), "({x}, {y})");
            }
        }
        assert_eq!(verify(&want, &want), Ok(1200));
    }

    /// One wrong pixel, or a wrong size, fails verification and is named.
    #[test]
    fn a_wrong_pixel_fails_verification() {
        let screen = Size {
            width: 40,
            height: 30,
        };
        let want = expected_screen(screen, Rect::new(7, 2, 25, 25), &figure18::layers()).unwrap();
        let mut pixels = want.pixels().to_vec();
        // (20, 15) is inside the overlap, where green must lie over red.
        pixels[15 * 40 + 20] = RED;
        let shot = Pixmap::from_pixels(40, 30, pixels).unwrap();
        assert_eq!(
            verify(&shot, &want),
            Err(VerifyError::Pixels {
                mismatched: 1,
                x: 20,
                y: 15,
                want: GREEN,
                got: RED
            })
        );
        let small = Pixmap::new(40, 29).unwrap();
        assert!(matches!(
            verify(&small, &want),
            Err(VerifyError::Size { .. })
        ));
        assert!(matches!(
            expected_screen(screen, Rect::new(30, 2, 25, 25), &figure18::layers()),
            Err(VerifyError::Window(_))
        ));
    }
}
