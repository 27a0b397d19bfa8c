//! Interbench's Memload as the simulator can express memory pressure: one thread that, over and
//! over, allocates and touches 110 % of the RAM in 1 MiB blocks, copies each block from the one
//! half the set away, and frees them all (interbench 0.31 `emulate_memload`).
//!
//! What is modelled: the CPU time of page faults, of streaming each MiB through the memory at
//! the platform's DRAM latency and overlap (`[costs]`), of reclaiming and unmapping pages; the
//! blocks that fit in RAM, kept by least-recent use (the kernel's LRU), with a swap cache (a
//! block read back from swap and not written since needs no second write); the thread blocking
//! while a block is written to or read from swap; the whole L2 evicted for whoever runs next on
//! its core (its hot set is the L2). What is not: kswapd running beside it, the page cache of
//! other processes, swap read-ahead, a swap device shared with other I/O — the memory of the
//! others is one fixed resident share, [`SYSTEM_RESIDENT_MIB`].

use crate::platform::Platform;

/// Linux's base page on ARMv7 and x86-64.
pub const PAGE_BYTES: u64 = 4096;
const PAGES_PER_MIB: u64 = (1 << 20) / PAGE_BYTES;
/// Interbench's `DEFAULT_RESERVE`: 64 MiB of RAM + swap it leaves untouched.
pub const DEFAULT_RESERVE_MIB: u64 = 64;
/// Interbench's cap on the memory it touches (`if (usage > 2930) usage = 2930`, MiB).
pub const MAX_TOUCH_MIB: u64 = 2930;
/// ESTIMATE: the CPU work of one anonymous page fault besides zeroing the page (exception entry,
/// `handle_mm_fault`, page allocation, mapping): a few microseconds on a 1 GHz-class core.
pub const FAULT_CYCLES: u64 = 2000;
/// ESTIMATE: reclaiming one page for swap (`shrink_page_list`: unmap, add to the swap cache,
/// submit the write): of the order of a fault.
pub const RECLAIM_CYCLES_PER_PAGE: u64 = 1500;
/// ESTIMATE: unmapping and freeing one page at `free` (glibc returns a 1 MiB block with
/// `munmap`, its mmap threshold being 128 KiB).
pub const UNMAP_CYCLES_PER_PAGE: u64 = 300;
/// ESTIMATE: swap writes, MiB/s (an SD-card or eMMC swap partition of a 2010 board: 6-10 MB/s
/// sequential writes).
pub const SWAP_WRITE_MIB_PER_S: u64 = 8;
/// ESTIMATE: swap reads, MiB/s (the same device reads about twice as fast as it writes).
pub const SWAP_READ_MIB_PER_S: u64 = 16;
/// ESTIMATE: RAM the kernel and the system's resident processes keep (Android 2.2's system
/// server, media server and the launcher are a few hundred MiB together); memload can hold the
/// rest.
pub const SYSTEM_RESIDENT_MIB: u64 = 256;
/// ESTIMATE: the swap partition is as large as the RAM (the usual rule of thumb); interbench
/// touches at most RAM + swap − its reserve.
pub const SWAP_PER_RAM: u64 = 1;

/// Memload's costs on one platform.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct MemCosts {
    /// Blocks (MiB) memload touches: interbench's `compute_allocable_mem`.
    pub blocks: u64,
    /// Blocks that fit in the RAM left to memload.
    pub resident_cap: u64,
    /// Streaming one MiB through the memory (read or write), as CPU cycles at the top speed.
    pub stream_cycles: u64,
    pub swap_out_ns: u64,
    pub swap_in_ns: u64,
}

impl MemCosts {
    /// The costs for a board with `ram_mib` of RAM and `plat`'s memory, cycles at `top_khz`.
    pub fn new(plat: &Platform, ram_mib: u64, top_khz: u64) -> MemCosts {
        let c = &plat.costs;
        let lines = (1u64 << 20) / c.cache_line_bytes.max(1);
        let stream_ns = lines * c.dram_latency_ns / c.refill_mlp.max(1);
        let total = ram_mib + ram_mib * SWAP_PER_RAM;
        let usage = (ram_mib * 110 / 100)
            .min(total.saturating_sub(DEFAULT_RESERVE_MIB))
            .min(MAX_TOUCH_MIB);
        MemCosts {
            blocks: usage.max(1),
            resident_cap: ram_mib.saturating_sub(SYSTEM_RESIDENT_MIB).max(2),
            stream_cycles: stream_ns * top_khz / 1_000_000,
            swap_out_ns: 1_000_000_000 / SWAP_WRITE_MIB_PER_S,
            swap_in_ns: 1_000_000_000 / SWAP_READ_MIB_PER_S,
        }
    }
}

/// Where memload is in its loop.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pass {
    /// Allocating and touching block `i`.
    Touch(u64),
    /// Copying into block `i` from block `(i + blocks / 2) % blocks`.
    Copy(u64),
    /// Freeing every block.
    Free,
}

/// One block's memory state.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct Block {
    /// Last use (0: not resident).
    used: u64,
    /// A copy sits in swap (the swap cache keeps it after a read).
    in_swap: bool,
    /// Written since it last went to swap.
    dirty: bool,
}

/// What one step of memload costs: blocking swap I/O first, then CPU work.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Step {
    pub io_ns: u64,
    pub cycles: u64,
}

impl Step {
    fn add(&mut self, o: Step) {
        self.io_ns += o.io_ns;
        self.cycles += o.cycles;
    }
}

/// Memload's state.
#[derive(Clone, Debug)]
pub(crate) struct Memload {
    c: MemCosts,
    blocks: Vec<Block>,
    resident: u64,
    clock: u64,
    pass: Pass,
    /// Swap traffic so far, MiB (for tests and reports).
    pub swapped_out_mib: u64,
    pub swapped_in_mib: u64,
}

impl Memload {
    pub fn new(c: MemCosts) -> Memload {
        Memload {
            c,
            blocks: vec![Block::default(); c.blocks as usize],
            resident: 0,
            clock: 0,
            pass: Pass::Touch(0),
            swapped_out_mib: 0,
            swapped_in_mib: 0,
        }
    }

    /// Makes block `b` resident and uses it (`write`: it is written).
    fn access(&mut self, b: u64, write: bool) -> Step {
        self.clock += 1;
        let mut s = Step::default();
        let blk = self.blocks[b as usize];
        if blk.used == 0 {
            if self.resident >= self.c.resident_cap {
                s.add(self.evict_lru());
            }
            if blk.in_swap {
                s.io_ns += self.c.swap_in_ns;
                self.swapped_in_mib += 1;
            } else {
                // A fresh block: every page faults and is zeroed.
                s.cycles += PAGES_PER_MIB * FAULT_CYCLES + self.c.stream_cycles;
            }
            self.resident += 1;
        }
        let blk = &mut self.blocks[b as usize];
        blk.used = self.clock;
        if write || !blk.in_swap {
            blk.dirty = true;
        }
        s
    }

    /// Reclaims the least recently used resident block, writing it to swap if it changed.
    fn evict_lru(&mut self) -> Step {
        let victim = self
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.used != 0)
            .min_by_key(|(_, b)| b.used)
            .map(|(i, _)| i);
        let mut s = Step {
            io_ns: 0,
            cycles: PAGES_PER_MIB * RECLAIM_CYCLES_PER_PAGE,
        };
        if let Some(v) = victim {
            let b = &mut self.blocks[v];
            if b.dirty || !b.in_swap {
                s.io_ns += self.c.swap_out_ns;
                self.swapped_out_mib += 1;
            }
            *b = Block {
                used: 0,
                in_swap: true,
                dirty: false,
            };
            self.resident -= 1;
        }
        s
    }

    /// The next step of memload's loop.
    pub fn step(&mut self) -> Step {
        let n = self.c.blocks;
        match self.pass {
            Pass::Touch(i) => {
                let mut s = self.access(i, true);
                // memset of the whole block.
                s.cycles += self.c.stream_cycles;
                self.pass = if i + 1 == n {
                    Pass::Copy(0)
                } else {
                    Pass::Touch(i + 1)
                };
                s
            }
            Pass::Copy(i) => {
                let mut s = self.access((i + n / 2) % n, false);
                s.add(self.access(i, true));
                // memcpy: read one MiB, write one MiB.
                s.cycles += 2 * self.c.stream_cycles;
                self.pass = if i + 1 == n {
                    Pass::Free
                } else {
                    Pass::Copy(i + 1)
                };
                s
            }
            Pass::Free => {
                let mapped = self.resident;
                self.blocks.fill(Block::default());
                self.resident = 0;
                self.pass = Pass::Touch(0);
                Step {
                    io_ns: 0,
                    cycles: mapped * PAGES_PER_MIB * UNMAP_CYCLES_PER_PAGE,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs(blocks: u64, cap: u64) -> MemCosts {
        MemCosts {
            blocks,
            resident_cap: cap,
            stream_cycles: 10,
            swap_out_ns: 100,
            swap_in_ns: 50,
        }
    }

    #[test]
    fn interbench_touches_110_percent_of_the_ram() {
        let plat = Platform::by_name("tegra-250").unwrap();
        let c = MemCosts::new(&plat, 1024, 1_200_000);
        assert_eq!(c.blocks, 1126);
        assert_eq!(c.resident_cap, 1024 - SYSTEM_RESIDENT_MIB);
        // 32-byte lines, 120 ns, 2 overlapping misses: 32768 lines × 60 ns ≈ 1.97 ms per MiB.
        assert_eq!(c.stream_cycles, 32768 * 60 * 1_200_000 / 1_000_000);
    }

    #[test]
    fn blocks_that_fit_never_swap_and_a_cyclic_copy_beyond_ram_swaps_every_block() {
        // Everything fits: one whole loop without I/O.
        let mut m = Memload::new(costs(10, 10));
        for _ in 0..(10 + 10 + 1) {
            assert_eq!(m.step().io_ns, 0);
        }
        assert_eq!(m.swapped_out_mib, 0);
        // 10 blocks, room for 8: the touch pass evicts 2 (written out), then the copy pass's
        // cyclic pattern misses under LRU.
        let mut m = Memload::new(costs(10, 8));
        let touch_io: u64 = (0..10).map(|_| m.step().io_ns).sum();
        assert_eq!(touch_io, 2 * 100);
        assert_eq!(m.swapped_out_mib, 2);
        let copy_io: u64 = (0..10).map(|_| m.step().io_ns).sum();
        assert!(copy_io > 0);
        assert!(m.swapped_in_mib > 0);
        // Freeing empties memory and swap: the next touch pass starts clean.
        let free = m.step();
        assert_eq!(free.io_ns, 0);
        assert!(free.cycles > 0);
        assert_eq!(m.resident, 0);
        assert!(m.blocks.iter().all(|b| *b == Block::default()));
    }

    #[test]
    fn a_block_read_back_and_not_written_is_dropped_without_a_second_write() {
        let mut m = Memload::new(costs(3, 1));
        m.access(0, true);
        m.access(1, true); // evicts 0 (dirty: written)
        assert_eq!(m.swapped_out_mib, 1);
        m.access(0, false); // evicts 1 (written), reads 0 back
        assert_eq!((m.swapped_out_mib, m.swapped_in_mib), (2, 1));
        m.access(2, true); // evicts 0: clean, its swap copy stands
        assert_eq!(m.swapped_out_mib, 2);
    }
}
