//! The text-messaging app (seed 000 chapter 6, figure 37): a simulated keyboard types a message,
//! Enter sends it over TCP to the respondent, which answers at once; the user reads for a while
//! and types the next one.
//!
//! The window shows the line being typed as one coloured block per character and, above it, the
//! conversation (sent messages and replies, newest at the bottom). Key presses are handled by the
//! model's event path; Enter writes the message to the respondent from the handler. The reply is
//! read by the background thread blocked in `recv` — except under pull-16ms, whose app loop
//! polls the socket (non-blocking) every 16 ms along with its input, as a polling app would.
//! Reply round trip = message written → reply handled.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};

use lull::kds_runtime::{KdsApp, ThreadCtx};
use lull_kds::compose::MAX_LAYERS as MAX_LAYERS_PER_SURFACE;
use lull_kds::{Fill, Layer, Rect, Surface};
use lull_model::{AppEvent, EventKind, Payload, ThreadCategory};
use lull_os::sys;
use lull_workload::messaging::{key_char, KEY_ENTER};

use super::{drawn, AppError, Drawn, LiveApp, MessagingAppReport, Shared, Stats, VideoAppReport};

/// The app's window, px: a phone-sized conversation view.
pub const WINDOW_W_PX: u32 = 800;
pub const WINDOW_H_PX: u32 = 480;
/// The conversation area on top, the input line below it.
const CONVERSATION_H_PX: u32 = 448;
const INPUT_Y_PX: i32 = 452;
const INPUT_H_PX: u32 = 24;
/// A character's block and the pitch from one to the next, px.
const CHAR_W_PX: u32 = 8;
const CHAR_H_PX: u32 = 12;
const CHAR_PITCH_PX: u32 = 10;
const LINE_PITCH_PX: u32 = 16;
const MARGIN_PX: u32 = 8;
/// Characters per conversation line.
const LINE_CHARS: usize = ((WINDOW_W_PX - 2 * MARGIN_PX) / CHAR_PITCH_PX) as usize;
/// Conversation lines that fit the area.
const CONVERSATION_LINES: usize = ((CONVERSATION_H_PX - MARGIN_PX) / LINE_PITCH_PX) as usize;
/// Messages and replies kept for the conversation view: more than ever fit on screen.
const CONVERSATION_KEEP: usize = 64;
const BACKGROUND_ARGB: u32 = 0xFFFA_FAFA;
const INPUT_BACKGROUND_ARGB: u32 = 0xFFE8_E8F0;
/// Bytes per non-blocking read of the pull model's poll: one longest line of the respondent's
/// protocol, as the respondent reads (a reply is far shorter; the poll reads until the socket is
/// empty, so this only sets how many reads a burst takes).
const POLL_READ_BYTES: usize = crate::MAX_RESPONDENT_LINE_BYTES;

const SURFACE_BACKGROUND: u32 = 1;
const SURFACE_CONVERSATION: u32 = 2;
const SURFACE_INPUT: u32 = 3;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Speaker {
    Me,
    Them,
}

#[derive(Debug, Default)]
struct State {
    stats: Stats,
    typed: String,
    /// Presses shown by no frame yet: their injection stamps.
    unshown_ns: Vec<u64>,
    input_dirty: bool,
    conversation: VecDeque<(Speaker, String)>,
    conversation_dirty: bool,
    /// When each message awaiting its reply was written.
    outstanding: VecDeque<u64>,
    net: MessagingAppReport,
    stopping: bool,
}

/// The pull model's reader: bytes of a line not yet complete.
#[derive(Debug, Default)]
struct PollReader {
    partial: Vec<u8>,
}

/// The messaging app.
#[derive(Debug)]
pub(crate) struct Messaging {
    shared: Shared<State>,
    stream: TcpStream,
    /// `Some` under pull-16ms: replies are polled, not read by the background thread.
    poll: Option<Mutex<PollReader>>,
}

/// Connects to the respondent at `addr`, draws the empty window and starts the drawing thread
/// and (unless `polled`) the background thread's reader.
pub(crate) fn start(
    kds: &KdsApp,
    addr: SocketAddr,
    polled: bool,
) -> Result<Arc<dyn LiveApp>, AppError> {
    let stream =
        TcpStream::connect(addr).map_err(|source| AppError::Respondent { addr, source })?;
    stream.set_nodelay(true)?;
    if polled {
        stream.set_nonblocking(true)?;
    }
    let ctx = kds.ctx(ThreadCategory::Drawing);
    ctx.compose(
        SURFACE_BACKGROUND,
        Surface::solid(WINDOW_W_PX, WINDOW_H_PX, BACKGROUND_ARGB),
    )?;
    ctx.draw(SURFACE_BACKGROUND, 0, 0)?;
    let app = Arc::new(Messaging {
        shared: Shared::new(State::default()),
        stream,
        poll: polled.then(|| Mutex::new(PollReader::default())),
    });
    crate::run_drawing(kds, &app, draw_loop)?;
    if !polled {
        let reader = app.stream.try_clone()?;
        let a = Arc::clone(&app);
        kds.run_on(ThreadCategory::Background, move |_| {
            read_replies(reader, &a)
        })?;
    }
    Ok(app)
}

impl Messaging {
    /// Writes the typed line to the respondent.
    fn send(&self, text: String) {
        let sent_at = sys::monotonic_ns();
        {
            let mut g = self.shared.lock();
            // Recorded before writing: the reply may be handled before `write` returns.
            g.outstanding.push_back(sent_at);
            g.conversation.push_back((Speaker::Me, text.clone()));
            trim(&mut g.conversation);
            g.conversation_dirty = true;
        }
        let mut line = text.into_bytes();
        line.push(b'\n');
        let written = (&self.stream).write_all(&line);
        let mut g = self.shared.lock();
        match written {
            Ok(()) => g.net.sent += 1,
            Err(_) => {
                g.net.send_errors += 1;
                g.outstanding.pop_back();
            }
        }
    }

    /// A reply line arrived.
    fn on_reply(&self, line: &str) {
        let now = sys::monotonic_ns();
        let mut g = self.shared.lock();
        if let Some(sent_at) = g.outstanding.pop_front() {
            g.net.reply_rtt_ns.push(now.saturating_sub(sent_at));
        }
        g.net.replies += 1;
        g.conversation
            .push_back((Speaker::Them, line.trim_end().to_owned()));
        trim(&mut g.conversation);
        g.conversation_dirty = true;
        drop(g);
        self.shared.notify();
    }
}

fn trim(c: &mut VecDeque<(Speaker, String)>) {
    while c.len() > CONVERSATION_KEEP {
        c.pop_front();
    }
}

impl LiveApp for Messaging {
    fn kinds(&self) -> &'static [EventKind] {
        &[EventKind::Key]
    }

    fn on_event(&self, ev: &AppEvent, start_ns: u64) {
        let mut g = self.shared.lock();
        g.stats.handled(ev, start_ns);
        let Payload::Key {
            code,
            pressed: true,
        } = ev.payload
        else {
            return;
        };
        g.unshown_ns.push(ev.injected_ns);
        g.input_dirty = true;
        if code == KEY_ENTER {
            let text = std::mem::take(&mut g.typed);
            drop(g);
            self.send(text);
        } else {
            if let Some(c) = key_char(code) {
                g.typed.push(c);
            }
            drop(g);
        }
        self.shared.notify();
    }

    fn on_poll(&self) {
        let Some(reader) = &self.poll else {
            return;
        };
        let mut r = reader
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut buf = [0u8; POLL_READ_BYTES];
        loop {
            match (&self.stream).read(&mut buf) {
                Ok(0) => break,
                Ok(n) => r.partial.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        while let Some(end) = r.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = r.partial.drain(..=end).collect();
            self.on_reply(&String::from_utf8_lossy(&line));
        }
    }

    fn stop(&self) {
        self.shared.lock().stopping = true;
        self.shared.notify();
        // Ends the background thread's blocked read.
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    fn report(&self) -> (Stats, Option<MessagingAppReport>, Option<VideoAppReport>) {
        let g = self.shared.lock();
        (g.stats.clone(), Some(g.net.clone()), None)
    }
}

/// The background thread: blocks in `recv` for each reply until the connection ends.
fn read_replies(stream: TcpStream, app: &Messaging) {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        match r.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => app.on_reply(&line),
        }
    }
}

fn draw_loop(ctx: &ThreadCtx, app: &Messaging) {
    loop {
        // At most one frame per refresh; keys typed meanwhile join it.
        if !app.shared.next_input_pass(
            ctx,
            |s| s.stopping,
            |s| s.input_dirty || s.conversation_dirty,
        ) {
            return;
        }
        let (input, conversation, shown) = {
            let mut g = app.shared.lock();
            let input = std::mem::take(&mut g.input_dirty).then(|| g.typed.clone());
            let conversation = std::mem::take(&mut g.conversation_dirty)
                .then(|| conversation_surface(&g.conversation));
            (input, conversation, std::mem::take(&mut g.unshown_ns))
        };
        let mut steps = Vec::new();
        if let Some(s) = conversation {
            steps.push((SURFACE_CONVERSATION, s, 0));
        }
        if let Some(text) = input {
            steps.push((SURFACE_INPUT, input_surface(&text), INPUT_Y_PX));
        }
        let mut ok = true;
        for (id, surface, y) in steps {
            let r = ctx.compose(id, surface).and_then(|()| ctx.draw(id, 0, y));
            match drawn(r) {
                Drawn::Ok => {}
                Drawn::Refused => {
                    ok = false;
                    app.shared.lock().stats.draw_errors += 1;
                }
                Drawn::Stop => return,
            }
        }
        if ok {
            let done = sys::monotonic_ns();
            app.shared.lock().stats.frame(done, &shown);
        }
    }
}

/// A character's block colour: each letter its own hue, darker for the other party.
fn char_argb(c: char, who: Speaker) -> u32 {
    let i = u32::from(c).wrapping_sub(u32::from('a')) % 26;
    let (r, g, b) = (40 + i * 7, 200 - i * 6, 60 + (i * 37) % 160);
    let shade = |v: u32| match who {
        Speaker::Me => v,
        Speaker::Them => v / 2,
    };
    0xFF00_0000 | (shade(r) << 16) | (shade(g) << 8) | shade(b)
}

/// Adds one block per non-space character of `text` at row `y`, up to the layer budget.
fn blocks(layers: &mut Vec<Layer>, text: &str, who: Speaker, y: i32) {
    for (i, c) in text.chars().enumerate() {
        if layers.len() >= MAX_LAYERS_PER_SURFACE {
            return;
        }
        if c == ' ' {
            continue;
        }
        let x = (MARGIN_PX + i as u32 * CHAR_PITCH_PX) as i32;
        layers.push(Layer {
            z: 1,
            rect: Rect::new(x, y, CHAR_W_PX, CHAR_H_PX),
            fill: Fill::Solid(char_argb(c, who)),
        });
    }
}

fn input_surface(text: &str) -> Surface {
    let mut s = Surface::solid(WINDOW_W_PX, INPUT_H_PX, INPUT_BACKGROUND_ARGB);
    let tail = text.len().saturating_sub(LINE_CHARS);
    blocks(
        &mut s.layers,
        &text[tail..],
        Speaker::Me,
        ((INPUT_H_PX - CHAR_H_PX) / 2) as i32,
    );
    s
}

/// The conversation, newest at the bottom: each entry wrapped into lines, as many lines as fit.
fn conversation_surface(conversation: &VecDeque<(Speaker, String)>) -> Surface {
    let mut lines: Vec<(Speaker, &str)> = Vec::new();
    for (who, text) in conversation {
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let cut = rest.len().min(LINE_CHARS);
            let (line, tail) = rest.split_at(cut);
            lines.push((*who, line));
            rest = tail;
        }
    }
    let first = lines.len().saturating_sub(CONVERSATION_LINES);
    let mut s = Surface::solid(WINDOW_W_PX, CONVERSATION_H_PX, BACKGROUND_ARGB);
    for (row, (who, line)) in lines[first..].iter().enumerate() {
        let y = (MARGIN_PX + row as u32 * LINE_PITCH_PX) as i32;
        blocks(&mut s.layers, line, *who, y);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_block_per_letter() {
        let s = input_surface("hi you");
        assert_eq!(s.layers.len(), 1 + 5);
        lull_kds::compose(&s).unwrap();
    }

    #[test]
    fn a_long_conversation_fits_the_compositor() {
        let long = "word ".repeat(400);
        let c: VecDeque<_> = (0..CONVERSATION_KEEP)
            .map(|i| {
                (
                    if i % 2 == 0 {
                        Speaker::Me
                    } else {
                        Speaker::Them
                    },
                    long.clone(),
                )
            })
            .collect();
        let s = conversation_surface(&c);
        assert!(s.layers.len() <= MAX_LAYERS_PER_SURFACE);
        lull_kds::compose(&s).unwrap();
    }

    #[test]
    fn colours_differ_by_letter_and_speaker() {
        assert_ne!(char_argb('a', Speaker::Me), char_argb('b', Speaker::Me));
        assert_ne!(char_argb('a', Speaker::Me), char_argb('a', Speaker::Them));
    }
}
