//! The text-messaging test of seed 000 chapter 6 (figure 37), generated deterministically.
//!
//! A simulated keyboard types a message of random words and presses Enter to send it; the
//! respondent answers at once; the user reads the reply for a while and types the next message;
//! this repeats until the session's time is up. [`messaging_session`] gives the key events and,
//! per message, its text, its keys, when it is sent and when the reading pause ends. The live
//! test replays the keys and gets its replies from the respondent server over TCP; the simulator
//! models each reply as a network event ([`MessagingSession::events_with_replies`]).
//!
//! Key codes are Linux's (`<linux/input-event-codes.h>`): a press and a release per character,
//! then Enter.

use std::ops::Range;

use lull_model::RawEvent;

use crate::rng::SplitMix64;
use crate::trace::{TimedEvent, Trace};

/// `KEY_ENTER`: sends the message.
pub const KEY_ENTER: u16 = 28;
/// `KEY_SPACE`: between words.
pub const KEY_SPACE: u16 = 57;

/// `KEY_A` … `KEY_Z` in alphabetical order (the codes follow the QWERTY rows, not the alphabet).
const LETTER_KEYS: [u16; 26] = [
    30, 48, 46, 32, 18, 33, 34, 35, 23, 36, 37, 38, 50, // a–m
    49, 24, 25, 16, 19, 31, 20, 22, 47, 17, 45, 21, 44, // n–z
];

/// The words messages and replies are made of: common short words, including one- and
/// two-letter ones so that any length can be filled exactly. Lower-case a–z only.
pub const WORDS: [&str; 40] = [
    "a", "i", "to", "in", "on", "at", "we", "so", "ok", "go", "me", "up", "the", "and", "you",
    "see", "now", "late", "home", "soon", "call", "meet", "lunch", "later", "today", "where",
    "there", "thanks", "sounds", "good", "train", "bring", "coffee", "tonight", "running",
    "minutes", "almost", "ready", "great", "maybe",
];

/// Size of a modelled reply, bytes. ESTIMATE: a short chat reply, below one 160-character SMS.
pub const REPLY_LEN_BYTES: (u32, u32) = (20, 159);

/// Longest message, characters: one line of the respondent's protocol
/// (`lull_apps::MAX_RESPONDENT_LINE_BYTES`).
pub const MAX_MESSAGE_CHARS: u32 = 4096;

/// Longest time parameter, ms. One hour bounds the session's memory (at most 7.2 M key events
/// at the shortest possible 1 ms key interval) and keeps every time far from `u64` overflow.
pub const MAX_SESSION_MS: u64 = 3_600_000;

const NS_PER_MS: u64 = 1_000_000;

/// The parameters of a messaging session.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct MessagingParams {
    /// Length of the whole session; nothing happens at or after it.
    pub duration_ms: u64,
    /// How long the user reads a reply before typing the next message.
    pub read_pause_ms: u64,
    /// Message length, characters (spaces included, Enter not), drawn uniformly in
    /// `chars_min..=chars_max`.
    pub chars_min: u32,
    pub chars_max: u32,
    /// From one key press to the next.
    pub key_interval_ms: u64,
    /// From a key's press to its release; less than `key_interval_ms`.
    pub key_hold_ms: u64,
    /// From the Enter key's release slot to the reply's arrival (the network round trip; the
    /// respondent answers at once).
    pub reply_delay_ms: u64,
}

/// Seed 000's test, as `experiments/marz/messaging.toml` states it.
pub const SEED000: MessagingParams = MessagingParams {
    // Seed 000: repeat "until 20 seconds have passed".
    duration_ms: 20_000,
    // Seed 000: "delays for 5 seconds ... to simulate the user reading".
    read_pause_ms: 5_000,
    // ESTIMATE: short SMS-style messages of 8-24 characters.
    chars_min: 8,
    chars_max: 24,
    // ESTIMATE: one key every 120 ms (a fast typist, ~100 words per minute), held 60 ms.
    key_interval_ms: 120,
    key_hold_ms: 60,
    // "The server immediately generates a response": only the network round trip remains.
    // ESTIMATE 50 ms for a local test server over Wi-Fi/Ethernet.
    reply_delay_ms: 50,
};

/// Why a session cannot be generated.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum MessagingError {
    #[error("message length must be 1 <= chars_min <= chars_max <= {MAX_MESSAGE_CHARS}, not {min}..={max}")]
    BadLength { min: u32, max: u32 },
    #[error("key_hold_ms {hold_ms} must be less than key_interval_ms {interval_ms}: a key is released before the next is pressed")]
    KeyHeldTooLong { hold_ms: u64, interval_ms: u64 },
    #[error("{field} {ms} ms is more than {MAX_SESSION_MS} ms")]
    TooLong { field: &'static str, ms: u64 },
}

/// A reply as the simulator models it: its arrival and its size.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ModelledReply {
    pub at_ns: u64,
    pub len: u32,
}

/// One message of a session. Times are nanoseconds from the session's start; a time is `None`
/// when the session ends before it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Message {
    /// What is typed: lower-case words separated by single spaces, `chars_min..=chars_max` bytes.
    pub text: String,
    /// Indices of this message's key events in [`MessagingSession::keys`]: press and release of
    /// each character, then of Enter. Fewer than `2 × (text.len() + 1)` when the session ends
    /// during typing.
    pub keys: Range<usize>,
    /// When Enter goes down: the app sends the message.
    pub enter_down_ns: Option<u64>,
    /// The reply as the simulator models it: one key interval after Enter goes down (Enter's
    /// release slot) plus `reply_delay_ms`.
    pub reply: Option<ModelledReply>,
    /// When the user has read the reply (`read_pause_ms` after it) and starts the next message.
    pub read_end_ns: Option<u64>,
}

/// A generated session: the simulated keyboard's events and the messages they type.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MessagingSession {
    /// Every key press and release, in time order, all before `end_ns`.
    pub keys: Trace,
    /// The messages, in order; the last may be cut short by the end of the session.
    pub messages: Vec<Message>,
    /// The session's length (`duration_ms`), ns.
    pub end_ns: u64,
}

impl MessagingSession {
    /// The key events with each modelled reply as a `Net` event on channel = message index,
    /// placed after that message's keys: the simulator's input.
    #[must_use]
    pub fn events_with_replies(&self) -> Vec<TimedEvent> {
        let mut out = Vec::with_capacity(self.keys.events.len() + self.messages.len());
        for (i, m) in self.messages.iter().enumerate() {
            out.extend_from_slice(&self.keys.events[m.keys.clone()]);
            if let Some(reply) = m.reply {
                out.push(TimedEvent {
                    at_ns: reply.at_ns,
                    raw: RawEvent::Net {
                        channel: u32::try_from(i).unwrap_or(u32::MAX),
                        len: reply.len,
                    },
                });
            }
        }
        out
    }
}

/// Generates a session, deterministic in `seed`.
///
/// The user starts typing one key interval in. Per message, the generator draws the length, one
/// value per character (the first seeds the words; the stream advances by one draw per character
/// whatever words are picked, so the session's timing depends only on message lengths and
/// changing [`WORDS`] moves no event), then the modelled reply's size.
///
/// # Errors
/// [`MessagingError`] for parameters outside the documented ranges.
pub fn messaging_session(
    params: &MessagingParams,
    seed: u64,
) -> Result<MessagingSession, MessagingError> {
    check(params)?;
    let p = params;
    let end = p.duration_ms * NS_PER_MS;
    let interval = p.key_interval_ms * NS_PER_MS;
    let hold = p.key_hold_ms * NS_PER_MS;
    let mut rng = SplitMix64::new(seed);
    let mut keys = Vec::new();
    let mut messages = Vec::new();
    let mut t = interval;
    while t < end {
        let chars = p.chars_min + rng.below(u64::from(p.chars_max - p.chars_min + 1)) as u32;
        let mut text_rng = SplitMix64::new(rng.next_u64());
        for _ in 1..chars {
            rng.next_u64();
        }
        let text = words_of_length(chars as usize, &mut text_rng);
        let reply_len = REPLY_LEN_BYTES.0
            + rng.below(u64::from(REPLY_LEN_BYTES.1 - REPLY_LEN_BYTES.0 + 1)) as u32;

        let first = keys.len();
        let codes = text
            .chars()
            .map(|c| key_code(c).expect("WORDS and spaces are all a-z or space"))
            .chain([KEY_ENTER]);
        for (i, code) in codes.enumerate() {
            let press = t + i as u64 * interval;
            for (at_ns, pressed) in [(press, true), (press + hold, false)] {
                if at_ns < end {
                    keys.push(TimedEvent {
                        at_ns,
                        raw: RawEvent::Key { code, pressed },
                    });
                }
            }
        }
        let enter = t + u64::from(chars) * interval;
        let reply_at = enter + interval + p.reply_delay_ms * NS_PER_MS;
        let read_end = reply_at + p.read_pause_ms * NS_PER_MS;
        let within = |at: u64| (at < end).then_some(at);
        messages.push(Message {
            text,
            keys: first..keys.len(),
            enter_down_ns: within(enter),
            reply: within(reply_at).map(|at_ns| ModelledReply {
                at_ns,
                len: reply_len,
            }),
            read_end_ns: within(reply_at).and(within(read_end)),
        });
        if reply_at >= end {
            break;
        }
        t = read_end;
    }
    Ok(MessagingSession {
        keys: Trace { events: keys },
        messages,
        end_ns: end,
    })
}

/// The session's key events alone, to be written as a `lull-trace 1` file and replayed (the
/// live test's replies come from the respondent, not from the trace).
///
/// # Errors
/// As [`messaging_session`].
pub fn messaging_trace(params: &MessagingParams, seed: u64) -> Result<Trace, MessagingError> {
    Ok(messaging_session(params, seed)?.keys)
}

fn check(p: &MessagingParams) -> Result<(), MessagingError> {
    if p.chars_min == 0 || p.chars_min > p.chars_max || p.chars_max > MAX_MESSAGE_CHARS {
        return Err(MessagingError::BadLength {
            min: p.chars_min,
            max: p.chars_max,
        });
    }
    for (field, ms) in [
        ("duration_ms", p.duration_ms),
        ("read_pause_ms", p.read_pause_ms),
        ("key_interval_ms", p.key_interval_ms),
        ("reply_delay_ms", p.reply_delay_ms),
    ] {
        if ms > MAX_SESSION_MS {
            return Err(MessagingError::TooLong { field, ms });
        }
    }
    if p.key_hold_ms >= p.key_interval_ms {
        return Err(MessagingError::KeyHeldTooLong {
            hold_ms: p.key_hold_ms,
            interval_ms: p.key_interval_ms,
        });
    }
    Ok(())
}

/// Random words from [`WORDS`] separated by single spaces, exactly `len` bytes (empty for 0).
#[must_use]
pub fn words_of_length(len: usize, rng: &mut SplitMix64) -> String {
    let mut text = String::with_capacity(len);
    while text.len() < len {
        let room = len - text.len();
        // A word either ends the text exactly or leaves room for a space and one more word;
        // the one-letter words make this always possible.
        let fits = |w: &&&str| w.len() == room || w.len() + 2 <= room;
        let n = WORDS.iter().filter(fits).count();
        let pick = rng.below(n as u64) as usize;
        if let Some(word) = WORDS.iter().filter(fits).nth(pick) {
            text.push_str(word);
        }
        if text.len() < len {
            text.push(' ');
        }
    }
    text
}

/// A reply of random words, its length uniform in [`REPLY_LEN_BYTES`]: what the respondent
/// sends, and the size range the simulator's modelled replies are drawn from.
#[must_use]
pub fn reply_text(rng: &mut SplitMix64) -> String {
    let len =
        REPLY_LEN_BYTES.0 + rng.below(u64::from(REPLY_LEN_BYTES.1 - REPLY_LEN_BYTES.0 + 1)) as u32;
    words_of_length(len as usize, rng)
}

/// The Linux key code that types `c` (a–z or space).
#[must_use]
pub fn key_code(c: char) -> Option<u16> {
    match c {
        'a'..='z' => Some(LETTER_KEYS[usize::from(c as u8 - b'a')]),
        ' ' => Some(KEY_SPACE),
        _ => None,
    }
}

/// The character a Linux key code types (a–z or space), for the app that receives the keys.
#[must_use]
pub fn key_char(code: u16) -> Option<char> {
    if code == KEY_SPACE {
        return Some(' ');
    }
    LETTER_KEYS
        .iter()
        .position(|&k| k == code)
        .map(|i| char::from(b'a' + i as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(s: &MessagingSession, m: &Message) -> String {
        s.keys.events[m.keys.clone()]
            .iter()
            .filter_map(|e| match e.raw {
                RawEvent::Key {
                    code,
                    pressed: true,
                } if code != KEY_ENTER => key_char(code),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn seed000_session_types_sends_and_reads() {
        let s = messaging_session(&SEED000, 1).unwrap();
        assert_eq!(s.end_ns, 20_000_000_000);
        // ~1-3 s of typing and 5 s of reading per round in 20 s.
        assert!((3..=4).contains(&s.messages.len()), "{}", s.messages.len());
        assert!(s.keys.events.windows(2).all(|w| w[0].at_ns < w[1].at_ns));
        assert!(s.keys.events.iter().all(|e| e.at_ns < s.end_ns));
        let mut next_key = 0;
        let mut next_start = Some(120_000_000);
        for m in &s.messages {
            assert_eq!(m.keys.start, next_key);
            next_key = m.keys.end;
            assert!((8..=24).contains(&m.text.len()));
            assert!(m.text.bytes().all(|b| b.is_ascii_lowercase() || b == b' '));
            assert!(!m.text.starts_with(' ') && !m.text.ends_with(' ') && !m.text.contains("  "));
            assert_eq!(s.keys.events[m.keys.start].at_ns, next_start.unwrap());
            if let Some(enter) = m.enter_down_ns {
                assert_eq!(typed(&s, m), m.text);
                let e = s.keys.events[m.keys.start + 2 * m.text.len()];
                assert_eq!(
                    e,
                    TimedEvent {
                        at_ns: enter,
                        raw: RawEvent::Key {
                            code: KEY_ENTER,
                            pressed: true
                        }
                    }
                );
            }
            if let (Some(enter), Some(reply), Some(read_end)) =
                (m.enter_down_ns, m.reply, m.read_end_ns)
            {
                assert_eq!(reply.at_ns, enter + 170_000_000);
                assert_eq!(read_end, reply.at_ns + 5_000_000_000);
                assert!((20..=159).contains(&reply.len));
            }
            next_start = m.read_end_ns;
        }
        assert_eq!(next_key, s.keys.events.len());
        // The last message does not complete a reading pause inside the session.
        assert_eq!(s.messages.last().unwrap().read_end_ns, None);
    }

    #[test]
    fn is_deterministic_in_the_seed() {
        let a = messaging_session(&SEED000, 7).unwrap();
        assert_eq!(a, messaging_session(&SEED000, 7).unwrap());
        assert_ne!(a.keys, messaging_session(&SEED000, 8).unwrap().keys);
    }

    #[test]
    fn events_with_replies_interleave_in_time_order() {
        for seed in 0..50 {
            let s = messaging_session(&SEED000, seed).unwrap();
            let ev = s.events_with_replies();
            assert!(ev.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));
            let nets: Vec<u32> = ev
                .iter()
                .filter_map(|e| match e.raw {
                    RawEvent::Net { channel, .. } => Some(channel),
                    _ => None,
                })
                .collect();
            assert_eq!(nets, (0..nets.len() as u32).collect::<Vec<_>>());
            assert_eq!(ev.len(), s.keys.events.len() + nets.len());
        }
    }

    #[test]
    fn a_session_cut_during_typing_keeps_only_earlier_keys() {
        let p = MessagingParams {
            duration_ms: 1_000,
            ..SEED000
        };
        let s = messaging_session(&p, 3).unwrap();
        assert_eq!(s.messages.len(), 1);
        let m = &s.messages[0];
        assert!(m.keys.end < 2 * (m.text.len() + 1));
        assert_eq!(
            (m.enter_down_ns, m.reply, m.read_end_ns),
            (None, None, None)
        );
        assert!(s.keys.events.iter().all(|e| e.at_ns < 1_000_000_000));
    }

    #[test]
    fn trace_round_trips_through_text() {
        let t = messaging_trace(&SEED000, 1).unwrap();
        assert!(!t.events.is_empty());
        assert_eq!(Trace::parse(&t.to_text()).unwrap(), t);
    }

    #[test]
    fn bad_parameters_are_errors() {
        let bad = |p: MessagingParams| messaging_session(&p, 1).unwrap_err();
        assert!(matches!(
            bad(MessagingParams {
                chars_min: 0,
                ..SEED000
            }),
            MessagingError::BadLength { .. }
        ));
        assert!(matches!(
            bad(MessagingParams {
                chars_min: 30,
                ..SEED000
            }),
            MessagingError::BadLength { .. }
        ));
        assert!(matches!(
            bad(MessagingParams {
                chars_max: MAX_MESSAGE_CHARS + 1,
                ..SEED000
            }),
            MessagingError::BadLength { .. }
        ));
        assert!(matches!(
            bad(MessagingParams {
                key_hold_ms: 120,
                ..SEED000
            }),
            MessagingError::KeyHeldTooLong { .. }
        ));
        assert_eq!(
            bad(MessagingParams {
                read_pause_ms: u64::MAX,
                ..SEED000
            }),
            MessagingError::TooLong {
                field: "read_pause_ms",
                ms: u64::MAX
            }
        );
        // Zero length: nothing happens.
        let empty = messaging_session(
            &MessagingParams {
                duration_ms: 0,
                ..SEED000
            },
            1,
        )
        .unwrap();
        assert!(empty.messages.is_empty() && empty.keys.events.is_empty());
    }

    #[test]
    fn words_fill_every_length_exactly() {
        let mut rng = SplitMix64::new(5);
        for len in 0..300 {
            for _ in 0..20 {
                let s = words_of_length(len, &mut rng);
                assert_eq!(s.len(), len);
                assert!(
                    s.split(' ').all(|w| WORDS.contains(&w)) || len == 0,
                    "{s:?}"
                );
            }
        }
    }

    #[test]
    fn replies_are_words_of_the_modelled_size() {
        let mut rng = SplitMix64::new(1);
        for _ in 0..200 {
            let r = reply_text(&mut rng);
            assert!((20..=159).contains(&r.len()), "{r:?}");
            assert!(r.split(' ').all(|w| WORDS.contains(&w)));
        }
    }

    #[test]
    fn key_codes_are_linuxs_and_invert() {
        assert_eq!(key_code('a'), Some(30));
        assert_eq!(key_code('q'), Some(16));
        assert_eq!(key_code('z'), Some(44));
        assert_eq!(key_code('m'), Some(50));
        assert_eq!(key_code(' '), Some(KEY_SPACE));
        assert_eq!(key_code('A'), None);
        for c in ('a'..='z').chain([' ']) {
            assert_eq!(key_char(key_code(c).unwrap()), Some(c));
        }
        assert_eq!(key_char(KEY_ENTER), None);
        for w in WORDS {
            assert!(w.chars().all(|c| c.is_ascii_lowercase()), "{w}");
        }
    }
}
