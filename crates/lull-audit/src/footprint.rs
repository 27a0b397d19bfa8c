//! Seed 002 §2.1.4: the memory footprint M = E × S × R + C.

use serde::Serialize;

/// Seed 002's figures: 35,000 entries per ready queue, 208-byte entries, 2 ready queues,
/// 80 bytes of control variables (§2.1.4).
pub const SEED_ENTRIES_PER_RING: u64 = 35_000;
pub const SEED_ENTRY_SIZE: u64 = 208;
pub const SEED_RINGS: u64 = 2;
pub const SEED_CONTROL_BYTES: u64 = 80;

/// The terms and the total.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Footprint {
    /// E: entries per ring.
    pub entries_per_ring: u64,
    /// S: bytes per entry.
    pub entry_size: u64,
    /// R: rings (ready queues, CPUs).
    pub rings: u64,
    /// C: control variables.
    pub control_bytes: u64,
    /// M = E × S × R + C.
    pub total_bytes: u64,
}

/// M = E × S × R + C (saturating).
pub fn footprint(
    entries_per_ring: u64,
    entry_size: u64,
    rings: u64,
    control_bytes: u64,
) -> Footprint {
    let total_bytes = entries_per_ring
        .saturating_mul(entry_size)
        .saturating_mul(rings)
        .saturating_add(control_bytes);
    Footprint {
        entries_per_ring,
        entry_size,
        rings,
        control_bytes,
        total_bytes,
    }
}

/// Control bytes of Lull's rings: one `Ring` struct per CPU plus the `PerCpuRings` vector.
pub fn lull_control_bytes(rings: u64) -> u64 {
    (std::mem::size_of::<crate::ring::Ring>() as u64).saturating_mul(rings)
        + std::mem::size_of::<crate::ring::PerCpuRings>() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_figure_is_14_6_megabytes() {
        let f = footprint(
            SEED_ENTRIES_PER_RING,
            SEED_ENTRY_SIZE,
            SEED_RINGS,
            SEED_CONTROL_BYTES,
        );
        assert_eq!(f.total_bytes, 14_560_080);
    }

    /// `docs/audit.md`'s footprint table: C is 152 bytes for two rings on a 64-bit machine.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn control_bytes_are_the_ring_structs_and_the_vector() {
        let ring = std::mem::size_of::<crate::ring::Ring>() as u64;
        let vector = std::mem::size_of::<crate::ring::PerCpuRings>() as u64;
        // A vector is a pointer, a capacity and a length; a ring holds its capacity, its three
        // counters and a deque (a pointer, a capacity, a head and a length).
        assert_eq!((ring, vector), (64, 24));
        assert_eq!(lull_control_bytes(0), 24);
        assert_eq!(lull_control_bytes(1), 88);
        assert_eq!(lull_control_bytes(2), 152);
        let f = footprint(SEED_ENTRIES_PER_RING, crate::ENTRY_SIZE as u64, 2, 152);
        assert_eq!(f.total_bytes, 4_340_152);
    }

    #[test]
    fn lull_entries_are_under_64_bytes() {
        let f = footprint(
            SEED_ENTRIES_PER_RING,
            crate::ENTRY_SIZE as u64,
            2,
            lull_control_bytes(2),
        );
        const { assert!(crate::ENTRY_SIZE < 64) };
        assert!(f.total_bytes < 14_560_080 / 3);
    }
}
