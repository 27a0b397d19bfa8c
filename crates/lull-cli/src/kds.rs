//! `lull kds …`: the display server's window manager, snapshots, and the figure-18 demonstration.
//! The work is `lull_lab::kds_demo`'s; this parses and prints.

use crate::output::{self, to_json, Col};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use lull::kds_client::default_kds_socket;
use lull_lab::kds_demo::{self, AppId, Figure18Config, Figure18Report, Screen, WmAction};

#[derive(Subcommand, Debug)]
pub enum KdsCommand {
    /// List the windows, bottom to top.
    Windows(WindowsArgs),
    /// Bring an app to the front (its input handlers come back).
    Foreground(AppArgs),
    /// Send an app to the background (its input handlers are set aside).
    Background(AppArgs),
    /// Cover an app's window with a system decoration.
    Cover(AppArgs),
    /// Take the decoration off an app's window.
    Uncover(AppArgs),
    /// Light or darken the screen.
    Screen(ScreenArgs),
    /// Save the screen as a PNG.
    Snapshot(SnapshotArgs),
    /// Demonstrations on a private display server.
    #[command(subcommand)]
    Demo(DemoCommand),
}

#[derive(Args, Debug)]
pub struct SocketArg {
    /// The display server's control socket (default: $LULL_KDS_SOCKET, else kds.sock beside
    /// lulld's default ESM socket).
    #[arg(long)]
    socket: Option<PathBuf>,
}

impl SocketArg {
    fn path(&self) -> PathBuf {
        self.socket.clone().unwrap_or_else(default_kds_socket)
    }
}

#[derive(Args, Debug)]
pub struct WindowsArgs {
    #[command(flatten)]
    socket: SocketArg,
    /// Print JSON: [{"app":{"index","generation"},"pid","rect","state","name","threads"},…].
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct AppArgs {
    /// The app: app3.0 as `lull kds windows` shows it, 3.0, or 3 (generation 0).
    #[arg(value_parser = app_arg)]
    app: AppId,
    #[command(flatten)]
    socket: SocketArg,
}

fn app_arg(s: &str) -> Result<AppId, String> {
    kds_demo::parse_app(s).map_err(|e| e.to_string())
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Args, Debug)]
pub struct ScreenArgs {
    state: OnOff,
    #[command(flatten)]
    socket: SocketArg,
}

#[derive(Args, Debug)]
pub struct SnapshotArgs {
    /// The PNG to write.
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    socket: SocketArg,
}

#[derive(Subcommand, Debug)]
pub enum DemoCommand {
    /// Seed 000's figure 18: builds apps/kds-c/figure18.c (cc, against liblull.a beside
    /// this executable), runs it against a private headless display server, checks every
    /// pixel of the screen and saves it.
    Figure18(Figure18Args),
}

#[derive(Args, Debug)]
pub struct Figure18Args {
    /// The PNG to write.
    #[arg(long)]
    out: PathBuf,
    /// The private server's screen, WIDTHxHEIGHT.
    #[arg(long, default_value = "640x480", value_parser = lull_kds::screen_size::parse_screen_size)]
    screen: (u32, u32),
    /// Print JSON: {"app","screen","window":{"x","y","width","height"},
    /// "layers":[{"z","x","y","width","height","argb"},…],"verified_pixels","png"}.
    #[arg(long)]
    json: bool,
}

fn failed(e: &impl std::fmt::Display) -> ExitCode {
    output::failed("lull kds", e, false)
}

fn wm(socket: &SocketArg, action: WmAction) -> ExitCode {
    match kds_demo::wm(&socket.path(), action) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => failed(&e),
    }
}

pub(crate) fn figure18_summary(r: &Figure18Report) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "figure 18 by apps/kds-c/figure18.c on a private {}x{} display server (headless)",
        r.screen.width, r.screen.height
    );
    let _ = writeln!(
        t,
        "  window {} at ({}, {}), {}x{}",
        r.app, r.window.x, r.window.y, r.window.width, r.window.height
    );
    for l in &r.layers {
        let _ = writeln!(
            t,
            "  layer z={} at ({}, {}) {}x{} {}",
            l.z, l.x, l.y, l.width, l.height, l.argb
        );
    }
    let _ = writeln!(
        t,
        "  verified: all {} screen pixels match the compositor's flattening over the backdrop",
        r.verified_pixels
    );
    let _ = write!(t, "  snapshot: {}", r.png.display());
    t
}

pub fn run(cmd: KdsCommand) -> ExitCode {
    match cmd {
        KdsCommand::Windows(a) => match kds_demo::windows(&a.socket.path()) {
            Ok(w) if a.json => {
                println!("{}", to_json(&w));
                ExitCode::SUCCESS
            }
            Ok(w) => {
                const COLS: [Col; 6] = [
                    Col::Left("app", 10),
                    Col::Right("pid", 8),
                    Col::Right("x", 6),
                    Col::Right("y", 6),
                    Col::Right("width", 6),
                    Col::Right("height", 6),
                ];
                // The state and the name, free text, follow the columns.
                println!("{}  {:<32} name", output::head(&COLS), "state");
                for w in &w {
                    let s = w.state;
                    let state = format!(
                        "{}, {}, screen {}",
                        crate::output::spelled(&s.stacking),
                        crate::output::spelled(&s.visibility),
                        crate::output::spelled(&s.screen)
                    );
                    let cells = [
                        w.app.to_string(),
                        w.pid.to_string(),
                        w.rect.x.to_string(),
                        w.rect.y.to_string(),
                        w.rect.width.to_string(),
                        w.rect.height.to_string(),
                    ];
                    println!("{}  {state:<32} {}", output::row(&COLS, cells), w.name);
                }
                ExitCode::SUCCESS
            }
            Err(e) => failed(&e),
        },
        KdsCommand::Foreground(a) => wm(&a.socket, WmAction::Foreground(a.app)),
        KdsCommand::Background(a) => wm(&a.socket, WmAction::Background(a.app)),
        KdsCommand::Cover(a) => wm(&a.socket, WmAction::Cover(a.app)),
        KdsCommand::Uncover(a) => wm(&a.socket, WmAction::Uncover(a.app)),
        KdsCommand::Screen(a) => {
            let s = match a.state {
                OnOff::On => Screen::On,
                OnOff::Off => Screen::Off,
            };
            wm(&a.socket, WmAction::Screen(s))
        }
        KdsCommand::Snapshot(a) => match kds_demo::snapshot(&a.socket.path(), &a.out) {
            Ok((w, h)) => {
                println!("wrote {} ({w}x{h})", a.out.display());
                ExitCode::SUCCESS
            }
            Err(e) => failed(&e),
        },
        KdsCommand::Demo(DemoCommand::Figure18(a)) => {
            let report =
                Figure18Config::beside_exe(a.screen, a.out).and_then(|c| kds_demo::figure18(&c));
            match report {
                Ok(r) => output::print_report(&r, a.json, |r| figure18_summary(r) + "\n"),
                Err(e) => failed(&e),
            }
        }
    }
}
