//! ZIP (OpenExplorer's zip facility, seed 001 §4.1, Table II: the CPU-intensive background app):
//! compress a 67.4 MB file with deflate on one thread, with no I/O wait.

use crate::kernel::Action;

/// Bytes compressed: seed 001 §4.1 ("compress a 67.4MB file").
pub const ZIP_BYTES: u64 = 67_400_000;

/// Work per input byte, in Cortex-A15 cycles. ESTIMATE: lzbench's published runs give zlib at
/// level 6 (the default of `java.util.zip.Deflater`, whose native zlib OpenExplorer uses) about
/// 35 MB/s on the Silesia corpus on a 4 GHz Skylake core, about 115 cycles per byte; a
/// Cortex-A15 retires roughly 0.6 times as many instructions per cycle on such branchy integer
/// code, so about 190 cycles per byte. Not chosen from seed 001's completion times.
pub const ZIP_CYCLES_PER_BYTE: u64 = 190;

/// The compressor works through its input in 1 MiB pieces (its read buffer); only the progress
/// accounting depends on it.
pub const ZIP_CHUNK_BYTES: u64 = 1 << 20;

/// The ZIP app's one worker thread.
#[derive(Clone, Debug)]
pub(crate) struct Zip {
    pub tid: usize,
    cycles_per_byte: u64,
    bytes_left: u64,
    pub done_ns: Option<u64>,
}

impl Zip {
    pub fn new(tid: usize, cycles_per_byte: u64) -> Zip {
        Zip {
            tid,
            cycles_per_byte,
            bytes_left: ZIP_BYTES,
            done_ns: None,
        }
    }

    /// The thread's next step: the next piece's compression, or the end.
    pub fn step(&mut self, now: u64) -> Action {
        if self.bytes_left == 0 {
            self.done_ns.get_or_insert(now);
            return Action::Block;
        }
        let piece = self.bytes_left.min(ZIP_CHUNK_BYTES);
        self.bytes_left -= piece;
        Action::Compute(piece * self.cycles_per_byte)
    }
}
