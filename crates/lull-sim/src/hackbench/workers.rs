//! Hackbench's workers as simulated threads (rt-tests `hackbench.c`, process mode): in each
//! group, `fds` receivers each read `fds × loops` messages from their own channel, and `fds`
//! senders each write `loops` rounds of one message to every receiver of the group. Every worker
//! is its own process. A write to a full channel and a read from an empty one sleep until the
//! other side wakes them; each wakeup costs the waker the platform's wakeup cycles.

use crate::kernel::{Action, Cx, Kernel, Userspace};
use crate::pm::IdleForcing;

use super::channel::{Channel, Transport};
use crate::drive::Workload;

/// ESTIMATE: CPU work of one 100-byte `write` to a pipe (system call entry and exit, the pipe's
/// mutex, the copy into the page, the wakeup check): about 2.5 µs on a 1.2 GHz Cortex-A9, the
/// order of lmbench's pipe figures on ARMv7 boards of the time.
pub const PIPE_WRITE_CYCLES: u64 = 3000;
/// ESTIMATE: one 100-byte `read` from a pipe, the same path in the other direction.
pub const PIPE_READ_CYCLES: u64 = 3000;
/// ESTIMATE: one 100-byte `write` to a Unix stream socket: the pipe's path plus allocating,
/// filling and queueing an `sk_buff` (`unix_stream_sendmsg`).
pub const SOCKET_WRITE_CYCLES: u64 = 4500;
/// ESTIMATE: one 100-byte `read` from a Unix stream socket: dequeue, copy, free the `sk_buff`,
/// give its charge back (`unix_stream_recvmsg`, `sock_wfree`).
pub const SOCKET_READ_CYCLES: u64 = 4500;
/// ESTIMATE: a worker's cache footprint (its stack, the 100-byte buffer, the pipe page or socket
/// buffers it touches): a few KiB, refilled when it follows another process on a core.
pub const WORKER_HOT_KIB: u64 = 8;

/// Per-message CPU work of a transport.
fn costs(t: Transport) -> (u64, u64) {
    match t {
        Transport::Pipe => (PIPE_WRITE_CYCLES, PIPE_READ_CYCLES),
        Transport::Socket => (SOCKET_WRITE_CYCLES, SOCKET_READ_CYCLES),
    }
}

/// What a worker is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    /// Sends to every channel of its group; `sent` messages so far.
    Sender { group: u32, sent: u64 },
    /// Reads its channel; `got` messages so far.
    Receiver { channel: usize, got: u64 },
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Worker {
    role: Role,
    done: bool,
}

/// The workers of one hackbench run.
#[derive(Debug)]
pub(crate) struct Hackbench {
    workers: Vec<Worker>,
    channels: Vec<Channel>,
    /// The receiver thread of each channel.
    readers: Vec<usize>,
    fds: u32,
    loops: u64,
    write_cycles: u64,
    read_cycles: u64,
    wakeup_cycles: u64,
    done: usize,
    /// Messages read over the run (every message sent must arrive).
    pub delivered: u64,
}

impl Hackbench {
    /// Creates `groups` groups of `fds` receivers and `fds` senders in `k`, in hackbench's
    /// order (a group's receivers, then its senders).
    pub fn new(
        k: &mut Kernel<'_>,
        transport: Transport,
        groups: u32,
        fds: u32,
        loops: u64,
        datasize: u32,
    ) -> Hackbench {
        let mut workers = Vec::new();
        let mut channels = Vec::new();
        let mut readers = Vec::new();
        let mut proc_id = 1;
        let mut add = |k: &mut Kernel<'_>, name: &'static str, role| {
            let tid = k.add_task(name, proc_id, 0, WORKER_HOT_KIB);
            debug_assert_eq!(tid, workers.len(), "thread ids are the kernel's");
            proc_id += 1;
            workers.push(Worker { role, done: false });
            tid
        };
        for g in 0..groups {
            for _ in 0..fds {
                let channel = channels.len();
                channels.push(Channel::new(transport, datasize));
                readers.push(add(k, "receiver", Role::Receiver { channel, got: 0 }));
            }
            for _ in 0..fds {
                add(k, "sender", Role::Sender { group: g, sent: 0 });
            }
        }
        let (write_cycles, read_cycles) = costs(transport);
        Hackbench {
            workers,
            channels,
            readers,
            fds,
            loops,
            write_cycles,
            read_cycles,
            wakeup_cycles: k.wakeup_cycles(),
            done: 0,
            delivered: 0,
        }
    }

    /// Messages each receiver reads: `fds × loops`.
    fn per_receiver(&self) -> u64 {
        u64::from(self.fds) * self.loops
    }

    /// Thread `t`'s next step at this instant, and the threads it wakes.
    fn step(&mut self, t: usize, wake: &mut Vec<usize>) -> Action {
        let per_receiver = self.per_receiver();
        let fds = self.fds as usize;
        let w = &mut self.workers[t];
        if w.done {
            return Action::Block;
        }
        match &mut w.role {
            Role::Sender { group, sent } => {
                if *sent == per_receiver {
                    w.done = true;
                    self.done += 1;
                    return Action::Block;
                }
                // Loop i outer, receiver j inner: message `sent` goes to receiver sent % fds.
                let ci = *group as usize * fds + (*sent as usize % fds);
                let ch = &mut self.channels[ci];
                if !ch.can_write() {
                    ch.writers_waiting.push(t);
                    return Action::Block;
                }
                ch.push();
                *sent += 1;
                let mut cycles = self.write_cycles;
                if std::mem::take(&mut ch.reader_waiting) {
                    wake.push(self.readers[ci]);
                    cycles += self.wakeup_cycles;
                }
                Action::Compute(cycles)
            }
            Role::Receiver { channel, got } => {
                if *got == per_receiver {
                    w.done = true;
                    self.done += 1;
                    return Action::Block;
                }
                let ch = &mut self.channels[*channel];
                if ch.queued == 0 {
                    ch.reader_waiting = true;
                    return Action::Block;
                }
                let room = ch.pop();
                *got += 1;
                self.delivered += 1;
                let mut cycles = self.read_cycles;
                if room && !ch.writers_waiting.is_empty() {
                    // Non-exclusive waiters: every blocked writer wakes and retries.
                    cycles += self.wakeup_cycles * ch.writers_waiting.len() as u64;
                    wake.append(&mut ch.writers_waiting);
                }
                Action::Compute(cycles)
            }
        }
    }
}

impl Userspace for Hackbench {
    fn next_action(&mut self, t: usize, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) -> Action {
        let mut wake = Vec::new();
        let a = self.step(t, &mut wake);
        for w in wake {
            k.wake(w, &*self, cx);
        }
        a
    }
}

impl IdleForcing for Hackbench {}

impl Workload for Hackbench {
    /// Every worker is released at once (hackbench's "GO" on the wake pipe they all poll).
    fn start(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        k.wake_each(0..self.workers.len(), &*self, cx);
    }

    fn finished(&self) -> bool {
        self.done == self.workers.len()
    }
}
