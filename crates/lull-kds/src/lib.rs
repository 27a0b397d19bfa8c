//! The display server's pure parts (seed 000, chapter 4).
//!
//! - [`wire`]: the `KDS_COMMAND` of figure 15 — `{request_type, data_length, data}` — encoded and
//!   decoded with a length check before every read and a typed error for every malformation.
//! - [`compose`]: the compositor of figure 16, flattening a surface's layers by increasing z.
//! - [`pixmap`]: ARGB pixel grids (flattened surfaces, window buffers, the frame buffer) and the
//!   bounds-checked 2D draw of figure 17.
//! - [`figure18`]: seed 000's figure 18 as data, for the examples and tests.
//! - [`wm`]: the window manager: stacking, foreground/background, covering, screen on/off, and the
//!   effects each change has on the ESM (input suspended or restored) and on the app.
//!
//! - [`pacing`]: frame pacing by the display: one frame per refresh period, `FRAME` answered at
//!   the next refresh boundary.
//! - [`server`]: the server's state machine: attached apps, surfaces, window buffers and the
//!   screen they stack into; each request applied with its effects on the ESM.
//!
//! No I/O, no threads, no clock: the daemon in `lulld` moves the bytes.

pub mod compose;
pub mod figure18;
pub mod geometry;
pub mod pacing;
pub mod pixmap;
pub mod present;
pub mod screen_size;
pub mod server;
pub mod wire;
pub mod wm;

pub use compose::{compose, ComposeError, Fill, Layer, Surface};
pub use geometry::Rect;
pub use pixmap::{DrawError, Pixmap};
