//! The video player (RockPlayer, seed 001 §4.1, Table II: the non-interactive foreground app):
//! a 60-second 640×360 trailer at 30 frames per second, decoded in software. A decoder thread
//! decodes frames in order, up to a small queue ahead of the display; a render thread wakes at
//! each frame's presentation time, converts and posts the frame if it is decoded, and drops it
//! if not; an audio thread decodes the sound track in its own rhythm. The frame rate is the
//! frames presented on time per second of video.

use lull_model::time::{NS_PER_MS, NS_PER_S};

use crate::kernel::Action;

/// Seed 001 §4.1: "a 60-second movie trailer with a resolution of 640×360 and a frame rate of
/// 30 fps".
pub const VIDEO_DURATION_NS: u64 = 60 * NS_PER_S;
pub const VIDEO_FPS: u64 = 30;
pub const VIDEO_WIDTH: u64 = 640;
pub const VIDEO_HEIGHT: u64 = 360;

/// Software decoding cost per pixel, Cortex-A15 cycles. ESTIMATE 25: FFmpeg's H.264 decoder
/// (RockPlayer is FFmpeg-based) with NEON decodes 720p30 on a 1 GHz Cortex-A9, about 36
/// cycles per pixel there; the Cortex-A15 does more per cycle.
pub const VIDEO_DECODE_CYCLES_PER_PIXEL: u64 = 25;
/// Colour conversion and scaling of a frame for display, per source pixel. ESTIMATE 8 cycles
/// (NEON YUV-to-RGB and a bilinear scale, a few cycles per output pixel).
pub const VIDEO_RENDER_CYCLES_PER_PIXEL: u64 = 8;
/// Frames the decoder may run ahead of the display. ESTIMATE 4 (FFmpeg-based players keep a
/// picture queue of a few frames; ffplay's `VIDEO_PICTURE_QUEUE_SIZE` is 3).
pub const VIDEO_QUEUE_FRAMES: u64 = 4;
/// AAC-LC frames: 1024 samples at 44.1 kHz, one every 23.2 ms.
pub const AUDIO_FRAME_NS: u64 = 1024 * NS_PER_S / 44_100;
/// Decoding one AAC-LC stereo frame and writing it to the audio sink. ESTIMATE 0.3 M cycles
/// (AAC-LC decoding takes of the order of 10-15 M cycles per second).
pub const AUDIO_FRAME_CYCLES: u64 = 300_000;
/// Buffering before the first frame is due (the player's start-up). ESTIMATE 100 ms.
pub const VIDEO_PREROLL_NS: u64 = 100 * NS_PER_MS;

/// The player's threads and its frame bookkeeping.
#[derive(Clone, Debug)]
pub(crate) struct Video {
    pub decoder: usize,
    pub render: usize,
    pub audio: usize,
    start_ns: u64,
    /// The spec's `apps.video_decode_cycles_per_pixel`.
    decode_cycles_per_pixel: u64,
    frames: u64,
    /// Next frame to decode; frames below it are decoded.
    next_decode: u64,
    decoding: bool,
    decoder_waiting: bool,
    /// Next frame the render thread shows.
    next_show: u64,
    rendering: bool,
    pub presented: u64,
    pub dropped: u64,
    next_audio_ns: u64,
    audio_busy: bool,
    pub done_ns: Option<u64>,
}

impl Video {
    pub fn new(
        decoder: usize,
        render: usize,
        audio: usize,
        start_ns: u64,
        decode_cycles_per_pixel: u64,
    ) -> Video {
        Video {
            decode_cycles_per_pixel,
            decoder,
            render,
            audio,
            start_ns: start_ns + VIDEO_PREROLL_NS,
            frames: VIDEO_DURATION_NS * VIDEO_FPS / NS_PER_S,
            next_decode: 0,
            decoding: false,
            decoder_waiting: false,
            next_show: 0,
            rendering: false,
            presented: 0,
            dropped: 0,
            next_audio_ns: start_ns + VIDEO_PREROLL_NS,
            audio_busy: false,
            done_ns: None,
        }
    }

    fn due_ns(&self, frame: u64) -> u64 {
        self.start_ns + frame * NS_PER_S / VIDEO_FPS
    }

    fn pixels() -> u64 {
        VIDEO_WIDTH * VIDEO_HEIGHT
    }

    pub fn decoder_step(&mut self) -> Action {
        if self.decoding {
            self.decoding = false;
            self.next_decode += 1;
        }
        if self.next_decode < self.frames && self.next_decode < self.next_show + VIDEO_QUEUE_FRAMES
        {
            self.decoding = true;
            return Action::Compute(self.decode_cycles_per_pixel * Self::pixels());
        }
        self.decoder_waiting = true;
        Action::Block
    }

    /// The render thread's next step; `posted` is set when a frame goes to the compositor.
    pub fn render_step(&mut self, now: u64, wake: &mut Vec<usize>, posted: &mut bool) -> Action {
        if self.rendering {
            self.rendering = false;
            self.presented += 1;
            self.next_show += 1;
            *posted = true;
        }
        // Frames whose time has passed undecoded are dropped.
        while self.next_show < self.frames && self.due_ns(self.next_show) <= now {
            if self.next_show < self.next_decode {
                self.rendering = true;
                break;
            }
            self.dropped += 1;
            self.next_show += 1;
        }
        if self.decoder_waiting {
            self.decoder_waiting = false;
            wake.push(self.decoder);
        }
        if self.rendering {
            return Action::Compute(VIDEO_RENDER_CYCLES_PER_PIXEL * Self::pixels());
        }
        if self.next_show >= self.frames {
            self.done_ns.get_or_insert(now);
            return Action::Block;
        }
        Action::Sleep(self.due_ns(self.next_show))
    }

    pub fn audio_step(&mut self, now: u64) -> Action {
        if self.audio_busy {
            self.audio_busy = false;
            self.next_audio_ns += AUDIO_FRAME_NS;
        }
        if self.next_audio_ns >= self.start_ns + VIDEO_DURATION_NS {
            return Action::Block;
        }
        if now < self.next_audio_ns {
            return Action::Sleep(self.next_audio_ns);
        }
        self.audio_busy = true;
        Action::Compute(AUDIO_FRAME_CYCLES)
    }

    /// Frames presented on time per second of video.
    pub fn fps(&self) -> f64 {
        self.presented as f64 * NS_PER_S as f64 / VIDEO_DURATION_NS as f64
    }
}
