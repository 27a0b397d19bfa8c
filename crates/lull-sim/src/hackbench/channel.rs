//! The pipe or socket between hackbench's senders and one receiver, as Linux sizes and wakes
//! them: a pipe is 16 page buffers into which small writes merge, and a blocked writer is woken
//! when the reader frees a page; a Unix stream socket charges each message's buffer to the
//! sender's send buffer, and blocked writers are woken once it is three quarters drained.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// Page buffers of a pipe: `PIPE_BUFFERS` (Linux 2.6.32 `include/linux/pipe_fs_i.h`); today's
/// `PIPE_DEF_BUFFERS` is the same 16.
pub const PIPE_BUFFERS: u32 = 16;
/// The page a pipe buffer holds.
pub const PAGE_BYTES: u32 = 4096;
/// A Unix socket's send buffer: `sysctl_wmem_default` = `SK_WMEM_MAX` = 256 × (the size of
/// `struct sk_buff` plus 256) in Linux 2.6.32 (`net/core/sock.c`); ESTIMATE: an `sk_buff` of 160
/// bytes on 32-bit ARM, so 106 496 bytes.
pub const SOCKET_SNDBUF_BYTES: u32 = 106_496;
/// What one message's buffer is charged to the send buffer (`skb->truesize`): its data rounded
/// to the cache line (`SKB_DATA_ALIGN`) plus the `sk_buff` itself (2.6.32 `alloc_skb`);
/// ESTIMATE for 100 bytes on a 32-byte-line ARM: 128 + 160.
pub const SKB_OVERHEAD_BYTES: u32 = 160;
const SKB_ALIGN_BYTES: u32 = 32;

/// How hackbench's tasks talk.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// `hackbench -p`: a pipe per receiver.
    Pipe,
    /// The default: a `socketpair(AF_UNIX, SOCK_STREAM)` per receiver.
    Socket,
}

impl Transport {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Transport::Pipe => "pipe",
            Transport::Socket => "socket",
        }
    }
}

/// One receiver's channel.
#[derive(Clone, Debug)]
pub(crate) struct Channel {
    transport: Transport,
    /// Pipe: messages in each page buffer in use, oldest first.
    pages: VecDeque<u32>,
    /// Pipe: messages already read from the oldest page.
    head_read: u32,
    /// Pipe: messages a page holds (a write that does not fit starts a new page).
    per_page: u32,
    /// Socket: messages the send buffer admits, and the level writers are woken at.
    socket_cap: u32,
    socket_wake_at: u32,
    /// Messages written and not yet read.
    pub queued: u32,
    /// The receiver sleeps in `read` waiting for data.
    pub reader_waiting: bool,
    /// Senders asleep in `write` waiting for room, in the order they slept.
    pub writers_waiting: Vec<usize>,
}

impl Channel {
    pub fn new(transport: Transport, datasize: u32) -> Channel {
        let d = datasize.max(1);
        let truesize = d.div_ceil(SKB_ALIGN_BYTES) * SKB_ALIGN_BYTES + SKB_OVERHEAD_BYTES;
        // `sock_alloc_send_pskb` waits while the charged bytes are at or above the send buffer.
        let socket_cap = SOCKET_SNDBUF_BYTES.div_ceil(truesize).max(1);
        Channel {
            transport,
            pages: VecDeque::new(),
            head_read: 0,
            per_page: (PAGE_BYTES / d).max(1),
            socket_cap,
            // `unix_writable`: (charged bytes << 2) <= sndbuf.
            socket_wake_at: SOCKET_SNDBUF_BYTES / 4 / truesize,
            queued: 0,
            reader_waiting: false,
            writers_waiting: Vec::new(),
        }
    }

    /// Messages the channel holds when full (writers block beyond it).
    #[cfg(test)]
    pub fn capacity(&self) -> u32 {
        match self.transport {
            Transport::Pipe => PIPE_BUFFERS * self.per_page,
            Transport::Socket => self.socket_cap,
        }
    }

    /// Whether a write of one message goes through now.
    pub fn can_write(&self) -> bool {
        match self.transport {
            Transport::Pipe => {
                self.pages.back().is_some_and(|&n| n < self.per_page)
                    || (self.pages.len() as u32) < PIPE_BUFFERS
            }
            Transport::Socket => self.queued < self.socket_cap,
        }
    }

    /// Writes one message (the caller checked [`Channel::can_write`]).
    pub fn push(&mut self) {
        debug_assert!(self.can_write());
        if self.transport == Transport::Pipe {
            match self.pages.back_mut() {
                Some(n) if *n < self.per_page => *n += 1,
                _ => self.pages.push_back(1),
            }
        }
        self.queued += 1;
    }

    /// Reads one message (the caller checked `queued > 0`); true when the read makes room that
    /// wakes blocked writers (a pipe page freed; a socket's send buffer drained to a quarter).
    pub fn pop(&mut self) -> bool {
        debug_assert!(self.queued > 0);
        self.queued -= 1;
        match self.transport {
            Transport::Pipe => {
                self.head_read += 1;
                if self.pages.front().is_some_and(|&n| n == self.head_read) {
                    self.pages.pop_front();
                    self.head_read = 0;
                    true
                } else {
                    false
                }
            }
            Transport::Socket => self.queued <= self.socket_wake_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_holds_16_pages_of_40_hundred_byte_messages_and_frees_them_page_by_page() {
        let mut c = Channel::new(Transport::Pipe, 100);
        assert_eq!(c.capacity(), 640);
        for _ in 0..640 {
            assert!(c.can_write());
            c.push();
        }
        assert!(!c.can_write());
        // The first 39 reads free nothing; the 40th frees the first page.
        for _ in 0..39 {
            assert!(!c.pop());
        }
        assert!(!c.can_write());
        assert!(c.pop());
        assert!(c.can_write());
        assert_eq!(c.queued, 600);
    }

    #[test]
    fn a_socket_admits_its_send_buffer_and_wakes_writers_at_a_quarter() {
        let mut c = Channel::new(Transport::Socket, 100);
        // 106 496 / (128 + 160) = 369.8: the 370th message still starts below the limit.
        assert_eq!(c.capacity(), 370);
        for _ in 0..370 {
            c.push();
        }
        assert!(!c.can_write());
        // Writers wake once at most 106 496 / 4 / 288 = 92 messages are charged.
        let mut woke_at = None;
        while c.queued > 0 {
            if c.pop() {
                woke_at = Some(c.queued);
                break;
            }
        }
        assert_eq!(woke_at, Some(92));
    }
}
