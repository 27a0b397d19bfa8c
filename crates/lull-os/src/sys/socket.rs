use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::io::Errno;
use rustix::net::{
    self, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketAddrUnix, SocketFlags,
};

use super::fd::set_nonblocking;
use super::{borrowed, cvt, cvt_size};

/// A connected pair of `SOCK_SEQPACKET` Unix sockets (message boundaries kept, EOF on close).
///
/// # Errors
/// The kernel's error from `socketpair`.
pub fn seqpacket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    unix_pair(net::SocketType::SEQPACKET)
}

/// A connected pair of `SOCK_STREAM` Unix sockets: a display server's private channel.
///
/// # Errors
/// The kernel's error from `socketpair`.
pub fn stream_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    unix_pair(net::SocketType::STREAM)
}

fn unix_pair(ty: net::SocketType) -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(net::socketpair(
        AddressFamily::UNIX,
        ty,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

/// Bytes of `sun_path`, the file path field of a Unix socket address.
const SUN_PATH_LEN: usize =
    std::mem::size_of::<libc::sockaddr_un>() - std::mem::offset_of!(libc::sockaddr_un, sun_path);

fn sockaddr_un(path: &Path) -> io::Result<SocketAddrUnix> {
    let bytes = path.as_os_str().as_bytes();
    // Checked here, not left to rustix, so that the NUL always fits and the error names the path.
    if bytes.is_empty() || bytes.len() >= SUN_PATH_LEN || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "socket path {} must be 1..{} bytes without NUL",
                path.display(),
                SUN_PATH_LEN - 1
            ),
        ));
    }
    Ok(SocketAddrUnix::new(path)?)
}

fn unix_socket(ty: net::SocketType) -> io::Result<OwnedFd> {
    Ok(net::socket_with(
        AddressFamily::UNIX,
        ty,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

/// A listening `SOCK_SEQPACKET` socket bound at `path` (non-blocking accept).
///
/// # Errors
/// The kernel's error from `socket`, `bind` or `listen`, or a path too long for `sun_path`.
pub fn seqpacket_listen(path: &Path) -> io::Result<OwnedFd> {
    unix_listen(path, net::SocketType::SEQPACKET)
}

/// A listening `SOCK_STREAM` Unix socket bound at `path` (non-blocking accept): the display
/// server's control socket, whose messages carry their own length.
///
/// # Errors
/// As [`seqpacket_listen`].
pub fn stream_listen(path: &Path) -> io::Result<OwnedFd> {
    unix_listen(path, net::SocketType::STREAM)
}

/// Connects a blocking `SOCK_STREAM` Unix socket to `path`.
///
/// # Errors
/// The kernel's error from `socket` or `connect`.
pub fn stream_connect(path: &Path) -> io::Result<OwnedFd> {
    unix_connect(path, net::SocketType::STREAM)
}

fn unix_listen(path: &Path, ty: net::SocketType) -> io::Result<OwnedFd> {
    let fd = unix_socket(ty)?;
    net::bind(&fd, &sockaddr_un(path)?)?;
    // Backlog: connections not yet accepted; the loop accepts as soon as one arrives.
    const BACKLOG: i32 = 64;
    net::listen(&fd, BACKLOG)?;
    set_nonblocking(fd.as_raw_fd(), true)?;
    Ok(fd)
}

/// Connects a blocking `SOCK_SEQPACKET` socket to `path`.
///
/// # Errors
/// The kernel's error from `socket` or `connect`.
pub fn seqpacket_connect(path: &Path) -> io::Result<OwnedFd> {
    unix_connect(path, net::SocketType::SEQPACKET)
}

/// As [`seqpacket_connect`], with `SO_SNDTIMEO`/`SO_RCVTIMEO` of `timeout_ms` set first: the
/// `connect` (a full backlog) and later blocking calls fail with `WouldBlock` after that long,
/// until [`set_socket_timeouts`] changes them.
///
/// # Errors
/// The kernel's error from `socket`, `setsockopt` or `connect`.
pub fn seqpacket_connect_timeout(path: &Path, timeout_ms: u64) -> io::Result<OwnedFd> {
    unix_connect_timeout(path, net::SocketType::SEQPACKET, timeout_ms)
}

/// As [`stream_connect`], with timeouts as [`seqpacket_connect_timeout`].
///
/// # Errors
/// The kernel's error from `socket`, `setsockopt` or `connect`.
pub fn stream_connect_timeout(path: &Path, timeout_ms: u64) -> io::Result<OwnedFd> {
    unix_connect_timeout(path, net::SocketType::STREAM, timeout_ms)
}

fn unix_connect(path: &Path, ty: net::SocketType) -> io::Result<OwnedFd> {
    unix_connect_timeout(path, ty, 0)
}

fn unix_connect_timeout(path: &Path, ty: net::SocketType, timeout_ms: u64) -> io::Result<OwnedFd> {
    let fd = unix_socket(ty)?;
    if timeout_ms > 0 {
        set_socket_timeouts(fd.as_raw_fd(), timeout_ms)?;
    }
    let addr = sockaddr_un(path)?;
    loop {
        match net::connect(&fd, &addr) {
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(()) => return Ok(fd),
        }
    }
}

/// Accepts one pending connection, non-blocking; `None` when there is none.
///
/// # Errors
/// The kernel's error from `accept4`, except `EAGAIN`.
pub fn accept(listener: BorrowedFd<'_>) -> io::Result<Option<OwnedFd>> {
    loop {
        match net::accept_with(listener, SocketFlags::CLOEXEC | SocketFlags::NONBLOCK) {
            Err(Errno::INTR) => continue,
            Err(Errno::AGAIN) => return Ok(None),
            Err(e) => return Err(e.into()),
            Ok(fd) => return Ok(Some(fd)),
        }
    }
}

/// Sends one message (`MSG_NOSIGNAL`: a closed peer is an `EPIPE` error, not a signal).
/// Returns `WouldBlock` on a full non-blocking socket.
///
/// # Errors
/// The kernel's error from `send`.
pub fn send_msg(fd: RawFd, msg: &[u8]) -> io::Result<()> {
    let fd = borrowed(&fd)?;
    loop {
        match net::send(fd, msg, SendFlags::NOSIGNAL) {
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(_) => return Ok(()),
        }
    }
}

/// Receives one message into `buf`; returns its length (0 = the peer closed). A message longer
/// than `buf` is reported with `truncated = true` (`MSG_TRUNC`).
///
/// # Errors
/// The kernel's error from `recv`, including `WouldBlock` on a non-blocking socket.
pub fn recv_msg(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, bool)> {
    let fd = borrowed(&fd)?;
    loop {
        // MSG_TRUNC makes the kernel return the real length of a longer message, so truncation
        // is detected rather than silently accepted.
        match net::recv(fd, &mut *buf, RecvFlags::TRUNC) {
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
            Ok((kept, n)) => return Ok((kept, n > kept)),
        }
    }
}

/// Most descriptors one message carries (`ATTACHED` passes two).
pub const MAX_PASSED_FDS: usize = 4;

/// Sends `bytes` with `fds` attached as `SCM_RIGHTS` (`MSG_NOSIGNAL | MSG_DONTWAIT`). Returns the
/// bytes sent, which on a stream socket may be fewer than asked.
///
/// # Errors
/// The kernel's error from `sendmsg`, `WouldBlock` on a full socket; `InvalidInput` for more
/// than [`MAX_PASSED_FDS`] descriptors.
pub fn send_with_fds(fd: RawFd, bytes: &[u8], fds: &[RawFd]) -> io::Result<usize> {
    if fds.len() > MAX_PASSED_FDS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "too many descriptors for one message",
        ));
    }
    let fds = fds.iter().map(borrowed).collect::<io::Result<Vec<_>>>()?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_PASSED_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "descriptors do not fit one message",
        ));
    }
    let fd = borrowed(&fd)?;
    let iov = [IoSlice::new(bytes)];
    loop {
        match net::sendmsg(
            fd,
            &iov,
            &mut control,
            SendFlags::NOSIGNAL | SendFlags::DONTWAIT,
        ) {
            Err(Errno::INTR) => continue,
            other => return Ok(other?),
        }
    }
}

/// Control-message room for exactly [`MAX_PASSED_FDS`] descriptors (`CMSG_SPACE` of their
/// ints, aligned for `cmsghdr`), so the kernel truncates one more (`MSG_CTRUNC`).
#[repr(C, align(8))]
struct FdsControl(
    [MaybeUninit<u8>;
        std::mem::size_of::<libc::cmsghdr>()
            + (MAX_PASSED_FDS * std::mem::size_of::<RawFd>())
                .next_multiple_of(std::mem::align_of::<libc::cmsghdr>())],
);

/// Receives into `buf` and collects any `SCM_RIGHTS` descriptors that came with the bytes
/// (`MSG_CMSG_CLOEXEC`). Returns `(bytes, fds)`; 0 bytes with no fds means the peer closed.
/// Descriptors beyond [`MAX_PASSED_FDS`] are closed by the kernel (`MSG_CTRUNC`) and reported
/// as an error, so a hostile peer cannot make the reader leak them.
///
/// # Errors
/// The kernel's error from `recvmsg`, including `WouldBlock` on a non-blocking socket.
pub fn recv_with_fds(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let fd = borrowed(&fd)?;
    let mut space = FdsControl([MaybeUninit::uninit(); std::mem::size_of::<FdsControl>()]);
    let mut control = RecvAncillaryBuffer::new(&mut space.0);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = loop {
        match net::recvmsg(fd, &mut iov, &mut control, RecvFlags::CMSG_CLOEXEC) {
            Err(Errno::INTR) => continue,
            other => break other?,
        }
    };
    let mut fds = Vec::new();
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmRights(passed) = m {
            fds.extend(passed);
        }
    }
    if msg.flags.contains(ReturnFlags::CTRUNC) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "peer passed more descriptors than a message may carry",
        ));
    }
    Ok((msg.bytes, fds))
}

/// Sets `SO_SNDTIMEO` and `SO_RCVTIMEO` of a blocking socket: a `connect` to a full backlog, a
/// `send` and a `recv` then fail with `WouldBlock` after `timeout_ms` (0: wait forever again).
///
/// # Errors
/// The kernel's error from `setsockopt`.
pub fn set_socket_timeouts(fd: RawFd, timeout_ms: u64) -> io::Result<()> {
    use rustix::net::sockopt::{set_socket_timeout, Timeout};
    let fd = borrowed(&fd)?;
    let timeout = (timeout_ms > 0).then(|| std::time::Duration::from_millis(timeout_ms));
    for which in [Timeout::Send, Timeout::Recv] {
        set_socket_timeout(fd, which, timeout)?;
    }
    Ok(())
}

/// Whether `fd` is a datagram socket (`SO_TYPE` is `SOCK_DGRAM`); `false` for anything else,
/// a pipe or a file included.
#[must_use]
pub fn is_datagram_socket(fd: RawFd) -> bool {
    borrowed(&fd)
        .ok()
        .and_then(|fd| net::sockopt::socket_type(fd).ok())
        == Some(net::SocketType::DGRAM)
}

/// Turns on `SO_RXQ_OVFL`: every datagram then carries the socket's count of datagrams the
/// kernel dropped (receive buffer full) so far, read by [`recv_counting_drops`]. Hand-written:
/// `rustix` has no `SO_RXQ_OVFL`.
///
/// # Errors
/// The kernel's error from `setsockopt`.
pub fn enable_drop_count(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: `on` is a valid int of the size given.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RXQ_OVFL,
            (&raw const on).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Receives one datagram into `buf` (truncated to its length); returns its length and the
/// socket's cumulative kernel drop count when `SO_RXQ_OVFL` is on and the kernel attached it.
/// Hand-written: `rustix`'s `recvmsg` skips control messages other than descriptors and
/// credentials.
///
/// # Errors
/// The kernel's error from `recvmsg`, including `WouldBlock` on a non-blocking socket.
pub fn recv_counting_drops(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u32>)> {
    let mut drops = None;
    let (n, _) = recvmsg_with_control(fd, buf, 0, |c| {
        // SAFETY: `c` is a control message the kernel wrote within the message's control
        // length; an SO_RXQ_OVFL one carries one u32.
        unsafe {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_RXQ_OVFL {
                drops = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<u32>()));
            }
        }
    })?;
    Ok((n, drops))
}

/// One `recvmsg` into `buf` with room for control messages (retried on `EINTR`); `each` sees
/// every control message the kernel attached. Returns the bytes received and the message's
/// flags (`MSG_CTRUNC` when control messages did not fit).
fn recvmsg_with_control(
    fd: RawFd,
    buf: &mut [u8],
    flags: libc::c_int,
    mut each: impl FnMut(*const libc::cmsghdr),
) -> io::Result<(usize, libc::c_int)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 8];
    // SAFETY: msghdr is plain data; zeroed is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cbuf);
    let n = loop {
        // SAFETY: `msg` points at live buffers for the call.
        let r = unsafe { libc::recvmsg(fd, &raw mut msg, flags) };
        match cvt_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => break other?,
        }
    };
    // SAFETY: the kernel filled msg_control with `msg_controllen` bytes of control messages;
    // CMSG_FIRSTHDR/NXTHDR walk them within that length.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&raw const msg);
        while !c.is_null() {
            each(c);
            c = libc::CMSG_NXTHDR(&raw const msg, c);
        }
    }
    Ok((n, msg.msg_flags))
}

/// `SO_MEMINFO` (`include/uapi/asm-generic/socket.h`; the same on x86 and arm64), which the
/// libc crate does not name.
const SO_MEMINFO: libc::c_int = 55;
/// Entries of the `SO_MEMINFO` array (`SK_MEMINFO_VARS`, `include/uapi/linux/sock_diag.h`).
const SK_MEMINFO_VARS: usize = 9;

/// The socket's cumulative count of datagrams the kernel dropped (receive buffer full), read
/// with `SO_MEMINFO`: the same counter `SO_RXQ_OVFL` attaches to each datagram, but readable
/// when no datagram follows the drops. Hand-written: `rustix` has no `SO_MEMINFO`.
///
/// # Errors
/// The kernel's error from `getsockopt`.
pub fn socket_drop_count(fd: RawFd) -> io::Result<u32> {
    let mut info = [0u32; SK_MEMINFO_VARS];
    let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
    // SAFETY: `info` is writable for `len` bytes; the kernel writes at most that.
    cvt(unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_MEMINFO,
            info.as_mut_ptr().cast(),
            &raw mut len,
        )
    })?;
    let at = usize::try_from(libc::SK_MEMINFO_DROPS).unwrap_or(usize::MAX);
    if (len as usize) < (at + 1) * std::mem::size_of::<u32>() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "SO_MEMINFO returned no drop count",
        ));
    }
    Ok(info[at])
}

/// `shutdown(fd, SHUT_RDWR)`: ends reads blocked on the socket and tells the peer; errors (a
/// socket already shut) are of no interest.
pub fn shutdown(fd: RawFd) {
    if let Ok(fd) = borrowed(&fd) {
        let _ = net::shutdown(fd, net::Shutdown::Both);
    }
}

/// The credentials of a Unix socket's peer as the kernel recorded them at `connect`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
pub struct PeerCred {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}

/// `SO_PEERCRED`. Hand-written: `rustix`'s `UCred` holds a non-zero `Pid`, and the kernel
/// reports pid 0 for a peer outside this process's pid namespace.
///
/// # Errors
/// The kernel's error from `getsockopt`.
pub fn peer_cred(fd: RawFd) -> io::Result<PeerCred> {
    // SAFETY: ucred is plain data.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid out-pointers of the size given.
    cvt(unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &raw mut len,
        )
    })?;
    Ok(PeerCred {
        pid: cred.pid,
        uid: cred.uid,
        gid: cred.gid,
    })
}

/// Runtime directory for the daemon's socket: `$XDG_RUNTIME_DIR/lull` when set, else `/run/lull`.
#[must_use]
pub fn default_socket_path() -> std::path::PathBuf {
    let dir = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(
            || std::path::PathBuf::from("/run"),
            std::path::PathBuf::from,
        );
    dir.join("lull").join("esm.sock")
}

/// The display server's control socket: `kds.sock` beside [`default_socket_path`].
#[must_use]
pub fn default_kds_socket_path() -> std::path::PathBuf {
    default_socket_path().with_file_name("kds.sock")
}

/// `AF_UNIX`, the address family [`socket_family`] reports for a Unix socket.
pub const AF_UNIX: i32 = libc::AF_UNIX;

/// A socket's type (`SO_TYPE`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SocketType {
    SeqPacket,
    Stream,
    Datagram,
    /// A type not listed here, by its number.
    Other(u32),
}

impl SocketType {
    /// The kernel's name of the type (`SOCK_SEQPACKET`, …; `type-N` for others).
    #[must_use]
    pub fn name(self) -> String {
        match self {
            SocketType::SeqPacket => "SOCK_SEQPACKET".into(),
            SocketType::Stream => "SOCK_STREAM".into(),
            SocketType::Datagram => "SOCK_DGRAM".into(),
            SocketType::Other(n) => format!("type-{n}"),
        }
    }
}

/// The address family of socket `fd` (`SO_DOMAIN`); `ENOTSOCK` when `fd` is no socket.
///
/// # Errors
/// The kernel's error from `getsockopt`.
pub fn socket_family(fd: BorrowedFd<'_>) -> io::Result<i32> {
    Ok(i32::from(rustix::net::sockopt::socket_domain(fd)?.as_raw()))
}

/// The type of socket `fd` (`SO_TYPE`).
///
/// # Errors
/// The kernel's error from `getsockopt`.
pub fn socket_type(fd: BorrowedFd<'_>) -> io::Result<SocketType> {
    let t = rustix::net::sockopt::socket_type(fd)?;
    Ok(match t {
        rustix::net::SocketType::SEQPACKET => SocketType::SeqPacket,
        rustix::net::SocketType::STREAM => SocketType::Stream,
        rustix::net::SocketType::DGRAM => SocketType::Datagram,
        other => SocketType::Other(other.as_raw()),
    })
}

/// Whether socket `fd` is listening (`SO_ACCEPTCONN`).
///
/// # Errors
/// The kernel's error from `getsockopt`.
pub fn socket_listening(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(rustix::net::sockopt::socket_acceptconn(fd)?)
}

/// The file path Unix socket `fd` is bound to; `None` for an unnamed or abstract socket.
///
/// # Errors
/// The kernel's error from `getsockname`; `EAFNOSUPPORT` when `fd` is no Unix socket.
pub fn bound_unix_path(fd: BorrowedFd<'_>) -> io::Result<Option<std::path::PathBuf>> {
    let addr = SocketAddrUnix::try_from(net::getsockname(fd)?)?;
    // An abstract name or an unnamed socket has no path bytes; the kernel ends a path at its
    // first NUL.
    Ok(addr.path_bytes().map(|bytes| {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        std::path::PathBuf::from(std::ffi::OsStr::from_bytes(&bytes[..end]))
    }))
}

/// A socket's buffer size, for [`set_socket_buffer`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SocketBuffer {
    /// `SO_RCVBUF`: the receive buffer (the kernel doubles the value and applies its minimum).
    Receive,
    /// `SO_SNDBUFFORCE`: the send buffer past `wmem_max` (needs `CAP_NET_ADMIN`).
    SendForce,
}

/// Sets socket `fd`'s `buffer` to `bytes`. Hand-written: `rustix` has no `SO_SNDBUFFORCE`.
///
/// # Errors
/// The kernel's error from `setsockopt` (`EPERM` for `SendForce` without the capability).
pub fn set_socket_buffer(fd: RawFd, buffer: SocketBuffer, bytes: i32) -> io::Result<()> {
    let name = match buffer {
        SocketBuffer::Receive => libc::SO_RCVBUF,
        SocketBuffer::SendForce => libc::SO_SNDBUFFORCE,
    };
    // SAFETY: an int option read from a valid pointer with its size.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            name,
            (&raw const bytes).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use crate::sys::*;
    use std::os::fd::{AsFd, AsRawFd, OwnedFd};

    #[test]
    fn descriptors_pass_with_their_bytes_and_arrive_close_on_exec() {
        let (a, b) = seqpacket_pair().unwrap();
        let (r, w) = pipe(false).unwrap();
        let sent = send_with_fds(a.as_raw_fd(), b"two", &[r.as_raw_fd(), w.as_raw_fd()]).unwrap();
        assert_eq!(sent, 3);
        let mut buf = [0u8; 16];
        let (n, fds) = recv_with_fds(b.as_raw_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..n], b"two");
        assert_eq!(fds.len(), 2);
        assert!(fds.iter().all(|fd| is_cloexec(fd.as_fd()).unwrap()));
        // The passed write end feeds the original read end.
        write_all_once(fds[1].as_raw_fd(), b"x").unwrap();
        assert_eq!(read(r.as_raw_fd(), &mut buf).unwrap(), 1);
        let five = [r.as_raw_fd(); MAX_PASSED_FDS + 1];
        assert_eq!(
            send_with_fds(a.as_raw_fd(), b"x", &five)
                .unwrap_err()
                .kind(),
            std::io::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn a_message_with_one_descriptor_too_many_is_refused() {
        use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
        use std::mem::MaybeUninit;
        let (a, b) = seqpacket_pair().unwrap();
        let (r, _w) = pipe(false).unwrap();
        let send = |count: usize| {
            let fds = vec![r.as_fd(); count];
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(8))];
            let mut control = SendAncillaryBuffer::new(&mut space);
            assert!(control.push(SendAncillaryMessage::ScmRights(&fds)));
            let iov = [std::io::IoSlice::new(b"m")];
            sendmsg(&a, &iov, &mut control, SendFlags::empty()).unwrap();
        };
        let mut buf = [0u8; 4];
        send(MAX_PASSED_FDS);
        let (n, fds) = recv_with_fds(b.as_raw_fd(), &mut buf).unwrap();
        assert_eq!((n, fds.len()), (1, MAX_PASSED_FDS));
        send(MAX_PASSED_FDS + 1);
        let err = recv_with_fds(b.as_raw_fd(), &mut buf).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    }

    #[test]
    fn a_long_message_is_reported_truncated() {
        let (a, b) = seqpacket_pair().unwrap();
        send_msg(a.as_raw_fd(), b"0123456789").unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(recv_msg(b.as_raw_fd(), &mut buf).unwrap(), (4, true));
        assert_eq!(&buf, b"0123");
        send_msg(a.as_raw_fd(), b"ab").unwrap();
        assert_eq!(recv_msg(b.as_raw_fd(), &mut buf).unwrap(), (2, false));
        drop(a);
        assert_eq!(recv_msg(b.as_raw_fd(), &mut buf).unwrap(), (0, false));
        assert_eq!(
            send_msg(-1, b"x").err().map(Errno::from),
            Some(Errno(libc::EBADF))
        );
    }

    #[test]
    fn timeouts_are_set_and_cleared() {
        use rustix::net::sockopt::{socket_timeout, Timeout};
        let (a, _b) = seqpacket_pair().unwrap();
        set_socket_timeouts(a.as_raw_fd(), 1500).unwrap();
        for which in [Timeout::Send, Timeout::Recv] {
            let t = socket_timeout(&a, which).unwrap();
            assert_eq!(t, Some(std::time::Duration::from_millis(1500)));
        }
        set_socket_timeouts(a.as_raw_fd(), 0).unwrap();
        assert_eq!(socket_timeout(&a, Timeout::Recv).unwrap(), None);
    }

    #[test]
    fn a_listener_reports_its_path_accepts_and_a_pair_has_none() {
        // A fresh private directory (never one that exists already), removed even when an
        // assertion fails. Not `fileout::ScratchDir`: `fileout` imports this module's parent.
        struct Removed(std::path::PathBuf);
        impl Drop for Removed {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let scratch = Removed(std::env::temp_dir().join(format!(
            "lull-os-socket-{}-{}",
            std::process::id(),
            crate::sys::monotonic_ns()
        )));
        std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
            .create(&scratch.0)
            .unwrap();
        let dir = scratch.0.as_path();
        let path = dir.join("l.sock");
        let listener = seqpacket_listen(&path).unwrap();
        assert_eq!(
            bound_unix_path(listener.as_fd()).unwrap(),
            Some(path.clone())
        );
        assert!(socket_listening(listener.as_fd()).unwrap());
        assert!(
            accept(listener.as_fd()).unwrap().is_none(),
            "nobody connected yet"
        );
        let client = seqpacket_connect_timeout(&path, 1000).unwrap();
        let served: OwnedFd = accept(listener.as_fd()).unwrap().unwrap();
        assert!(is_cloexec(served.as_fd()).unwrap());
        send_msg(client.as_raw_fd(), b"hi").unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(recv_msg(served.as_raw_fd(), &mut buf).unwrap(), (2, false));
        let cred = peer_cred(served.as_raw_fd()).unwrap();
        assert_eq!(cred.pid, std::process::id() as i32);
        let (a, _b) = stream_pair().unwrap();
        assert_eq!(bound_unix_path(a.as_fd()).unwrap(), None);
        assert!(!is_datagram_socket(a.as_raw_fd()));
        assert!(seqpacket_listen(&dir.join("x".repeat(200))).is_err());
    }
}
