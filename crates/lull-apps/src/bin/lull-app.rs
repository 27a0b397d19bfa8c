//! `lull-app`: the live apps of seed 000 chapter 6 (tracking, messaging, video) as programs that
//! attach to the display server and take their input through one delivery model. Started by
//! `lull live experiment`; the process interface is described in `lull_apps`.

// Unsafe code lives in the OS layer (`lull_os::sys`), behind safe wrappers.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use lull_apps::{app_model, AppConfig, AppKind, MAX_CLIP_MS};
use lull_model::DeliveryModel;

#[derive(Parser, Debug)]
#[command(
    name = "lull-app",
    version,
    about = "A live app (tracking, messaging, video) under one delivery model; run by `lull live experiment`"
)]
struct Args {
    /// tracking, messaging, video, filemanager, zip, ftp or painting.
    #[arg(value_parser = parse_kind)]
    app: AppKind,
    /// esm-kds-guis, pull-16ms, vsync-batched or blocking-middleware.
    #[arg(long, value_parser = parse_model)]
    model: DeliveryModel,
    /// The display server's control socket.
    #[arg(long)]
    kds_socket: PathBuf,
    /// The inherited connection to the harness's hub (baselines only).
    #[arg(long)]
    hub_fd: Option<i32>,
    /// The respondent's address (messaging), e.g. 127.0.0.1:7000.
    #[arg(long)]
    respondent: Option<SocketAddr>,
    /// Video clip length, ms (default: seed 000's 30 s).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_CLIP_MS))]
    clip_ms: Option<u64>,
    /// Video frame size, WIDTHxHEIGHT (default: seed 000's 1920x1080).
    #[arg(long, value_parser = lull_kds::screen_size::parse_screen_size)]
    video_size: Option<(u32, u32)>,
    /// Seed of the video decoder's residuals.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The file the zip app compresses.
    #[arg(long)]
    zip_input: Option<PathBuf>,
    /// The server the ftp app downloads from, e.g. 127.0.0.1:2121.
    #[arg(long)]
    ftp_server: Option<SocketAddr>,
    /// Shrinks the file manager's work (0 < scale <= 1).
    #[arg(long, default_value_t = 1.0, value_parser = parse_scale)]
    scale: f64,
}

/// An argument `lull-app` refuses; clap prints it after the argument's name.
#[derive(Debug, thiserror::Error)]
enum ArgError {
    #[error("{0:?}: expected a number in (0, 1]")]
    Scale(String),
    #[error("{0:?}: expected tracking, messaging, video, filemanager, zip, ftp or painting")]
    Kind(String),
    #[error("{given:?}: expected one of {names}")]
    Model { given: String, names: String },
}

fn parse_scale(s: &str) -> Result<f64, ArgError> {
    s.parse::<f64>()
        .ok()
        .filter(|v| *v > 0.0 && *v <= 1.0)
        .ok_or_else(|| ArgError::Scale(s.to_owned()))
}

fn parse_kind(s: &str) -> Result<AppKind, ArgError> {
    AppKind::from_name(s).ok_or_else(|| ArgError::Kind(s.to_owned()))
}

fn parse_model(s: &str) -> Result<DeliveryModel, ArgError> {
    app_model(s).ok_or_else(|| ArgError::Model {
        given: s.to_owned(),
        names: DeliveryModel::names(&lull_apps::APP_MODELS),
    })
}

fn main() -> ExitCode {
    let a = Args::parse();
    let cfg = AppConfig {
        kind: a.app,
        model: a.model,
        kds_socket: a.kds_socket,
        hub_fd: a.hub_fd,
        respondent: a.respondent,
        clip_ms: a.clip_ms,
        video_size: a.video_size,
        seed: a.seed,
        zip_input: a.zip_input,
        ftp_server: a.ftp_server,
        scale: a.scale,
    };
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = std::io::stdout();
    match lull_apps::run(&cfg, &mut input, &mut out) {
        Ok(report) => match serde_json::to_string(&report) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("lull-app: cannot write the report: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("lull-app {}: {e}", a.app.name());
            ExitCode::FAILURE
        }
    }
}
