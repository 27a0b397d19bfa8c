//! The wait cell: one page of memory an ESM app shares with `lulld`, so that `esm_wait` costs the
//! daemon no wake-up.
//!
//! Without it every `esm_wait` is a message the daemon wakes up to read, only to mark the app
//! waiting: two daemon wake-ups per delivered event. With it the app marks itself waiting in the
//! cell and blocks in `recv`; the daemon reads the cell when it next has something for the app.
//! A `Wait` message is still sent when the app's private queue holds something, because then
//! the daemon must act at once. The race between the app going to wait and the daemon queueing
//! an event is closed Dekker-style: each side stores its own word, then loads the other's
//! (sequentially consistent), and whoever then sees both claims the app's wait with one
//! compare-and-swap; the loser does nothing, so exactly one of them acts.
//!
//! | word | written by | values |
//! | --- | --- | --- |
//! | `state` | app (to `WAITING`), daemon (claims `WAITING` → `RUNNING`); app (takes its own claim back) | [`RUNNING`], [`WAITING`] |
//! | `queued` | daemon | items in the app's private queue (events and overflow markers) |
//! | `flags` | daemon | [`FLAG_REPORT_WAITS`]: send every wait as a message (a policy needs it at once) |
//! | `routes` | daemon | a producer's route generation: bumped after each `Route` sent to it |
//!
//! The daemon creates the cell (a `memfd` sealed against shrinking and growing, so an app cannot
//! truncate it under the daemon's mapping) and passes it with the `Welcome`. An app can write any
//! value into its own cell and nothing else's: a value other than [`WAITING`] reads as running,
//! and an app that claims to wait without reading is dropped when its socket fills, as before.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::shared_page::SharedPage;

/// The app is running its handler, or doing anything but waiting.
pub const RUNNING: u32 = 0;
/// The app is blocked in `recv` for its next delivery, or about to be.
pub const WAITING: u32 = 1;
/// `flags` bit: the daemon wants every wait as a `Wait` message.
pub const FLAG_REPORT_WAITS: u32 = 1;

const STATE: usize = 0;
const QUEUED: usize = 1;
const FLAGS: usize = 2;
const ROUTES: usize = 3;

/// One side's mapping of a wait cell.
#[derive(Debug)]
pub struct WaitCell {
    page: SharedPage,
}

impl WaitCell {
    /// A new cell (the daemon's side): state running, nothing queued, no flags.
    ///
    /// # Errors
    /// The kernel's error from `memfd_create`, `ftruncate`, `fcntl` or `mmap`.
    pub fn create() -> io::Result<WaitCell> {
        let page = SharedPage::create(c"lull-wait-cell")?;
        Ok(WaitCell { page })
    }

    /// Maps a cell received from the daemon (the app's side). A descriptor that is not a sealed
    /// memory file of the right size is refused, so the daemon's peer cannot hand the app
    /// something that faults when touched.
    ///
    /// # Errors
    /// `InvalidData` for a descriptor that is not a cell; the kernel's error from `mmap`.
    pub fn open(fd: OwnedFd) -> io::Result<WaitCell> {
        let page = SharedPage::open(fd, "wait cell")?;
        Ok(WaitCell { page })
    }

    fn word(&self, i: usize) -> &AtomicU32 {
        self.page.u32_word(i)
    }

    /// The descriptor, to pass to the app.
    #[must_use]
    pub fn raw_fd(&self) -> RawFd {
        self.page.fd().as_raw_fd()
    }

    // ---- the app's side ----

    /// The app is about to block for its next delivery. Returns `true` when it must say so with
    /// a `Wait` message: its private queue holds something (and the daemon did not claim the
    /// wait first), or the daemon asked for every wait.
    #[must_use]
    pub fn app_going_to_wait(&self) -> bool {
        if self.word(FLAGS).load(Ordering::Relaxed) & FLAG_REPORT_WAITS != 0 {
            return true;
        }
        self.word(STATE).store(WAITING, Ordering::SeqCst);
        if self.word(QUEUED).load(Ordering::SeqCst) == 0 {
            return false;
        }
        // Something is queued: take the wait back and ask. If the daemon claimed it in between,
        // a delivery is already on its way and no message is needed.
        self.word(STATE)
            .compare_exchange(WAITING, RUNNING, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// The app told the cell it would wait, and then found an event of its own to run (in a
    /// data-plane ring, which the daemon does not see): it takes its wait back, so that the
    /// daemon (guiS) sees it running. Returns `true` when it did; `false` when the daemon had
    /// claimed the wait first (a delivery is on its way and the app must still read it) or the
    /// wait was never marked in the cell (it went as a `Wait` message).
    #[must_use]
    pub fn app_resumed(&self) -> bool {
        self.word(STATE)
            .compare_exchange(WAITING, RUNNING, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// A producer's route generation: it changes after every `Route` the daemon sent to this
    /// connection, so a producer reads its control socket only when this moved (a load per
    /// event instead of a `poll` system call).
    #[must_use]
    pub fn route_generation(&self) -> u32 {
        self.word(ROUTES).load(Ordering::Acquire)
    }

    // ---- the daemon's side ----

    /// Says a `Route` was just sent on this connection (after the send, so a producer that sees
    /// the new generation finds the message in its socket).
    pub fn daemon_bump_routes(&self) {
        self.word(ROUTES).fetch_add(1, Ordering::Release);
    }

    /// Claims the app's wait if it is waiting: `true` means the app is blocked (or about to be)
    /// for a delivery and the daemon now owes it one.
    #[must_use]
    pub fn daemon_claim(&self) -> bool {
        self.word(STATE).load(Ordering::SeqCst) == WAITING
            && self
                .word(STATE)
                .compare_exchange(WAITING, RUNNING, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
    }

    /// Whether the app says it is waiting (without claiming it).
    #[must_use]
    pub fn app_waiting(&self) -> bool {
        self.word(STATE).load(Ordering::SeqCst) == WAITING
    }

    /// Publishes the length of the app's private queue.
    pub fn daemon_set_queued(&self, items: usize) {
        let n = u32::try_from(items).unwrap_or(u32::MAX);
        self.word(QUEUED).store(n, Ordering::SeqCst);
    }

    /// Asks the app to send every wait as a message (or stops asking).
    pub fn daemon_set_report_waits(&self, on: bool) {
        self.word(FLAGS)
            .store(if on { FLAG_REPORT_WAITS } else { 0 }, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (WaitCell, WaitCell) {
        let daemon = WaitCell::create().unwrap();
        let dup = daemon.page.fd().try_clone().unwrap();
        let app = WaitCell::open(dup).unwrap();
        (daemon, app)
    }

    #[test]
    fn the_route_generation_moves_with_every_route_and_only_then() {
        let (d, p) = pair();
        let g = p.route_generation();
        d.daemon_set_queued(3);
        d.daemon_set_report_waits(true);
        assert_eq!(p.route_generation(), g, "other words leave it alone");
        d.daemon_bump_routes();
        d.daemon_bump_routes();
        assert_eq!(p.route_generation(), g.wrapping_add(2));
    }

    #[test]
    fn a_wait_with_nothing_queued_is_silent_and_claimed_once() {
        let (d, a) = pair();
        assert!(!d.daemon_claim());
        assert!(!a.app_going_to_wait());
        assert!(d.app_waiting());
        assert!(d.daemon_claim());
        assert!(!d.daemon_claim(), "one claim per wait");
    }

    #[test]
    fn a_wait_with_something_queued_asks_unless_the_daemon_claimed_first() {
        let (d, a) = pair();
        d.daemon_set_queued(2);
        assert!(a.app_going_to_wait(), "queued: the app asks");
        assert!(!d.daemon_claim(), "the app took its wait back");
        // The daemon claims between the app's store and its compare-and-swap: simulated by the
        // daemon claiming a wait the app marked, after which the app's own take-back fails.
        a.word(STATE).store(WAITING, Ordering::SeqCst);
        assert!(d.daemon_claim());
        assert!(a
            .word(STATE)
            .compare_exchange(WAITING, RUNNING, Ordering::SeqCst, Ordering::SeqCst)
            .is_err());
    }

    #[test]
    fn an_app_woken_by_a_ring_takes_its_wait_back_unless_claimed() {
        let (d, a) = pair();
        assert!(!a.app_going_to_wait());
        assert!(d.app_waiting());
        assert!(a.app_resumed(), "a ring record: running again");
        assert!(!d.app_waiting());
        assert!(!d.daemon_claim(), "nothing owed");
        // The daemon claimed first: its delivery is owed, the take-back fails.
        assert!(!a.app_going_to_wait());
        assert!(d.daemon_claim());
        assert!(!a.app_resumed());
        // A wait sent as a message was never marked in the cell.
        d.daemon_set_report_waits(true);
        assert!(a.app_going_to_wait());
        assert!(!a.app_resumed());
    }

    #[test]
    fn report_waits_makes_every_wait_a_message() {
        let (d, a) = pair();
        d.daemon_set_report_waits(true);
        assert!(a.app_going_to_wait());
        assert!(!d.app_waiting());
        d.daemon_set_report_waits(false);
        assert!(!a.app_going_to_wait());
    }

    #[test]
    fn a_descriptor_that_is_not_a_cell_is_refused() {
        let (r, _w) = crate::sys::pipe(false).unwrap();
        assert_eq!(
            WaitCell::open(r).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        let unsealed = crate::sys::sealed_memfd("x", &[0u8; 16]).unwrap();
        assert!(WaitCell::open(unsealed).is_err(), "wrong size");
    }

    #[test]
    fn the_race_is_closed_one_side_always_acts() {
        // Many rounds of app-waits against daemon-queues on two threads: in each round exactly
        // one of "the app asks" and "the daemon claims" happens, or neither when the daemon
        // queued after the app's wait was seen as silent — then the daemon's re-check claims.
        let (d, a) = pair();
        let d = std::sync::Arc::new(d);
        let rounds = 20_000;
        let dd = std::sync::Arc::clone(&d);
        let (go_tx, go_rx) = std::sync::mpsc::sync_channel::<()>(0);
        let (done_tx, done_rx) = std::sync::mpsc::sync_channel::<bool>(0);
        let daemon = std::thread::spawn(move || {
            let mut claims = 0u32;
            for _ in 0..rounds {
                go_rx.recv().unwrap();
                dd.daemon_set_queued(1);
                let claimed = dd.daemon_claim();
                claims += u32::from(claimed);
                done_tx.send(claimed).unwrap();
            }
            claims
        });
        for _ in 0..rounds {
            a.word(STATE).store(RUNNING, Ordering::SeqCst);
            d.daemon_set_queued(0);
            go_tx.send(()).unwrap();
            let asked = a.app_going_to_wait();
            let claimed = done_rx.recv().unwrap();
            assert!(asked ^ claimed, "asked {asked}, claimed {claimed}");
        }
        daemon.join().unwrap();
    }
}
