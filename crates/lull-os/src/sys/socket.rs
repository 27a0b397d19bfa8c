use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::fd::set_nonblocking;
use super::{cvt, cvt_size};

/// A connected pair of `SOCK_SEQPACKET` Unix sockets (message boundaries kept, EOF on close).
///
/// # Errors
/// The kernel's error from `socketpair`.
pub fn seqpacket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    unix_pair(libc::SOCK_SEQPACKET)
}

/// A connected pair of `SOCK_STREAM` Unix sockets: a display server's private channel.
///
/// # Errors
/// The kernel's error from `socketpair`.
pub fn stream_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    unix_pair(libc::SOCK_STREAM)
}

fn unix_pair(ty: libc::c_int) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for two descriptors.
    cvt(unsafe { libc::socketpair(libc::AF_UNIX, ty | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) })?;
    // SAFETY: both fds were just returned by the kernel.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn sockaddr_un(path: &Path) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: sockaddr_un is plain old data; all-zero is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.is_empty() || bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "socket path {} must be 1..{} bytes without NUL",
                path.display(),
                addr.sun_path.len() - 1
            ),
        ));
    }
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    Ok((addr, len as libc::socklen_t))
}

fn unix_socket(ty: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall.
    let fd = cvt(unsafe { libc::socket(libc::AF_UNIX, ty | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: fresh fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A listening `SOCK_SEQPACKET` socket bound at `path` (non-blocking accept).
///
/// # Errors
/// The kernel's error from `socket`, `bind` or `listen`, or a path too long for `sun_path`.
pub fn seqpacket_listen(path: &Path) -> io::Result<OwnedFd> {
    unix_listen(path, libc::SOCK_SEQPACKET)
}

/// A listening `SOCK_STREAM` Unix socket bound at `path` (non-blocking accept): the display
/// server's control socket, whose messages carry their own length.
///
/// # Errors
/// As [`seqpacket_listen`].
pub fn stream_listen(path: &Path) -> io::Result<OwnedFd> {
    unix_listen(path, libc::SOCK_STREAM)
}

/// Connects a blocking `SOCK_STREAM` Unix socket to `path`.
///
/// # Errors
/// The kernel's error from `socket` or `connect`.
pub fn stream_connect(path: &Path) -> io::Result<OwnedFd> {
    unix_connect(path, libc::SOCK_STREAM)
}

fn unix_listen(path: &Path, ty: libc::c_int) -> io::Result<OwnedFd> {
    let fd = unix_socket(ty)?;
    let (addr, len) = sockaddr_un(path)?;
    // SAFETY: `addr` is a valid sockaddr_un of length `len`.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), (&raw const addr).cast(), len) })?;
    // Backlog: connections not yet accepted; the loop accepts as soon as one arrives.
    const BACKLOG: i32 = 64;
    // SAFETY: plain syscall on our socket.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), BACKLOG) })?;
    set_nonblocking(fd.as_raw_fd(), true)?;
    Ok(fd)
}

/// Connects a blocking `SOCK_SEQPACKET` socket to `path`.
///
/// # Errors
/// The kernel's error from `socket` or `connect`.
pub fn seqpacket_connect(path: &Path) -> io::Result<OwnedFd> {
    unix_connect(path, libc::SOCK_SEQPACKET)
}

/// As [`seqpacket_connect`], with `SO_SNDTIMEO`/`SO_RCVTIMEO` of `timeout_ms` set first: the
/// `connect` (a full backlog) and later blocking calls fail with `WouldBlock` after that long,
/// until [`set_socket_timeouts`] changes them.
///
/// # Errors
/// The kernel's error from `socket`, `setsockopt` or `connect`.
pub fn seqpacket_connect_timeout(path: &Path, timeout_ms: u64) -> io::Result<OwnedFd> {
    unix_connect_timeout(path, libc::SOCK_SEQPACKET, timeout_ms)
}

/// As [`stream_connect`], with timeouts as [`seqpacket_connect_timeout`].
///
/// # Errors
/// The kernel's error from `socket`, `setsockopt` or `connect`.
pub fn stream_connect_timeout(path: &Path, timeout_ms: u64) -> io::Result<OwnedFd> {
    unix_connect_timeout(path, libc::SOCK_STREAM, timeout_ms)
}

fn unix_connect(path: &Path, ty: libc::c_int) -> io::Result<OwnedFd> {
    unix_connect_timeout(path, ty, 0)
}

fn unix_connect_timeout(path: &Path, ty: libc::c_int, timeout_ms: u64) -> io::Result<OwnedFd> {
    let fd = unix_socket(ty)?;
    if timeout_ms > 0 {
        set_socket_timeouts(fd.as_raw_fd(), timeout_ms)?;
    }
    let (addr, len) = sockaddr_un(path)?;
    loop {
        // SAFETY: `addr` is a valid sockaddr_un of length `len`.
        let r = unsafe { libc::connect(fd.as_raw_fd(), (&raw const addr).cast(), len) };
        match cvt(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
            Ok(_) => return Ok(fd),
        }
    }
}

/// Accepts one pending connection, non-blocking; `None` when there is none.
///
/// # Errors
/// The kernel's error from `accept4`, except `EAGAIN`.
pub fn accept(listener: BorrowedFd<'_>) -> io::Result<Option<OwnedFd>> {
    loop {
        // SAFETY: no address is requested.
        let r = unsafe {
            libc::accept4(
                listener.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            )
        };
        match cvt(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(e),
            // SAFETY: fresh fd from the kernel.
            Ok(fd) => return Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) })),
        }
    }
}

/// Sends one message (`MSG_NOSIGNAL`: a closed peer is an `EPIPE` error, not a signal).
/// Returns `WouldBlock` on a full non-blocking socket.
///
/// # Errors
/// The kernel's error from `send`.
pub fn send_msg(fd: RawFd, msg: &[u8]) -> io::Result<()> {
    loop {
        // SAFETY: `msg` is valid for its length.
        let r = unsafe { libc::send(fd, msg.as_ptr().cast(), msg.len(), libc::MSG_NOSIGNAL) };
        match cvt_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
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
    loop {
        // SAFETY: `buf` is valid for its length. MSG_TRUNC makes the kernel return the real
        // length of a longer message, so truncation is detected rather than silently accepted.
        let r = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_TRUNC) };
        match cvt_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
            Ok(n) => return Ok((n.min(buf.len()), n > buf.len())),
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
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // u64-aligned room for the control message.
    let mut cbuf = [0u64; 8];
    // SAFETY: msghdr is plain data; zeroed is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        let payload = std::mem::size_of_val(fds);
        // SAFETY: CMSG_SPACE only computes a size.
        let space = unsafe { libc::CMSG_SPACE(payload as u32) } as usize;
        debug_assert!(space <= std::mem::size_of_val(&cbuf));
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = space;
        // SAFETY: msg_control points at `space` bytes we own; CMSG_FIRSTHDR returns a pointer
        // inside it, CMSG_DATA one past its header, with room for `payload` bytes.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&raw const msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(payload as u32) as usize;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c).cast(), fds.len());
        }
    }
    loop {
        // SAFETY: `msg` points at live buffers for the call.
        let r =
            unsafe { libc::sendmsg(fd, &raw const msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
        match cvt_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Receives into `buf` and collects any `SCM_RIGHTS` descriptors that came with the bytes
/// (`MSG_CMSG_CLOEXEC`). Returns `(bytes, fds)`; 0 bytes with no fds means the peer closed.
/// Descriptors beyond [`MAX_PASSED_FDS`] are closed by the kernel (`MSG_CTRUNC`) and reported
/// as an error, so a hostile peer cannot make the reader leak them.
///
/// # Errors
/// The kernel's error from `recvmsg`, including `WouldBlock` on a non-blocking socket.
pub fn recv_with_fds(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut fds = Vec::new();
    let (n, msg_flags) = recvmsg_with_control(fd, buf, libc::MSG_CMSG_CLOEXEC, |c| {
        // SAFETY: `c` is a control message the kernel wrote within the message's control
        // length; an SCM_RIGHTS payload holds (cmsg_len - CMSG_LEN(0)) / sizeof(int)
        // descriptors that are now ours.
        unsafe {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<RawFd>();
                let count =
                    ((*c).cmsg_len - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                }
            }
        }
    })?;
    if msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "peer passed more descriptors than a message may carry",
        ));
    }
    Ok((n, fds))
}

/// Sets `SO_SNDTIMEO` and `SO_RCVTIMEO` of a blocking socket: a `connect` to a full backlog, a
/// `send` and a `recv` then fail with `WouldBlock` after `timeout_ms` (0: wait forever again).
///
/// # Errors
/// The kernel's error from `setsockopt`.
pub fn set_socket_timeouts(fd: RawFd, timeout_ms: u64) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: (timeout_ms / 1000) as libc::time_t,
        tv_usec: ((timeout_ms % 1000) * 1000) as libc::suseconds_t,
    };
    for opt in [libc::SO_SNDTIMEO, libc::SO_RCVTIMEO] {
        // SAFETY: `tv` is a valid timeval of the size given.
        cvt(unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&raw const tv).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        })?;
    }
    Ok(())
}

/// Whether `fd` is a datagram socket (`SO_TYPE` is `SOCK_DGRAM`); `false` for anything else,
/// a pipe or a file included.
#[must_use]
pub fn is_datagram_socket(fd: RawFd) -> bool {
    let mut ty: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `ty` and `len` are valid out-pointers of the size given.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            (&raw mut ty).cast(),
            &raw mut len,
        )
    };
    r == 0 && ty == libc::SOCK_DGRAM
}

/// Turns on `SO_RXQ_OVFL`: every datagram then carries the socket's count of datagrams the
/// kernel dropped (receive buffer full) so far, read by [`recv_counting_drops`].
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
/// when no datagram follows the drops.
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
    // SAFETY: plain syscall, no pointers.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}

/// The credentials of a Unix socket's peer as the kernel recorded them at `connect`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
pub struct PeerCred {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}

/// `SO_PEERCRED`.
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
/// Hand-written (`getsockname` into a `sockaddr_un`) to read the path bytes exactly as bound.
///
/// # Errors
/// The kernel's error from `getsockname`.
pub fn bound_unix_path(fd: BorrowedFd<'_>) -> io::Result<Option<std::path::PathBuf>> {
    // SAFETY: sockaddr_un is plain old data; all-zero is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: `addr` and `len` describe a sockaddr_un the kernel fills.
    let r = unsafe { libc::getsockname(fd.as_raw_fd(), (&raw mut addr).cast(), &raw mut len) };
    cvt(r)?;
    let header = std::mem::size_of::<libc::sa_family_t>();
    let n = (len as usize)
        .saturating_sub(header)
        .min(addr.sun_path.len());
    let bytes: Vec<u8> = addr.sun_path[..n].iter().map(|&c| c as u8).collect();
    // An abstract name starts with NUL; an unnamed socket has no bytes.
    if bytes.first().is_none_or(|&b| b == 0) {
        return Ok(None);
    }
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Ok(Some(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(
        &bytes[..end],
    ))))
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
