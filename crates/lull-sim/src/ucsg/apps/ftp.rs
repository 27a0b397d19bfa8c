//! FTP (FtpCafe, seed 001 §4.1, Table II: the I/O-intensive background app): download a 65.9 MB
//! file over 802.11n. The link delivers the file in chunks at its goodput; each chunk costs the
//! kernel's receive path in the network interrupt and the app's thread a read and a write. The
//! socket's receive buffer holds a bounded number of chunks: when the app falls behind, the
//! buffer fills, TCP's window closes and the link stalls until the app drains a chunk.

use lull_model::time::NS_PER_S;

use crate::kernel::Action;

/// Bytes downloaded: seed 001 §4.1 ("download a 65.9MB file").
pub const FTP_BYTES: u64 = 65_900_000;

/// Goodput of the Wi-Fi link in bits per second. ESTIMATE: the seed's access point is an ASUS
/// RT-N10 (§4.1), an 802.11n 1x1 router of 150 Mbit/s PHY rate; single-stream TCP over 802.11n
/// commonly reaches about a third of the PHY rate, so 50 Mbit/s.
pub const FTP_LINK_BPS: u64 = 50_000_000;

/// The unit the link delivers and the app reads: 64 KiB (a TCP receive-coalescing batch; the
/// model's granularity, not a protocol constant).
pub const FTP_CHUNK_BYTES: u64 = 64 * 1024;

/// Socket receive buffer in chunks: 1 MiB, the default of Android's Wi-Fi TCP buffer sizes
/// (`net.tcp.buffersize.wifi` = 524288,1048576,2097152,… in Android 4.x `init.rc`: the middle
/// value is the default receive buffer).
pub const FTP_RCVBUF_CHUNKS: u64 = (1 << 20) / FTP_CHUNK_BYTES;

/// Kernel receive work per byte in the network interrupt (driver, IP/TCP, socket queueing), in
/// Cortex-A15 cycles. ESTIMATE 2: Linux TCP receive costs of the order of one to two cycles per
/// byte on server cores with offloads; a phone's Wi-Fi driver has fewer offloads.
pub const FTP_IRQ_CYCLES_PER_BYTE: u64 = 2;

/// The app thread's work per byte: `read` from the socket (a copy), the Java loop, `write` to
/// the file (a copy into the page cache, ext4's write path). ESTIMATE 8 Cortex-A15 cycles per
/// byte, a few per copy and per layer.
pub const FTP_APP_CYCLES_PER_BYTE: u64 = 8;

/// The download: the link's state and the app thread's.
#[derive(Clone, Debug)]
pub(crate) struct Ftp {
    pub tid: usize,
    /// Chunks that have arrived and wait in the receive buffer.
    buffered: u64,
    /// Chunks sent by the link so far, and read by the app.
    sent: u64,
    read: u64,
    total: u64,
    /// The link waits for room in the receive buffer.
    pub stalled: bool,
    pub done_ns: Option<u64>,
    /// The app thread is blocked waiting for data.
    waiting: bool,
}

impl Ftp {
    pub fn new(tid: usize) -> Ftp {
        Ftp {
            tid,
            buffered: 0,
            sent: 0,
            read: 0,
            total: FTP_BYTES.div_ceil(FTP_CHUNK_BYTES),
            stalled: false,
            done_ns: None,
            waiting: false,
        }
    }

    /// Time the link takes to deliver one chunk.
    pub fn chunk_interval_ns() -> u64 {
        FTP_CHUNK_BYTES * 8 * NS_PER_S / FTP_LINK_BPS
    }

    /// Cycles of the network interrupt for one chunk.
    pub fn irq_cycles() -> u64 {
        FTP_CHUNK_BYTES * FTP_IRQ_CYCLES_PER_BYTE
    }

    /// A chunk arrives. Returns whether the link goes on sending (false: the buffer is full
    /// after this one, or the file is sent).
    pub fn arrive(&mut self) -> bool {
        self.buffered += 1;
        self.sent += 1;
        let more = self.sent < self.total;
        self.stalled = more && self.buffered >= FTP_RCVBUF_CHUNKS;
        more && !self.stalled
    }

    /// Whether the app thread waits for the data that just arrived (to be woken).
    pub fn take_waiting(&mut self) -> bool {
        std::mem::take(&mut self.waiting)
    }

    /// The app thread's next step. Returns the action and whether the link, stalled on a full
    /// buffer, restarts now that a chunk was taken.
    pub fn step(&mut self, now: u64) -> (Action, bool) {
        if self.read == self.total {
            self.done_ns.get_or_insert(now);
            return (Action::Block, false);
        }
        if self.buffered == 0 {
            self.waiting = true;
            return (Action::Block, false);
        }
        self.buffered -= 1;
        self.read += 1;
        let restart = std::mem::take(&mut self.stalled);
        (
            Action::Compute(FTP_CHUNK_BYTES * FTP_APP_CYCLES_PER_BYTE),
            restart,
        )
    }
}
