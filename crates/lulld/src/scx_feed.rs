//! The daemon's facts for lull-scx, Lull's sched_ext scheduler (`docs/scx.md`): what the display
//! server knows about each app's threads — its window class (guiS table 1's front, visible,
//! behind) and its latest input push (the boost's and UCSG's trigger) — written into the map
//! lull-scx pins ([`lull_os::bpf::scx_facts`]), one record per declared thread.
//!
//! This module only reads the seam's facts; it decides nothing (lull-scx's BPF side does, from
//! lull-sched's tables). Each write is one `bpf(BPF_MAP_UPDATE_ELEM)`; an input push writes the
//! app's declared threads (at most four), so the event path pays a few system calls and no
//! allocation. Without lull-scx loaded the writes are counted as skipped.

use std::collections::HashMap;
use std::path::Path;

use lull_model::{AppId, ThreadCategory};
use lull_os::bpf::scx_facts::{FactRecord, FactsCounters, FactsMap};
use lull_sched::guis::WindowClass;
use lull_sched::seam::{Fact, ThreadRef};

#[derive(Debug)]
struct AppFacts {
    class: WindowClass,
    threads: Vec<(ThreadCategory, ThreadRef)>,
    input_seq: u32,
    input_ns: u64,
}

/// The writer of lull-scx's facts.
#[derive(Debug)]
pub struct ScxFeed {
    map: FactsMap,
    apps: HashMap<AppId, AppFacts>,
}

impl ScxFeed {
    /// A feed into the map pinned at `path`.
    #[must_use]
    pub fn new(path: &Path) -> ScxFeed {
        ScxFeed {
            map: FactsMap::new(path),
            apps: HashMap::new(),
        }
    }

    #[must_use]
    pub fn counters(&self) -> FactsCounters {
        self.map.counters()
    }

    fn record(app: &AppFacts, category: ThreadCategory) -> FactRecord {
        FactRecord {
            class: app.class.code(),
            // Only the event thread is boosted: it is the one the push wakes.
            input_seq: if category == ThreadCategory::Event {
                app.input_seq
            } else {
                0
            },
            input_ns: app.input_ns,
        }
    }

    fn write_all(&mut self, app: AppId) {
        if let Some(a) = self.apps.get(&app) {
            for &(c, t) in &a.threads {
                self.map
                    .write(u32::try_from(t.tid).unwrap_or(0), Self::record(a, c));
            }
        }
    }

    /// A fact the seam was told.
    pub fn on_fact(&mut self, now_ns: u64, fact: &Fact) {
        let new = || AppFacts {
            class: WindowClass::Front,
            threads: Vec::new(),
            input_seq: 0,
            input_ns: 0,
        };
        match *fact {
            Fact::ThreadDeclared {
                app,
                thread,
                category,
            } => {
                let a = self.apps.entry(app).or_insert_with(new);
                a.threads.retain(|&(c, _)| c != category);
                a.threads.push((category, thread));
                let rec = Self::record(a, category);
                self.map.write(u32::try_from(thread.tid).unwrap_or(0), rec);
            }
            Fact::WindowChanged { app, window } => {
                self.apps.entry(app).or_insert_with(new).class = WindowClass::of(window);
                self.write_all(app);
            }
            Fact::InputPushed { app } => {
                if let Some(a) = self.apps.get_mut(&app) {
                    a.input_seq = a.input_seq.wrapping_add(1);
                    a.input_ns = now_ns;
                    self.write_all(app);
                }
            }
            Fact::AppGone { app } => {
                if let Some(a) = self.apps.remove(&app) {
                    for (_, t) in a.threads {
                        self.map.remove(u32::try_from(t.tid).unwrap_or(0));
                    }
                }
            }
            Fact::HandlerFinished { .. }
            | Fact::Forked { .. }
            | Fact::Exited { .. }
            | Fact::Adopted { .. }
            | Fact::RunQueues { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_model::WindowState;

    #[test]
    fn without_lull_scx_every_write_is_skipped_and_counted() {
        let mut f = ScxFeed::new(Path::new("/nonexistent/lull_scx_facts"));
        let app = AppId {
            index: 0,
            generation: 1,
        };
        let t = ThreadRef {
            pid: 10,
            tid: 11,
            process_start_ticks: 5,
        };
        f.on_fact(
            0,
            &Fact::ThreadDeclared {
                app,
                thread: t,
                category: ThreadCategory::Event,
            },
        );
        f.on_fact(
            1,
            &Fact::WindowChanged {
                app,
                window: WindowState::FRONT,
            },
        );
        f.on_fact(2, &Fact::InputPushed { app });
        f.on_fact(3, &Fact::AppGone { app });
        assert_eq!(f.counters().skipped, 4);
        assert!(f.apps.is_empty());
    }

    #[test]
    fn only_the_event_thread_carries_the_input_sequence() {
        let a = AppFacts {
            class: WindowClass::Front,
            threads: Vec::new(),
            input_seq: 3,
            input_ns: 9,
        };
        assert_eq!(ScxFeed::record(&a, ThreadCategory::Event).input_seq, 3);
        let d = ScxFeed::record(&a, ThreadCategory::Drawing);
        assert_eq!((d.input_seq, d.input_ns, d.class), (0, 9, 1));
    }
}
