//! A small handler-per-fd event loop over epoll, blocking with no timeout.
//!
//! Every component of the live stack (the daemon, the baselines' hubs and apps, the replay
//! driver) is one [`EventLoop`] over some state `S`: each registered [`Source`] owns or borrows
//! one file descriptor and is called when that descriptor is readable (or hung up). A source can
//! add and remove sources and stop the loop through [`LoopCtl`]; those changes apply after the
//! current batch, so a source never sees the table change under it. The loop itself has no timer
//! of any kind: [`EventLoop::run`] sleeps in `epoll_wait(-1)` until a descriptor has data. A
//! source that stops with work left (its fair share of a turn used up) returns
//! [`PostAction::Again`]; while any source has, the loop looks for ready descriptors without
//! sleeping and runs those sources once more after them.

use std::io;
use std::os::fd::RawFd;

use crate::sys::Epoll;

/// Identifies a registered source; stale tokens (of removed sources) are never reused.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Token(u64);

impl Token {
    fn new(index: usize, generation: u32) -> Token {
        Token((u64::from(generation) << 32) | index as u64)
    }
    fn index(self) -> usize {
        (self.0 & 0xffff_ffff) as usize
    }
    fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// What a source wants after it ran.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PostAction {
    Continue,
    /// Unregister this source (its fd is closed when the source is dropped, if it owns it).
    Remove,
    /// Run this source again in the next batch even if its descriptor brings nothing new: it
    /// has work left that it put off so that other sources get their turn.
    Again,
    /// Keep this source registered but stop watching its descriptor until a source calls
    /// [`LoopCtl::resume_paused`]: a listener out of descriptors pauses so, or the
    /// level-triggered loop would call it again at once and spin.
    Pause,
}

/// Something with a file descriptor to wake the loop.
pub trait Source<S> {
    /// The descriptor to watch for readability.
    fn fd(&self) -> RawFd;
    /// Called when the descriptor is readable or hung up. Must not block.
    fn ready(&mut self, state: &mut S, ctl: &mut LoopCtl<S>) -> PostAction;
}

/// A source made of a descriptor and a closure.
pub struct FnSource<F> {
    pub fd: RawFd,
    pub f: F,
}

impl<F> std::fmt::Debug for FnSource<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FnSource(fd {})", self.fd)
    }
}

impl<S, F: FnMut(&mut S, &mut LoopCtl<S>) -> PostAction> Source<S> for FnSource<F> {
    fn fd(&self) -> RawFd {
        self.fd
    }
    fn ready(&mut self, state: &mut S, ctl: &mut LoopCtl<S>) -> PostAction {
        (self.f)(state, ctl)
    }
}

struct Slot<S> {
    generation: u32,
    source: Option<Box<dyn Source<S>>>,
}

/// Changes a source asks for while it runs; applied after the current batch. It also owns the
/// table of sources, so a source can reserve tokens for any number of new sources.
pub struct LoopCtl<S> {
    slots: Vec<Slot<S>>,
    free: Vec<usize>,
    inserts: Vec<(Token, Box<dyn Source<S>>)>,
    removes: Vec<Token>,
    stop: bool,
    /// Sources paused ([`PostAction::Pause`]), and whether a source asked to resume them.
    paused: Vec<Token>,
    resume: bool,
}

impl<S> std::fmt::Debug for LoopCtl<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LoopCtl(+{} -{} stop {})",
            self.inserts.len(),
            self.removes.len(),
            self.stop
        )
    }
}

impl<S> LoopCtl<S> {
    fn reserve(&mut self) -> Token {
        let index = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot {
                generation: 0,
                source: None,
            });
            self.slots.len() - 1
        });
        Token::new(index, self.slots[index].generation)
    }

    /// Gives a reserved or emptied slot back, making its token stale.
    fn release(&mut self, index: usize) {
        let slot = &mut self.slots[index];
        slot.source = None;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(index);
    }

    /// Registers `source` once the current batch is done; returns its token at once.
    pub fn insert(&mut self, source: Box<dyn Source<S>>) -> Token {
        let token = self.reserve();
        self.inserts.push((token, source));
        token
    }

    /// Unregisters the source `token` once the current batch is done.
    pub fn remove(&mut self, token: Token) {
        self.removes.push(token);
    }

    /// Watches the descriptors of every paused source again once the current batch is done.
    pub fn resume_paused(&mut self) {
        self.resume = true;
    }

    /// Sources paused now.
    #[must_use]
    pub fn paused(&self) -> usize {
        self.paused.len()
    }

    /// Makes [`EventLoop::run`] return after the current batch.
    pub fn stop(&mut self) {
        self.stop = true;
    }
}

/// The loop. `S` is the state every source may change.
pub struct EventLoop<S> {
    epoll: Epoll,
    ready: Vec<u64>,
    /// Sources that returned [`PostAction::Again`] in the last batch.
    again: Vec<u64>,
    ctl: LoopCtl<S>,
    /// Wake-ups of the loop (returns from a sleeping `epoll_wait`), for reports.
    pub wakeups: u64,
    after_source: Option<fn(&mut S, &mut LoopCtl<S>)>,
}

impl<S> std::fmt::Debug for EventLoop<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "EventLoop({} sources, {} wakeups)",
            self.len(),
            self.wakeups
        )
    }
}

impl<S> EventLoop<S> {
    /// # Errors
    /// The kernel's error from `epoll_create1`.
    pub fn new() -> io::Result<EventLoop<S>> {
        Ok(EventLoop {
            epoll: Epoll::new()?,
            ready: Vec::new(),
            again: Vec::new(),
            ctl: LoopCtl {
                slots: Vec::new(),
                free: Vec::new(),
                inserts: Vec::new(),
                removes: Vec::new(),
                stop: false,
                paused: Vec::new(),
                resume: false,
            },
            wakeups: 0,
            after_source: None,
        })
    }

    /// Runs `f` after every source, with the same state and control: for a state that collects
    /// output while sources run and writes it once (the daemon's batched deliveries).
    pub fn set_after_source(&mut self, f: fn(&mut S, &mut LoopCtl<S>)) {
        self.after_source = Some(f);
    }

    /// Registered sources.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ctl.slots.iter().filter(|s| s.source.is_some()).count()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn place(&mut self, token: Token, source: Box<dyn Source<S>>) -> io::Result<()> {
        if let Err(e) = self.epoll.add(source.fd(), token.0) {
            self.ctl.release(token.index());
            return Err(e);
        }
        self.ctl.slots[token.index()].source = Some(source);
        Ok(())
    }

    /// Registers a source.
    ///
    /// # Errors
    /// The kernel's error from `epoll_ctl` (e.g. a closed fd).
    pub fn insert(&mut self, source: Box<dyn Source<S>>) -> io::Result<Token> {
        let token = self.ctl.reserve();
        self.place(token, source)?;
        Ok(token)
    }

    /// Unregisters a source and drops it; a stale token does nothing.
    pub fn remove(&mut self, token: Token) {
        let Some(slot) = self.ctl.slots.get_mut(token.index()) else {
            return;
        };
        if slot.generation != token.generation() {
            return;
        }
        self.ctl.paused.retain(|&t| t != token);
        let slot = &mut self.ctl.slots[token.index()];
        if let Some(source) = slot.source.take() {
            // The fd may already be closed by the source's owner; nothing to undo then.
            let _ = self.epoll.delete(source.fd());
            self.ctl.release(token.index());
        } else if let Some(i) = self.ctl.inserts.iter().position(|(t, _)| *t == token) {
            // Inserted and removed within one batch: never registered.
            drop(self.ctl.inserts.swap_remove(i));
            self.ctl.release(token.index());
        }
    }

    /// Sleeps until at least one source is ready (no timeout), then runs the ready sources;
    /// when a source asked to run again, does not sleep and runs it after the ready ones.
    /// Returns `true` when a source asked the loop to stop.
    ///
    /// # Errors
    /// The kernel's error from `epoll_wait`, or from registering a source inserted by a source.
    pub fn dispatch(&mut self, state: &mut S) -> io::Result<bool> {
        let mut ready = std::mem::take(&mut self.ready);
        let again = std::mem::take(&mut self.again);
        if again.is_empty() {
            self.epoll.wait_forever(&mut ready)?;
            self.wakeups += 1;
        } else {
            self.epoll.ready_now(&mut ready)?;
            for t in again {
                if !ready.contains(&t) {
                    ready.push(t);
                }
            }
        }
        for &raw in &ready {
            let token = Token(raw);
            let Some(slot) = self.ctl.slots.get_mut(token.index()) else {
                continue;
            };
            if slot.generation != token.generation() {
                continue;
            }
            let Some(mut source) = slot.source.take() else {
                continue;
            };
            let action = source.ready(state, &mut self.ctl);
            if let Some(after) = self.after_source {
                after(state, &mut self.ctl);
            }
            self.ctl.slots[token.index()].source = Some(source);
            match action {
                PostAction::Continue => {}
                PostAction::Remove => self.remove(token),
                PostAction::Again => self.again.push(raw),
                PostAction::Pause => {
                    if let Some(fd) = self.ctl.slots[token.index()]
                        .source
                        .as_ref()
                        .map(|s| s.fd())
                    {
                        if self.epoll.set_armed(fd, raw, false).is_ok()
                            && !self.ctl.paused.contains(&token)
                        {
                            self.ctl.paused.push(token);
                        }
                    }
                }
            }
        }
        self.ready = ready;
        for token in std::mem::take(&mut self.ctl.removes) {
            self.remove(token);
        }
        if std::mem::take(&mut self.ctl.resume) {
            for token in std::mem::take(&mut self.ctl.paused) {
                let slot = &self.ctl.slots[token.index()];
                if slot.generation != token.generation() {
                    continue;
                }
                if let Some(source) = slot.source.as_ref() {
                    // A source removed since it paused is gone from epoll with its slot.
                    let _ = self.epoll.set_armed(source.fd(), token.0, true);
                }
            }
        }
        let mut result = Ok(());
        for (token, source) in std::mem::take(&mut self.ctl.inserts) {
            if let Err(e) = self.place(token, source) {
                result = Err(e);
            }
        }
        result?;
        Ok(std::mem::take(&mut self.ctl.stop))
    }

    /// Runs until a source stops the loop.
    ///
    /// # Errors
    /// As [`EventLoop::dispatch`].
    pub fn run(&mut self, state: &mut S) -> io::Result<()> {
        while !self.dispatch(state)? {}
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::EventFd;

    /// A source on eventfd `fd` that reads its count (so it is not ready again until
    /// signalled) before calling `f`.
    fn draining<S>(
        fd: RawFd,
        mut f: impl FnMut(&mut S, &mut LoopCtl<S>) -> PostAction + 'static,
    ) -> Box<dyn Source<S>> {
        Box::new(FnSource {
            fd,
            f: move |st: &mut S, ctl: &mut LoopCtl<S>| {
                let mut buf = [0u8; 8];
                let _ = crate::sys::read(fd, &mut buf);
                f(st, ctl)
            },
        })
    }

    #[test]
    fn sources_run_when_ready_and_can_stop_and_remove_themselves() {
        let a = EventFd::new().unwrap();
        let b = EventFd::new().unwrap();
        let mut lp: EventLoop<Vec<&'static str>> = EventLoop::new().unwrap();
        lp.insert(draining(a.raw(), |log: &mut Vec<_>, _| {
            log.push("a");
            PostAction::Remove
        }))
        .unwrap();
        lp.insert(draining(b.raw(), |log: &mut Vec<_>, ctl| {
            log.push("b");
            ctl.stop();
            PostAction::Continue
        }))
        .unwrap();
        let mut log = Vec::new();
        a.signal().unwrap();
        assert!(!lp.dispatch(&mut log).unwrap());
        assert_eq!(log, ["a"]);
        assert_eq!(lp.len(), 1);
        a.signal().unwrap();
        b.signal().unwrap();
        lp.run(&mut log).unwrap();
        assert_eq!(log, ["a", "b"]);
        assert_eq!(lp.wakeups, 2);
    }

    #[test]
    fn a_source_that_asks_again_runs_again_without_new_data_and_others_keep_their_turns() {
        let a = EventFd::new().unwrap();
        let b = EventFd::new().unwrap();
        // The state: the log, and how many more turns source a wants.
        let mut lp: EventLoop<(Vec<&'static str>, u32)> = EventLoop::new().unwrap();
        lp.insert(draining(a.raw(), |st: &mut (Vec<_>, u32), _| {
            st.0.push("a");
            if st.1 > 0 {
                st.1 -= 1;
                PostAction::Again
            } else {
                PostAction::Continue
            }
        }))
        .unwrap();
        lp.insert(draining(b.raw(), |st: &mut (Vec<_>, u32), _| {
            st.0.push("b");
            PostAction::Continue
        }))
        .unwrap();
        let mut st = (Vec::new(), 2);
        a.signal().unwrap();
        lp.dispatch(&mut st).unwrap();
        assert_eq!(st.0, ["a"]);
        // a's descriptor is drained: it runs again only because it asked, and b, ready in
        // between, runs before it.
        b.signal().unwrap();
        lp.dispatch(&mut st).unwrap();
        assert_eq!(st.0, ["a", "b", "a"]);
        lp.dispatch(&mut st).unwrap();
        assert_eq!(st.0, ["a", "b", "a", "a"]);
        // Done: the next dispatch sleeps until something is ready.
        assert_eq!(lp.wakeups, 1);
        b.signal().unwrap();
        lp.dispatch(&mut st).unwrap();
        assert_eq!(st.0, ["a", "b", "a", "a", "b"]);
        assert_eq!(lp.wakeups, 2);
    }

    #[test]
    fn a_paused_source_is_not_called_until_resumed() {
        let a = EventFd::new().unwrap();
        let b = EventFd::new().unwrap();
        // The state: the log, and whether b resumes the paused sources.
        let mut lp: EventLoop<Vec<&'static str>> = EventLoop::new().unwrap();
        // a never drains its descriptor (like a listener out of descriptors): it pauses.
        lp.insert(Box::new(FnSource {
            fd: a.raw(),
            f: |log: &mut Vec<&'static str>, _: &mut LoopCtl<_>| {
                log.push("a");
                PostAction::Pause
            },
        }))
        .unwrap();
        lp.insert(draining(b.raw(), |log: &mut Vec<_>, ctl| {
            log.push("b");
            ctl.resume_paused();
            PostAction::Continue
        }))
        .unwrap();
        let mut log = Vec::new();
        a.signal().unwrap();
        lp.dispatch(&mut log).unwrap();
        assert_eq!(log, ["a"]);
        // a is still readable but paused: only b runs, and it resumes a for the next turn.
        b.signal().unwrap();
        lp.dispatch(&mut log).unwrap();
        assert_eq!(log, ["a", "b"]);
        lp.dispatch(&mut log).unwrap();
        assert_eq!(log, ["a", "b", "a"]);
    }

    #[test]
    fn a_source_may_insert_any_number_of_sources_in_one_batch() {
        const N: usize = 100;
        let trigger = EventFd::new().unwrap();
        let fds: Vec<EventFd> = (0..N).map(|_| EventFd::new().unwrap()).collect();
        let raws: Vec<i32> = fds.iter().map(EventFd::raw).collect();
        let mut lp: EventLoop<usize> = EventLoop::new().unwrap();
        lp.insert(draining(
            trigger.raw(),
            move |_, ctl: &mut LoopCtl<usize>| {
                for &fd in &raws {
                    let tok = ctl.insert(draining(fd, |n: &mut usize, _| {
                        *n += 1;
                        PostAction::Remove
                    }));
                    // Inserting and removing in the same batch leaves nothing behind.
                    let gone = ctl.insert(Box::new(FnSource {
                        fd,
                        f: |_: &mut usize, _: &mut LoopCtl<usize>| PostAction::Continue,
                    }));
                    ctl.remove(gone);
                    let _ = tok;
                }
                PostAction::Remove
            },
        ))
        .unwrap();
        let mut n = 0;
        trigger.signal().unwrap();
        lp.dispatch(&mut n).unwrap();
        assert_eq!(lp.len(), N);
        for fd in &fds {
            fd.signal().unwrap();
        }
        while n < N {
            lp.dispatch(&mut n).unwrap();
        }
        assert!(lp.is_empty());
    }
}
