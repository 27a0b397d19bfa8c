//! The kernel's process events connector: fork, exec and exit of every task on the machine,
//! pushed over a netlink socket (`NETLINK_CONNECTOR`, group `CN_IDX_PROC`).
//!
//! [`ProcConnector::open`] makes the socket, joins the group and sends `PROC_CN_MCAST_LISTEN`;
//! from then on every fork (a process or a thread), exec and exit on the machine arrives as one
//! netlink message (`struct nlmsghdr`, `struct cn_msg`, `struct proc_event`,
//! `include/uapi/linux/{netlink,connector,cn_proc}.h`). Only a task with `CAP_NET_ADMIN` may join
//! the group (`netlink_bind` refuses the multicast group of a family without
//! `NL_CFG_F_NONROOT_RECV`, and `cn_proc_mcast_ctl` checks the capability itself): without it
//! [`ConnectorError::NotPermitted`] says so.
//!
//! **Decoding** ([`decode_datagram`]) is pure and checks every length before it reads: each
//! netlink message's length against the datagram, the connector header's against the message,
//! the payload's against the event it claims to be; a message that fails gets a typed
//! [`DecodeError`] and the rest of the datagram is still read when its length can be trusted.
//!
//! **Loss.** The socket's receive buffer may overflow when the machine forks faster than the
//! reader reads: the kernel then drops events and the next `recv` fails with `ENOBUFS`. Each
//! such failure, and each `NLMSG_OVERRUN` message, is counted in
//! [`ConnectorCounters::overruns`]; a reader that needs an exact picture after a loss must
//! rescan `/proc`.
//!
//! **Which parent.** The kernel reports a fork's parent as the new task's `real_parent`: for a
//! new process that is the thread that forked it; for a new thread (`CLONE_THREAD`) it is the
//! parent *process* of the whole thread group, not the thread that created it. So a thread's
//! fork event says which process it joined (`child_tgid`) and not much else.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use rustix::io::Errno;
use rustix::net::RecvFlags;

/// `CN_IDX_PROC`, `CN_VAL_PROC` (`include/uapi/linux/connector.h`): the process events
/// connector's id, and the multicast group it sends on.
pub const CN_IDX_PROC: u32 = 1;
pub const CN_VAL_PROC: u32 = 1;
/// `PROC_CN_MCAST_LISTEN`, `PROC_CN_MCAST_IGNORE` (`enum proc_cn_mcast_op`, `cn_proc.h`).
pub const PROC_CN_MCAST_LISTEN: u32 = 1;
pub const PROC_CN_MCAST_IGNORE: u32 = 2;

/// `enum what` of `struct proc_event` (`cn_proc.h`).
const PROC_EVENT_NONE: u32 = 0x0000_0000;
const PROC_EVENT_FORK: u32 = 0x0000_0001;
const PROC_EVENT_EXEC: u32 = 0x0000_0002;
const PROC_EVENT_EXIT: u32 = 0x8000_0000;

/// Netlink control message types (`netlink.h`).
const NLMSG_NOOP: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_OVERRUN: u16 = 4;

/// `sizeof(struct nlmsghdr)`: `len: u32, type: u16, flags: u16, seq: u32, pid: u32`.
pub const NLMSG_HDR_LEN: usize = 16;
/// `sizeof(struct cn_msg)` before its data: `id {idx, val}: u32 × 2, seq, ack: u32, len, flags:
/// u16`.
pub const CN_MSG_HDR_LEN: usize = 20;
/// `struct proc_event` before its union: `what: u32, cpu: u32, timestamp_ns: u64` (the `u64`
/// lands on an 8-byte boundary without padding).
pub const PROC_EVENT_HDR_LEN: usize = 16;
/// The union's size in each event this module decodes: fork is four `pid_t`s, exec two, exit
/// four 32-bit fields (pid, tgid, exit code, exit signal; kernels since 4.x append the parent's
/// pid and tgid, not read here).
const FORK_LEN: usize = 16;
const EXEC_LEN: usize = 8;
const EXIT_LEN: usize = 16;
/// Netlink messages are aligned to 4 bytes within a datagram (`NLMSG_ALIGNTO`).
const NLMSG_ALIGNTO: usize = 4;

/// The receive buffer asked for (`SO_RCVBUF`; the kernel doubles it and caps it at
/// `net.core.rmem_max`). A fork storm of a few thousand tasks fits before `ENOBUFS`.
pub const RCVBUF_BYTES: usize = 1 << 20;
/// Bytes read per `recv`: a page holds dozens of 52-to-60-byte event messages.
pub const RECV_BYTES: usize = 8192;

/// One process event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ProcEvent {
    /// A task was created: a process (`child_pid == child_tgid`) or a thread of `child_tgid`.
    /// The parent is the new task's `real_parent` (see the module docs).
    Fork {
        parent_pid: i32,
        parent_tgid: i32,
        child_pid: i32,
        child_tgid: i32,
    },
    /// Task `pid` of process `tgid` called `execve`.
    Exec { pid: i32, tgid: i32 },
    /// Task `pid` of process `tgid` exited.
    Exit { pid: i32, tgid: i32, exit_code: u32 },
    /// The kernel's answer to a listen or ignore request (`PROC_EVENT_NONE`): `err` 0 is
    /// success.
    Ack { err: u32 },
    /// Another kind of event (uid, gid, sid, ptrace, comm, coredump, …), not decoded further.
    Other { what: u32 },
}

/// Why one netlink message could not be decoded.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("datagram ends inside a netlink header ({have} of {NLMSG_HDR_LEN} bytes)")]
    ShortHeader { have: usize },
    #[error("netlink message claims {claimed} bytes, {have} remain in the datagram")]
    BadLength { claimed: usize, have: usize },
    #[error("netlink error message (errno {errno})")]
    NetlinkError { errno: i32 },
    #[error("netlink message type {0} is not a connector message")]
    UnexpectedType(u16),
    #[error("connector message of {have} bytes is shorter than its {CN_MSG_HDR_LEN}-byte header")]
    ShortConnector { have: usize },
    #[error("connector message is for {idx}:{val}, not the process events connector")]
    NotProc { idx: u32, val: u32 },
    #[error("connector payload claims {claimed} bytes, the message holds {have}")]
    BadPayload { claimed: usize, have: usize },
    #[error("process event of {have} bytes is too short for its kind {what:#x} (needs {need})")]
    ShortEvent { what: u32, need: usize, have: usize },
}

/// One netlink message of a datagram.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Message {
    Event(ProcEvent),
    /// `NLMSG_OVERRUN`: the kernel says messages were lost.
    Overrun,
    /// `NLMSG_NOOP`, ignored.
    Noop,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Decodes one `struct proc_event` (`cn_msg` data), `b` exactly its claimed length.
fn decode_event(b: &[u8]) -> Result<ProcEvent, DecodeError> {
    let short = |what, need| DecodeError::ShortEvent {
        what,
        need,
        have: b.len(),
    };
    if b.len() < PROC_EVENT_HDR_LEN {
        return Err(short(u32::MAX, PROC_EVENT_HDR_LEN));
    }
    let what = u32_at(b, 0);
    let d = &b[PROC_EVENT_HDR_LEN..];
    let need = match what {
        PROC_EVENT_FORK => FORK_LEN,
        PROC_EVENT_EXEC => EXEC_LEN,
        PROC_EVENT_EXIT => EXIT_LEN,
        // `struct { __u32 err; }` of the ack.
        PROC_EVENT_NONE => 4,
        _ => 0,
    };
    if d.len() < need {
        return Err(short(what, PROC_EVENT_HDR_LEN + need));
    }
    Ok(match what {
        PROC_EVENT_FORK => ProcEvent::Fork {
            parent_pid: i32_at(d, 0),
            parent_tgid: i32_at(d, 4),
            child_pid: i32_at(d, 8),
            child_tgid: i32_at(d, 12),
        },
        PROC_EVENT_EXEC => ProcEvent::Exec {
            pid: i32_at(d, 0),
            tgid: i32_at(d, 4),
        },
        PROC_EVENT_EXIT => ProcEvent::Exit {
            pid: i32_at(d, 0),
            tgid: i32_at(d, 4),
            exit_code: u32_at(d, 8),
        },
        PROC_EVENT_NONE => ProcEvent::Ack { err: u32_at(d, 0) },
        _ => ProcEvent::Other { what },
    })
}

/// Decodes the body of one connector message (`nlmsg` payload, its claimed length).
fn decode_connector(b: &[u8]) -> Result<ProcEvent, DecodeError> {
    if b.len() < CN_MSG_HDR_LEN {
        return Err(DecodeError::ShortConnector { have: b.len() });
    }
    let (idx, val) = (u32_at(b, 0), u32_at(b, 4));
    if (idx, val) != (CN_IDX_PROC, CN_VAL_PROC) {
        return Err(DecodeError::NotProc { idx, val });
    }
    let claimed = usize::from(u16_at(b, 16));
    let data = &b[CN_MSG_HDR_LEN..];
    if claimed > data.len() {
        return Err(DecodeError::BadPayload {
            claimed,
            have: data.len(),
        });
    }
    decode_event(&data[..claimed])
}

/// Decodes every netlink message of one datagram, in order, calling `f` with each. A message
/// whose own length is wrong ends the datagram (nothing after it can be located); any other
/// error is that message's alone.
pub fn decode_datagram(mut b: &[u8], mut f: impl FnMut(Result<Message, DecodeError>)) {
    while !b.is_empty() {
        if b.len() < NLMSG_HDR_LEN {
            f(Err(DecodeError::ShortHeader { have: b.len() }));
            return;
        }
        let claimed = u32_at(b, 0) as usize;
        if claimed < NLMSG_HDR_LEN || claimed > b.len() {
            f(Err(DecodeError::BadLength {
                claimed,
                have: b.len(),
            }));
            return;
        }
        let body = &b[NLMSG_HDR_LEN..claimed];
        let msg = match u16_at(b, 4) {
            NLMSG_DONE => decode_connector(body).map(Message::Event),
            NLMSG_OVERRUN => Ok(Message::Overrun),
            NLMSG_NOOP => Ok(Message::Noop),
            NLMSG_ERROR => Err(DecodeError::NetlinkError {
                errno: if body.len() >= 4 { i32_at(body, 0) } else { 0 },
            }),
            t => Err(DecodeError::UnexpectedType(t)),
        };
        f(msg);
        let next = claimed.div_ceil(NLMSG_ALIGNTO) * NLMSG_ALIGNTO;
        b = b.get(next..).unwrap_or(&[]);
    }
}

/// Encodes the request `op` (`PROC_CN_MCAST_LISTEN` or `_IGNORE`) as the kernel expects it from
/// the process `port` (tests build datagrams with it too).
#[must_use]
pub fn encode_request(op: u32, port: u32) -> Vec<u8> {
    let total = NLMSG_HDR_LEN + CN_MSG_HDR_LEN + 4;
    let mut v = Vec::with_capacity(total);
    v.extend_from_slice(&(total as u32).to_ne_bytes());
    v.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
    v.extend_from_slice(&0u16.to_ne_bytes()); // flags
    v.extend_from_slice(&0u32.to_ne_bytes()); // seq
    v.extend_from_slice(&port.to_ne_bytes());
    v.extend_from_slice(&CN_IDX_PROC.to_ne_bytes());
    v.extend_from_slice(&CN_VAL_PROC.to_ne_bytes());
    v.extend_from_slice(&0u32.to_ne_bytes()); // seq
    v.extend_from_slice(&0u32.to_ne_bytes()); // ack
    v.extend_from_slice(&4u16.to_ne_bytes()); // len
    v.extend_from_slice(&0u16.to_ne_bytes()); // flags
    v.extend_from_slice(&op.to_ne_bytes());
    v
}

/// Encodes one event message as the kernel sends it (for tests and fuzzing of the decoder).
#[must_use]
pub fn encode_event(what: u32, data: &[u8]) -> Vec<u8> {
    let payload = PROC_EVENT_HDR_LEN + data.len();
    let total = NLMSG_HDR_LEN + CN_MSG_HDR_LEN + payload;
    let mut v = Vec::with_capacity(total);
    v.extend_from_slice(&(total as u32).to_ne_bytes());
    v.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
    v.extend_from_slice(&[0; 10]); // flags, seq, pid
    v.extend_from_slice(&CN_IDX_PROC.to_ne_bytes());
    v.extend_from_slice(&CN_VAL_PROC.to_ne_bytes());
    v.extend_from_slice(&[0; 8]); // seq, ack
    v.extend_from_slice(&(payload as u16).to_ne_bytes());
    v.extend_from_slice(&0u16.to_ne_bytes());
    v.extend_from_slice(&what.to_ne_bytes());
    v.extend_from_slice(&[0; 12]); // cpu, timestamp
    v.extend_from_slice(data);
    v
}

/// The `what` of a fork, exec and exit event, for [`encode_event`].
pub const WHAT_FORK: u32 = PROC_EVENT_FORK;
pub const WHAT_EXEC: u32 = PROC_EVENT_EXEC;
pub const WHAT_EXIT: u32 = PROC_EVENT_EXIT;

/// Why the connector could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ConnectorError {
    #[error(
        "the process events connector needs CAP_NET_ADMIN (run as root): joining its netlink \
         group was refused ({0})"
    )]
    NotPermitted(io::Error),
    #[error("the kernel has no process events connector (CONFIG_PROC_EVENTS): {0}")]
    Unsupported(io::Error),
    #[error("the kernel refused to listen for process events (error {0})")]
    Refused(u32),
    #[error("process events connector: {0}")]
    Io(#[from] io::Error),
}

/// What the reader saw.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct ConnectorCounters {
    pub forks: u64,
    pub execs: u64,
    pub exits: u64,
    /// Other events (uid, gid, comm, …) and acks.
    pub other: u64,
    /// Messages the decoder rejected.
    pub malformed: u64,
    /// Times the kernel said events were lost: `recv` failing with `ENOBUFS` (the socket's
    /// buffer overflowed) or an `NLMSG_OVERRUN` message.
    pub overruns: u64,
}

/// A joined process events connector socket (non-blocking).
#[derive(Debug)]
pub struct ProcConnector {
    fd: OwnedFd,
    buf: Vec<u8>,
    counters: ConnectorCounters,
}

impl ProcConnector {
    /// Opens the socket, joins the group and asks the kernel to send process events.
    ///
    /// # Errors
    /// [`ConnectorError::NotPermitted`] without `CAP_NET_ADMIN`, [`ConnectorError::Unsupported`]
    /// on a kernel without the connector, the kernel's other errors.
    pub fn open() -> Result<ProcConnector, ConnectorError> {
        use rustix::net::netlink::{SocketAddrNetlink, CONNECTOR};
        use rustix::net::{
            bind, send, socket_with, AddressFamily, SendFlags, SocketFlags, SocketType,
        };
        let refused = |e: rustix::io::Errno| {
            let e = io::Error::from(e);
            match e.raw_os_error() {
                Some(libc::EPERM | libc::EACCES) => ConnectorError::NotPermitted(e),
                _ => ConnectorError::Io(e),
            }
        };
        let fd = socket_with(
            AddressFamily::NETLINK,
            SocketType::DGRAM,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
            Some(CONNECTOR),
        )
        .map_err(|e| {
            let e = io::Error::from(e);
            match e.raw_os_error() {
                Some(libc::EPROTONOSUPPORT | libc::EAFNOSUPPORT) => ConnectorError::Unsupported(e),
                _ => ConnectorError::Io(e),
            }
        })?;
        // A refusal keeps the default buffer.
        let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&fd, RCVBUF_BYTES);
        // Port 0: the kernel assigns it.
        bind(&fd, &SocketAddrNetlink::new(0, CN_IDX_PROC)).map_err(refused)?;
        let req = encode_request(PROC_CN_MCAST_LISTEN, 0);
        send(&fd, &req, SendFlags::empty()).map_err(refused)?;
        Ok(ProcConnector {
            fd,
            buf: vec![0; RECV_BYTES],
            counters: ConnectorCounters::default(),
        })
    }

    /// The socket, for an event loop.
    #[must_use]
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    #[must_use]
    pub fn counters(&self) -> ConnectorCounters {
        self.counters
    }

    /// Reads every datagram waiting and calls `f` with each fork, exec and exit event, in the
    /// order the kernel sent them; returns when the socket is empty (`WouldBlock`).
    ///
    /// # Errors
    /// A refusal of the listen request; the kernel's error from `recv` other than `ENOBUFS`
    /// (counted as an overrun, and reading goes on) and `EAGAIN`.
    pub fn drain(&mut self, mut f: impl FnMut(ProcEvent)) -> Result<(), ConnectorError> {
        loop {
            let n = match rustix::net::recv(&self.fd, &mut self.buf[..], RecvFlags::empty()) {
                Ok((n, _)) => n,
                Err(Errno::AGAIN) => return Ok(()),
                Err(Errno::INTR) => continue,
                Err(Errno::NOBUFS) => {
                    self.counters.overruns += 1;
                    continue;
                }
                Err(e) => return Err(ConnectorError::Io(e.into())),
            };
            let mut refused = None;
            let c = &mut self.counters;
            decode_datagram(&self.buf[..n], |m| match m {
                Ok(Message::Event(ev)) => {
                    match ev {
                        ProcEvent::Fork { .. } => c.forks += 1,
                        ProcEvent::Exec { .. } => c.execs += 1,
                        ProcEvent::Exit { .. } => c.exits += 1,
                        ProcEvent::Ack { err } => {
                            c.other += 1;
                            if err != 0 {
                                refused = Some(err);
                            }
                            return;
                        }
                        ProcEvent::Other { .. } => {
                            c.other += 1;
                            return;
                        }
                    }
                    f(ev);
                }
                Ok(Message::Overrun) => c.overruns += 1,
                Ok(Message::Noop) => {}
                Err(_) => c.malformed += 1,
            });
            if let Some(err) = refused {
                return Err(ConnectorError::Refused(err));
            }
        }
    }
}

impl Drop for ProcConnector {
    fn drop(&mut self) {
        let req = encode_request(PROC_CN_MCAST_IGNORE, 0);
        // The kernel counts listeners; tell it this one stops (a failure changes nothing: the
        // socket closes next).
        let _ = rustix::net::send(&self.fd, &req, rustix::net::SendFlags::empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ints(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    fn all(b: &[u8]) -> Vec<Result<Message, DecodeError>> {
        let mut v = Vec::new();
        decode_datagram(b, |m| v.push(m));
        v
    }

    #[test]
    fn fork_exec_exit_decode() {
        let mut d = encode_event(WHAT_FORK, &ints(&[10, 10, 11, 11]));
        d.extend(encode_event(WHAT_EXEC, &ints(&[11, 11])));
        d.extend(encode_event(WHAT_EXIT, &ints(&[11, 11, 256, 17, 10, 10])));
        assert_eq!(
            all(&d),
            vec![
                Ok(Message::Event(ProcEvent::Fork {
                    parent_pid: 10,
                    parent_tgid: 10,
                    child_pid: 11,
                    child_tgid: 11
                })),
                Ok(Message::Event(ProcEvent::Exec { pid: 11, tgid: 11 })),
                Ok(Message::Event(ProcEvent::Exit {
                    pid: 11,
                    tgid: 11,
                    exit_code: 256
                })),
            ]
        );
    }

    #[test]
    fn each_malformed_message_gets_its_error() {
        // A fork with two pids instead of four.
        let short = encode_event(WHAT_FORK, &ints(&[1, 1]));
        assert_eq!(
            all(&short),
            vec![Err(DecodeError::ShortEvent {
                what: WHAT_FORK,
                need: 32,
                have: 24
            })]
        );
        // Another connector's message.
        let mut other = encode_event(WHAT_EXEC, &ints(&[1, 1]));
        other[NLMSG_HDR_LEN] = 7;
        assert_eq!(
            all(&other),
            vec![Err(DecodeError::NotProc { idx: 7, val: 1 })]
        );
        // A netlink length past the datagram's end.
        let mut long = encode_event(WHAT_EXEC, &ints(&[1, 1]));
        long[0] = 200;
        assert!(matches!(
            all(&long)[..],
            [Err(DecodeError::BadLength { .. })]
        ));
        // A payload length past the message.
        let mut pay = encode_event(WHAT_EXEC, &ints(&[1, 1]));
        pay[NLMSG_HDR_LEN + 16] = 99;
        assert!(matches!(
            all(&pay)[..],
            [Err(DecodeError::BadPayload { .. })]
        ));
        // A tail too short for a header.
        assert_eq!(
            all(&[0; 5]),
            vec![Err(DecodeError::ShortHeader { have: 5 })]
        );
        // An ack, an overrun, an unknown kind.
        let ack = encode_event(PROC_EVENT_NONE, &0u32.to_ne_bytes());
        assert_eq!(
            all(&ack),
            vec![Ok(Message::Event(ProcEvent::Ack { err: 0 }))]
        );
        let mut over = encode_request(0, 0);
        over[4..6].copy_from_slice(&NLMSG_OVERRUN.to_ne_bytes());
        assert_eq!(all(&over), vec![Ok(Message::Overrun)]);
        let comm = encode_event(0x200, &[0; 24]);
        assert_eq!(
            all(&comm),
            vec![Ok(Message::Event(ProcEvent::Other { what: 0x200 }))]
        );
    }

    #[test]
    fn a_bad_message_in_the_middle_keeps_the_next() {
        let mut d = encode_event(WHAT_FORK, &ints(&[1, 1]));
        d.extend(encode_event(WHAT_EXEC, &ints(&[5, 5])));
        let v = all(&d);
        assert_eq!(v.len(), 2);
        assert_eq!(
            v[1],
            Ok(Message::Event(ProcEvent::Exec { pid: 5, tgid: 5 }))
        );
    }

    proptest! {
        /// Arbitrary bytes never panic, and every byte is accounted for: the decoder stops at
        /// the first message whose length it cannot trust and reports at most one result per
        /// 16 bytes.
        #[test]
        fn arbitrary_bytes_decode_without_panic(b in proptest::collection::vec(any::<u8>(), 0..512)) {
            let v = all(&b);
            prop_assert!(v.len() <= b.len() / NLMSG_HDR_LEN + 1);
        }

        /// Valid events survive any mutation of a single byte: a result for each, or an error
        /// that ends the datagram.
        #[test]
        fn mutated_events_decode_or_fail_typed(
            pids in proptest::array::uniform4(1i32..1_000_000),
            at in 0usize..52,
            byte in any::<u8>(),
        ) {
            let mut d = encode_event(WHAT_FORK, &ints(&pids));
            d[at] = byte;
            let v = all(&d);
            prop_assert!(!v.is_empty());
            if at >= NLMSG_HDR_LEN + CN_MSG_HDR_LEN + PROC_EVENT_HDR_LEN {
                let fork = matches!(v[0], Ok(Message::Event(ProcEvent::Fork { .. })));
                prop_assert!(fork, "{:?}", v);
            }
        }
    }
}
