//! Seed 000, figure 18, in Rust: the twin of `apps/kds-c/figure18.c` on `KdsApp`. Attaches with
//! a 25 × 25 window, composes two 15 × 15 squares on a 25 × 25 surface — layer 1 (z 0) at
//! (0, 0) red, layer 2 (z 1) at (10, 10) green — draws it at (0, 0) from the drawing thread,
//! prints the same JSON line as the C example, waits for a line (or end of file) on stdin, and
//! detaches.
//!
//! ```sh
//! cargo run -p lull-lab --example figure18 -- [--socket PATH]
//! ```

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use lull::capi_kds::app_id_bits;
use lull::kds_client::default_kds_socket;
use lull::kds_runtime::{AppOptions, KdsApp};
use lull_kds::{Fill, Layer, Rect, Surface};
use lull_lab::kds_demo::LayerReport;
use lull_model::ThreadCategory;

/// The window and surface side of figure 18.
const WINDOW_PX: u32 = 25;
/// Each square's side.
const SQUARE_PX: u32 = 15;
/// Where the second square starts, so 5 × 5 pixels of the first lie under it.
const OFFSET_PX: i32 = 10;
const SURFACE_ID: u32 = 1;
const RED: u32 = 0xffff_0000;
const GREEN: u32 = 0xff00_ff00;

fn layers() -> Vec<Layer> {
    vec![
        Layer {
            z: 0,
            rect: Rect::new(0, 0, SQUARE_PX, SQUARE_PX),
            fill: Fill::Solid(RED),
        },
        Layer {
            z: 1,
            rect: Rect::new(OFFSET_PX, OFFSET_PX, SQUARE_PX, SQUARE_PX),
            fill: Fill::Solid(GREEN),
        },
    ]
}

fn socket_arg() -> Result<PathBuf, String> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next(), args.next()) {
        (None, _, _) => Ok(default_kds_socket()),
        (Some("--socket"), Some(p), None) => Ok(PathBuf::from(p)),
        _ => Err("usage: figure18 [--socket PATH]".into()),
    }
}

fn run() -> Result<(), String> {
    let socket = socket_arg()?;
    let app = KdsApp::attach(
        &socket,
        &AppOptions {
            width: WINDOW_PX,
            height: WINDOW_PX,
            name: "figure18".into(),
            guis: true,
        },
    )
    .map_err(|e| format!("attach: {e}"))?;
    // Compose and draw belong on the drawing thread (seed 000, chapter 4).
    let (tx, rx) = std::sync::mpsc::channel();
    app.run_on(ThreadCategory::Drawing, move |ctx| {
        let surface = Surface {
            width: WINDOW_PX,
            height: WINDOW_PX,
            layers: layers(),
        };
        let r = ctx
            .compose(SURFACE_ID, surface)
            .and_then(|()| ctx.draw(SURFACE_ID, 0, 0));
        let _ = tx.send(r);
    })
    .map_err(|e| format!("run_on: {e}"))?;
    rx.recv()
        .map_err(|_| "the drawing thread stopped".to_owned())?
        .map_err(|e| format!("compose/draw: {e}"))?;

    let reports: Vec<LayerReport> = layers()
        .iter()
        .map(|l| LayerReport {
            z: l.z,
            x: l.rect.x,
            y: l.rect.y,
            width: l.rect.width,
            height: l.rect.height,
            argb: match l.fill {
                Fill::Solid(c) => format!("{c:#010x}"),
                Fill::Pixels(_) => String::new(),
            },
        })
        .collect();
    let line = serde_json::json!({
        "app": app_id_bits(app.app()),
        "window": app.window(),
        "layers": reports,
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;
    drop(out);

    // The caller snapshots the screen now; a line or end of file says it is done.
    let mut buf = String::new();
    let _ = std::io::stdin().lock().read_line(&mut buf);
    app.detach().map_err(|e| format!("detach: {e}"))?;
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("figure18: {e}");
            ExitCode::FAILURE
        }
    }
}
