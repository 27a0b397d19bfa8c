//! systemd's two protocols for a service, spoken without libsystemd: socket activation (the
//! service manager binds the listening sockets and passes them as descriptors 3, 4, … described
//! by `LISTEN_PID`, `LISTEN_FDS` and `LISTEN_FDNAMES`) and readiness (`READY=1` sent as one
//! datagram to `$NOTIFY_SOCKET`). Both are documented in `sd_listen_fds(3)` and `sd_notify(3)`;
//! `packaging/systemd/` holds the units that use them.
//!
//! lulld takes at most two sockets, told apart by name: `esm` (the ESM socket, `SOCK_SEQPACKET`,
//! as [`crate::daemon::Daemon::bind`] would bind it) and `kds` (the display server's control
//! socket, `SOCK_STREAM`). A socket that is not passed is bound by the daemon as usual.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;

use lull_os::sys::{self, SocketType};

/// The first passed descriptor (`SD_LISTEN_FDS_START` in `sd-daemon.h`).
pub const LISTEN_FDS_START: RawFd = 3;
/// `FileDescriptorName=` of the ESM socket in `packaging/systemd/lulld.socket`.
pub const ESM_FD_NAME: &str = "esm";
/// `FileDescriptorName=` of the display server's socket in `packaging/systemd/lulld-kds.socket`.
pub const KDS_FD_NAME: &str = "kds";
/// One ESM socket and one display-server socket: more is a unit written for something else.
const MAX_LISTEN_FDS: usize = 2;

/// Why the passed sockets cannot be used.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ActivationError {
    #[error("LISTEN_PID={0:?} is not a process id")]
    BadPid(String),
    #[error("LISTEN_FDS={0:?} is not a number of descriptors")]
    BadCount(String),
    #[error(
        "systemd passed {0} sockets; lulld takes at most {MAX_LISTEN_FDS}, one named \
         {ESM_FD_NAME:?} and one named {KDS_FD_NAME:?}"
    )]
    TooMany(usize),
    #[error(
        "LISTEN_FDNAMES is not set; name the sockets with FileDescriptorName={ESM_FD_NAME} \
         and FileDescriptorName={KDS_FD_NAME} in their socket units"
    )]
    NoNames,
    #[error("LISTEN_FDNAMES names {names} sockets but LISTEN_FDS says {fds}")]
    NameCount { names: usize, fds: usize },
    #[error(
        "the socket passed as descriptor {fd} is named {name:?}; lulld takes sockets named \
         {ESM_FD_NAME:?} and {KDS_FD_NAME:?}"
    )]
    UnknownName { fd: RawFd, name: String },
    #[error("two passed sockets are named {0:?}")]
    Duplicate(String),
    #[error("the socket named {name:?}: {source}")]
    NotAdopted {
        name: &'static str,
        #[source]
        source: sys::AdoptError,
    },
    #[error("the socket named {name:?} (descriptor {fd}) {why}")]
    WrongSocket {
        fd: RawFd,
        name: &'static str,
        why: String,
    },
}

/// The descriptor of each named socket the service manager passed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListenFds {
    pub esm: Option<RawFd>,
    pub kds: Option<RawFd>,
}

/// Reads the values of `LISTEN_PID`, `LISTEN_FDS` and `LISTEN_FDNAMES` for the process `pid`.
/// `Ok(None)`: nothing was passed to this process (no variables, another process's `LISTEN_PID`
/// — a parent's, inherited — or zero descriptors), as `sd_listen_fds` returns 0.
///
/// # Errors
/// [`ActivationError`] for values that are not numbers, more sockets than lulld takes, and names
/// that are missing, unknown or repeated.
pub fn parse_listen_env(
    pid: u32,
    listen_pid: Option<&str>,
    listen_fds: Option<&str>,
    names: Option<&str>,
) -> Result<Option<ListenFds>, ActivationError> {
    let Some(listen_pid) = listen_pid else {
        return Ok(None);
    };
    let for_pid: u32 = listen_pid
        .parse()
        .ok()
        .filter(|&p| p != 0)
        .ok_or_else(|| ActivationError::BadPid(listen_pid.to_owned()))?;
    if for_pid != pid {
        return Ok(None);
    }
    let Some(listen_fds) = listen_fds else {
        return Ok(None);
    };
    let n: usize = listen_fds
        .parse()
        .map_err(|_| ActivationError::BadCount(listen_fds.to_owned()))?;
    if n == 0 {
        return Ok(None);
    }
    if n > MAX_LISTEN_FDS {
        return Err(ActivationError::TooMany(n));
    }
    let names: Vec<&str> = names.ok_or(ActivationError::NoNames)?.split(':').collect();
    if names.len() != n {
        return Err(ActivationError::NameCount {
            names: names.len(),
            fds: n,
        });
    }
    let mut out = ListenFds::default();
    for (fd, name) in (LISTEN_FDS_START..).zip(names) {
        let slot = match name {
            ESM_FD_NAME => &mut out.esm,
            KDS_FD_NAME => &mut out.kds,
            _ => {
                return Err(ActivationError::UnknownName {
                    fd,
                    name: name.to_owned(),
                })
            }
        };
        if slot.replace(fd).is_some() {
            return Err(ActivationError::Duplicate(name.to_owned()));
        }
    }
    Ok(Some(out))
}

/// A passed listening socket, checked, close-on-exec and non-blocking.
#[derive(Debug)]
pub struct Adopted {
    pub fd: OwnedFd,
    /// The file the socket is bound to: where clients connect.
    pub path: PathBuf,
}

/// The sockets passed to this process, ready for [`crate::daemon::Daemon::adopt`] and
/// [`crate::daemon::Daemon::adopt_kds`].
#[derive(Debug, Default)]
pub struct Activated {
    pub esm: Option<Adopted>,
    pub kds: Option<Adopted>,
}

/// Takes the sockets systemd passed to this process, and removes `LISTEN_PID`, `LISTEN_FDS` and
/// `LISTEN_FDNAMES` from the environment so that programs the daemon starts (an idle action's
/// command) do not take them for theirs. `Ok(None)` when nothing was passed.
///
/// # Errors
/// [`ActivationError`] as [`parse_listen_env`], and for a passed descriptor that is not an
/// inherited, listening `AF_UNIX` socket of its name's type bound to a file.
///
/// # Safety
/// Call it once, at the start of `main`, before any other thread runs: it changes the
/// environment, which another thread could be reading.
// `unsafe` for its caller's promise about threads, not for anything its body does.
#[allow(unsafe_code)]
pub unsafe fn take_listen_fds() -> Result<Option<Activated>, ActivationError> {
    let var = |k: &str| std::env::var(k).ok();
    let parsed = parse_listen_env(
        std::process::id(),
        var("LISTEN_PID").as_deref(),
        var("LISTEN_FDS").as_deref(),
        var("LISTEN_FDNAMES").as_deref(),
    );
    for k in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
        std::env::remove_var(k);
    }
    let Some(fds) = parsed? else {
        return Ok(None);
    };
    let take = |fd: Option<RawFd>, name: &'static str, ty: SocketType| {
        fd.map(|fd| adopt(fd, name, ty)).transpose()
    };
    Ok(Some(Activated {
        esm: take(fds.esm, ESM_FD_NAME, SocketType::SeqPacket)?,
        kds: take(fds.kds, KDS_FD_NAME, SocketType::Stream)?,
    }))
}

/// Adopts the passed descriptor `fd` (which [`sys::adopt_inherited_socket`] makes
/// close-on-exec) and checks it is the socket its name says.
fn adopt(fd: RawFd, name: &'static str, ty: SocketType) -> Result<Adopted, ActivationError> {
    let wrong = |why: String| ActivationError::WrongSocket { fd, name, why };
    let owned = sys::adopt_inherited_socket(fd)
        .map_err(|source| ActivationError::NotAdopted { name, source })?;
    let domain =
        sys::socket_family(owned.as_fd()).map_err(|e| wrong(format!("is not a socket ({e})")))?;
    if domain != sys::AF_UNIX {
        return Err(wrong(format!(
            "is not a Unix socket (address family {domain}); use ListenSequentialPacket= or \
             ListenStream= with a file path"
        )));
    }
    let got = sys::socket_type(owned.as_fd()).map_err(|e| wrong(e.to_string()))?;
    if got != ty {
        return Err(wrong(format!(
            "is a {} socket; it must be {} ({}= in its socket unit)",
            got.name(),
            ty.name(),
            if ty == SocketType::SeqPacket {
                "ListenSequentialPacket"
            } else {
                "ListenStream"
            }
        )));
    }
    if !sys::socket_listening(owned.as_fd()).map_err(|e| wrong(e.to_string()))? {
        return Err(wrong(
            "is not listening (Accept=yes passes connections; lulld needs Accept=no)".into(),
        ));
    }
    let path = sys::bound_unix_path(owned.as_fd()).map_err(|e| wrong(e.to_string()))?;
    let path = path.ok_or_else(|| {
        wrong("is not bound to a file path (clients find lulld by path, not abstract name)".into())
    })?;
    sys::set_nonblocking(owned.as_raw_fd(), true).map_err(|e| wrong(e.to_string()))?;
    Ok(Adopted { fd: owned, path })
}

/// Where `$NOTIFY_SOCKET` points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotifyTarget {
    Path(PathBuf),
    /// An abstract socket name (the variable's leading `@` removed).
    Abstract(Vec<u8>),
}

/// Parses `$NOTIFY_SOCKET`: an absolute path, or `@name` for an abstract socket.
///
/// # Errors
/// A description of a value that is neither (an empty one, a relative path, systemd's `vsock:`
/// form, which lulld does not speak).
pub fn parse_notify_socket(value: &OsStr) -> Result<NotifyTarget, BadNotifySocket> {
    let b = value.as_bytes();
    match b.first() {
        Some(b'/') => Ok(NotifyTarget::Path(PathBuf::from(value))),
        Some(b'@') if b.len() > 1 => Ok(NotifyTarget::Abstract(b[1..].to_vec())),
        _ => Err(BadNotifySocket(value.to_owned())),
    }
}

/// A `$NOTIFY_SOCKET` that is neither an absolute path nor `@name`.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("NOTIFY_SOCKET={0:?} is neither an absolute path nor @name (vsock is not supported)")]
pub struct BadNotifySocket(pub std::ffi::OsString);

/// Where to report readiness: `$NOTIFY_SOCKET` parsed, `Ok(None)` when it is not set (the
/// daemon was not started by a service manager that waits for it).
///
/// # Errors
/// As [`parse_notify_socket`].
pub fn notify_target_from_env() -> Result<Option<NotifyTarget>, BadNotifySocket> {
    std::env::var_os("NOTIFY_SOCKET")
        .map(|v| parse_notify_socket(&v))
        .transpose()
}

/// Sends `state` (e.g. `READY=1\nSTATUS=…`) to `target` as one datagram.
///
/// # Errors
/// The kernel's error creating the socket or sending.
pub fn notify_to(target: &NotifyTarget, state: &str) -> io::Result<()> {
    let sock = UnixDatagram::unbound()?;
    let sent = match target {
        NotifyTarget::Path(p) => sock.send_to(state.as_bytes(), p)?,
        NotifyTarget::Abstract(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            sock.send_to_addr(state.as_bytes(), &addr)?
        }
    };
    if sent != state.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "the notification was cut short",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PID: u32 = 4242;

    fn parse(
        pid: Option<&str>,
        fds: Option<&str>,
        names: Option<&str>,
    ) -> Result<Option<ListenFds>, ActivationError> {
        parse_listen_env(PID, pid, fds, names)
    }

    #[test]
    fn both_sockets_by_name_in_either_order() {
        assert_eq!(
            parse(Some("4242"), Some("2"), Some("esm:kds")),
            Ok(Some(ListenFds {
                esm: Some(3),
                kds: Some(4)
            }))
        );
        assert_eq!(
            parse(Some("4242"), Some("2"), Some("kds:esm")),
            Ok(Some(ListenFds {
                esm: Some(4),
                kds: Some(3)
            }))
        );
        assert_eq!(
            parse(Some("4242"), Some("1"), Some("kds")),
            Ok(Some(ListenFds {
                esm: None,
                kds: Some(3)
            }))
        );
    }

    #[test]
    fn nothing_for_this_process() {
        assert_eq!(parse(None, Some("2"), Some("esm:kds")), Ok(None));
        // A parent's variables, inherited: not ours.
        assert_eq!(parse(Some("1"), Some("2"), Some("esm:kds")), Ok(None));
        assert_eq!(parse(Some("4242"), None, None), Ok(None));
        assert_eq!(parse(Some("4242"), Some("0"), None), Ok(None));
    }

    #[test]
    fn bad_numbers() {
        for pid in ["", "x", "-1", "0", "4242x", "99999999999999999999"] {
            assert_eq!(
                parse(Some(pid), Some("1"), Some("esm")),
                Err(ActivationError::BadPid(pid.into())),
                "{pid:?}"
            );
        }
        for n in ["", "one", "-1", "1.0", " 1"] {
            assert_eq!(
                parse(Some("4242"), Some(n), Some("esm")),
                Err(ActivationError::BadCount(n.into())),
                "{n:?}"
            );
        }
    }

    #[test]
    fn too_many_descriptors() {
        assert_eq!(
            parse(Some("4242"), Some("3"), Some("esm:kds:esm")),
            Err(ActivationError::TooMany(3))
        );
    }

    #[test]
    fn missing_unknown_and_repeated_names() {
        assert_eq!(
            parse(Some("4242"), Some("1"), None),
            Err(ActivationError::NoNames)
        );
        assert_eq!(
            parse(Some("4242"), Some("2"), Some("esm")),
            Err(ActivationError::NameCount { names: 1, fds: 2 })
        );
        assert_eq!(
            parse(Some("4242"), Some("1"), Some("esm:kds")),
            Err(ActivationError::NameCount { names: 2, fds: 1 })
        );
        // systemd's name when FileDescriptorName= is missing is the socket unit's name.
        let e = parse(Some("4242"), Some("1"), Some("lulld.socket")).unwrap_err();
        assert_eq!(
            e,
            ActivationError::UnknownName {
                fd: 3,
                name: "lulld.socket".into()
            }
        );
        assert!(e.to_string().contains("\"esm\""), "{e}");
        assert_eq!(
            parse(Some("4242"), Some("2"), Some("esm:esm")),
            Err(ActivationError::Duplicate("esm".into()))
        );
    }

    #[test]
    fn notify_socket_forms() {
        assert_eq!(
            parse_notify_socket(OsStr::new("/run/systemd/notify")),
            Ok(NotifyTarget::Path("/run/systemd/notify".into()))
        );
        assert_eq!(
            parse_notify_socket(OsStr::new("@abc")),
            Ok(NotifyTarget::Abstract(b"abc".to_vec()))
        );
        for bad in ["", "@", "relative/path", "vsock:2:1234"] {
            assert!(parse_notify_socket(OsStr::new(bad)).is_err(), "{bad:?}");
        }
    }

    /// A private directory for a test's sockets, removed on drop (even when the test fails).
    fn scratch(tag: &str) -> lull_os::fileout::ScratchDir {
        lull_os::fileout::ScratchDir::new(&format!("lulld-activation-{tag}")).unwrap()
    }

    #[test]
    fn ready_reaches_a_datagram_socket_by_path_and_by_abstract_name() {
        let scratch = scratch("notify");
        let dir = scratch.path();
        let path = dir.join("notify.sock");
        let rx = UnixDatagram::bind(&path).unwrap();
        notify_to(&NotifyTarget::Path(path), "READY=1\nSTATUS=test").unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1\nSTATUS=test");

        use std::os::linux::net::SocketAddrExt;
        let name = format!("lulld-activation-test-{}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let rx = UnixDatagram::bind_addr(&addr).unwrap();
        notify_to(&NotifyTarget::Abstract(name.into_bytes()), "READY=1").unwrap();
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
    }

    /// `adopt` of a descriptor this test gives up, passed as systemd passes it: without
    /// close-on-exec.
    fn adopt_owned(
        fd: OwnedFd,
        name: &'static str,
        ty: SocketType,
    ) -> Result<Adopted, ActivationError> {
        sys::set_cloexec(fd.as_fd(), false).unwrap();
        adopt(std::os::fd::IntoRawFd::into_raw_fd(fd), name, ty)
    }

    #[test]
    fn adopt_checks_the_socket() {
        let scratch = scratch("adopt");
        let dir = scratch.path();
        let esm = dir.join("esm.sock");
        let listening = sys::seqpacket_listen(&esm).unwrap();
        let a = adopt_owned(listening, "esm", SocketType::SeqPacket).unwrap();
        assert_eq!(a.path, esm);
        assert!(sys::is_cloexec(a.fd.as_fd()).unwrap());

        let kds = dir.join("kds.sock");
        let stream = sys::stream_listen(&kds).unwrap();
        let e = adopt_owned(stream, "esm", SocketType::SeqPacket).unwrap_err();
        assert!(e.to_string().contains("is a SOCK_STREAM socket"), "{e}");

        let (one, _other) = sys::seqpacket_pair().unwrap();
        let e = adopt_owned(one, "esm", SocketType::SeqPacket).unwrap_err();
        assert!(e.to_string().contains("not listening"), "{e}");

        // A refused file is left open (`adopt` did not take it); the test closes it.
        let file = std::fs::File::create(dir.join("plain")).unwrap();
        sys::set_cloexec(file.as_fd(), false).unwrap();
        let e = adopt(file.as_raw_fd(), "kds", SocketType::Stream).unwrap_err();
        assert!(
            matches!(
                e,
                ActivationError::NotAdopted {
                    name: "kds",
                    source: sys::AdoptError::NotSocket { .. }
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("not a socket"), "{e}");
        drop(file);

        // A number that is not open.
        let e = adopt(RawFd::MAX, "esm", SocketType::SeqPacket).unwrap_err();
        assert!(e.to_string().contains("is not open"), "{e}");

        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let e = adopt_owned(OwnedFd::from(udp), "kds", SocketType::Stream).unwrap_err();
        assert!(e.to_string().contains("not a Unix socket"), "{e}");
    }
}
