//! guiS's accounting of a running `lulld`: CPU time and wake-ups of every declared KDS thread of
//! every app, per app and thread category, since each thread started (`lull guis stats`).
//!
//! The display server lists the windows with their declared threads (`KdsAdmin::windows`); the
//! counters are read from `/proc` ([`lull_os::procfs`]).

use std::path::Path;

use lull::kds_client::{KdsAdmin, KdsClientError};
use lull_kds::wire::WindowInfo;
use lull_model::{AppId, ThreadCategory, WindowState};
use lull_os::procfs;
use serde::Serialize;

use crate::measure::CategoryUsage;

/// One declared thread's use of the machine since it started.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct ThreadStats {
    pub category: ThreadCategory,
    pub tid: u32,
    /// CPU time and wake-ups (voluntary context switches) since the thread started;
    /// `threads` is 1, or 0 when it could not be read.
    pub usage: CategoryUsage,
    pub involuntary_switches: u64,
    /// Scheduler state letter from `/proc` (`S` sleeping, `R` running, ...); `None` when gone.
    pub state: Option<char>,
}

/// One GUI app's declared threads and their totals.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct AppStats {
    pub app: AppId,
    pub pid: u32,
    pub name: String,
    pub window_state: WindowState,
    /// Declared threads in `ThreadCategory::ALL` order.
    pub threads: Vec<ThreadStats>,
    /// Over the distinct threads above.
    pub total: CategoryUsage,
}

/// Reads, from `/proc`, the counters of every thread declared in `windows` (as
/// `KdsAdmin::windows` lists them). A thread that is gone shows zeros and no state.
#[must_use]
pub fn app_stats(windows: &[WindowInfo]) -> Vec<AppStats> {
    windows
        .iter()
        .map(|w| {
            let pid = i32::try_from(w.pid).unwrap_or(0);
            let mut threads = Vec::new();
            let mut total = CategoryUsage::default();
            let mut counted: Vec<u32> = Vec::new();
            for (category, tid) in ThreadCategory::ALL.into_iter().zip(w.threads) {
                let Some(tid) = tid else {
                    continue;
                };
                let sample = i32::try_from(tid)
                    .ok()
                    .and_then(|t| procfs::sample_thread(pid, t).ok());
                let usage = sample.map_or_else(CategoryUsage::default, CategoryUsage::from);
                if !counted.contains(&tid) {
                    counted.push(tid);
                    total += usage;
                }
                threads.push(ThreadStats {
                    category,
                    tid,
                    usage,
                    involuntary_switches: sample.map_or(0, |s| s.involuntary),
                    state: sample.map(|s| s.state),
                });
            }
            AppStats {
                app: w.app,
                pid: w.pid,
                name: w.name.clone(),
                window_state: w.state,
                threads,
                total,
            }
        })
        .collect()
}

/// [`app_stats`] of the windows of the display server at `kds_socket`.
///
/// # Errors
/// [`KdsClientError`] when the server cannot be reached or refuses (listing windows needs the
/// server's user or root).
pub fn stats(kds_socket: &Path) -> Result<Vec<AppStats>, KdsClientError> {
    let mut admin = KdsAdmin::connect(kds_socket)?;
    Ok(app_stats(&admin.windows()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_this_thread() {
        let me = lull_os::sys::gettid();
        // A fixed amount of work, as the kernel counts it: at least 1 ms of CPU time.
        let mut x = 0u64;
        while procfs::sample(me).unwrap().run_ns < 1_000_000 {
            for i in 0..10_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
        }
        let w = WindowInfo {
            app: AppId {
                index: 1,
                generation: 0,
            },
            pid: std::process::id(),
            rect: lull_kds::Rect::new(0, 0, 1, 1),
            state: WindowState::FRONT,
            name: "me".into(),
            threads: [Some(me as u32), None, Some(me as u32), Some(1 << 23)],
        };
        let s = app_stats(&[w]);
        assert_eq!(s.len(), 1);
        let t = &s[0].threads;
        assert_eq!(
            t.iter().map(|t| t.category).collect::<Vec<_>>(),
            [
                ThreadCategory::Event,
                ThreadCategory::Foreground,
                ThreadCategory::Background
            ]
        );
        assert_eq!(t[0].usage.threads, 1);
        assert!(t[0].usage.cpu_ms >= 1.0, "{:?}", t[0]);
        assert_eq!(t[0].state, Some('R'));
        // The gone thread reads as zeros; the same thread twice counts once in the total.
        assert_eq!(t[2].usage, CategoryUsage::default());
        assert_eq!(t[2].state, None);
        assert_eq!(s[0].total.threads, 1);
    }
}
