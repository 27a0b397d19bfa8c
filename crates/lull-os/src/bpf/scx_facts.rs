//! The facts lulld gives lull-scx (the sched_ext scheduler, `crates/lull-scx`): one record per
//! thread in a BPF hash map that lull-scx creates and pins at [`FACTS_PIN_PATH`] while it is
//! loaded. The record is `struct lull_fact` of lull-scx's `src/bpf/intf.h`; lull-scx's tests
//! check that the two layouts agree.
//!
//! [`FactsMap`] is the writer's side: it opens the pinned map when there is one and writes or
//! removes records. Without lull-scx loaded there is nothing to open, and writes are counted as
//! skipped, not errors: the facts only matter to a scheduler that reads them.

use std::path::{Path, PathBuf};

use super::syscall::{BpfError, Map, BPF_ANY};
use crate::sys::Errno;

/// Where lull-scx pins its facts map (bpffs).
pub const FACTS_PIN_PATH: &str = "/sys/fs/bpf/lull_scx_facts";
/// The record's size in bytes: `class`, `input_seq` (u32 each), `input_ns` (u64).
pub const FACT_RECORD_BYTES: usize = 16;

/// One thread's facts.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct FactRecord {
    /// `enum lull_class` (`lull_sched::guis::WindowClass::code`; 0: no GUI app's thread).
    pub class: u32,
    /// Bumped at every input pushed to the thread: a change is what makes lull-scx boost it.
    pub input_seq: u32,
    /// `CLOCK_MONOTONIC` time of the latest push (0: none yet).
    pub input_ns: u64,
}

impl FactRecord {
    /// The bytes the BPF side reads (native byte order, no padding).
    #[must_use]
    pub fn to_bytes(self) -> [u8; FACT_RECORD_BYTES] {
        let mut b = [0u8; FACT_RECORD_BYTES];
        b[0..4].copy_from_slice(&self.class.to_ne_bytes());
        b[4..8].copy_from_slice(&self.input_seq.to_ne_bytes());
        b[8..16].copy_from_slice(&self.input_ns.to_ne_bytes());
        b
    }

    /// The record in `bytes`, `None` when they are not one record long.
    #[must_use]
    pub fn from_bytes(bytes: &[u8]) -> Option<FactRecord> {
        if bytes.len() != FACT_RECORD_BYTES {
            return None;
        }
        let u32_at = |i: usize| u32::from_ne_bytes(bytes[i..i + 4].try_into().unwrap_or([0; 4]));
        Some(FactRecord {
            class: u32_at(0),
            input_seq: u32_at(4),
            input_ns: u64::from_ne_bytes(bytes[8..16].try_into().unwrap_or([0; 8])),
        })
    }
}

/// What [`FactsMap`] did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct FactsCounters {
    /// Records written into the map.
    pub written: u64,
    /// Records removed.
    pub removed: u64,
    /// Writes with no map to write to (lull-scx not loaded).
    pub skipped: u64,
    /// Writes the kernel refused (the map full, for one).
    pub failed: u64,
}

/// The writer's handle on lull-scx's facts map.
#[derive(Debug)]
pub struct FactsMap {
    path: PathBuf,
    map: Option<Map>,
    counters: FactsCounters,
}

impl FactsMap {
    /// A writer for the map pinned at `path`; opened at the first write that finds it.
    #[must_use]
    pub fn new(path: &Path) -> FactsMap {
        FactsMap {
            path: path.to_path_buf(),
            map: None,
            counters: FactsCounters::default(),
        }
    }

    #[must_use]
    pub fn counters(&self) -> FactsCounters {
        self.counters
    }

    /// Whether a map is open (lull-scx was loaded at the latest write).
    #[must_use]
    pub fn is_open(&self) -> bool {
        self.map.is_some()
    }

    fn map(&mut self) -> Option<&Map> {
        if self.map.is_none() {
            match Map::open_pinned(&self.path) {
                Ok(m) if m.key_size() == 4 && m.value_size() == FACT_RECORD_BYTES => {
                    self.map = Some(m);
                }
                // Nothing pinned, or something else pinned there: not lull-scx's map.
                Ok(_) | Err(_) => return None,
            }
        }
        self.map.as_ref()
    }

    /// Writes `record` for thread `tid`.
    pub fn write(&mut self, tid: u32, record: FactRecord) {
        let Some(map) = self.map() else {
            self.counters.skipped += 1;
            return;
        };
        match map.update(&tid.to_ne_bytes(), &record.to_bytes(), BPF_ANY) {
            Ok(()) => self.counters.written += 1,
            Err(_) => {
                self.counters.failed += 1;
                // lull-scx may have unloaded and unpinned it: look again next time.
                self.map = None;
            }
        }
    }

    /// Removes thread `tid`'s record (it is gone, or no longer a GUI app's).
    pub fn remove(&mut self, tid: u32) {
        let Some(map) = self.map() else {
            self.counters.skipped += 1;
            return;
        };
        match map.delete(&tid.to_ne_bytes()) {
            Ok(()) => self.counters.removed += 1,
            Err(BpfError::Syscall { errno, .. }) if errno == Errno::ENOENT => {}
            Err(_) => {
                self.counters.failed += 1;
                self.map = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let r = FactRecord {
            class: 1,
            input_seq: 7,
            input_ns: 123_456_789_000,
        };
        assert_eq!(FactRecord::from_bytes(&r.to_bytes()), Some(r));
        assert_eq!(FactRecord::from_bytes(&[0; 15]), None);
    }

    #[test]
    fn without_a_pinned_map_writes_are_skipped() {
        let mut m = FactsMap::new(Path::new("/nonexistent/lull_scx_facts"));
        m.write(1, FactRecord::default());
        m.remove(1);
        assert!(!m.is_open());
        assert_eq!(
            m.counters(),
            FactsCounters {
                skipped: 2,
                ..FactsCounters::default()
            }
        );
    }
}
