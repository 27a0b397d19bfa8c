use std::io;

/// What the kernel said when it refused a call: its `errno`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Errno(pub i32);

impl Errno {
    pub const EPERM: Errno = Errno(libc::EPERM);
    pub const ESRCH: Errno = Errno(libc::ESRCH);
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    pub const EACCES: Errno = Errno(libc::EACCES);
    pub const EBUSY: Errno = Errno(libc::EBUSY);
    pub const ENOENT: Errno = Errno(libc::ENOENT);
    pub const ENODEV: Errno = Errno(libc::ENODEV);
    pub const EIO: Errno = Errno(libc::EIO);
    pub const EAGAIN: Errno = Errno(libc::EAGAIN);
    pub const EMFILE: Errno = Errno(libc::EMFILE);
    pub const EPROTOTYPE: Errno = Errno(libc::EPROTOTYPE);
    pub const ECONNREFUSED: Errno = Errno(libc::ECONNREFUSED);
    pub const ECONNABORTED: Errno = Errno(libc::ECONNABORTED);

    /// The `errno` `err` carries, `None` for an error that did not come from the kernel.
    #[must_use]
    pub fn of(err: &io::Error) -> Option<Errno> {
        err.raw_os_error().map(Errno)
    }

    /// The symbolic name (`EPERM`, `ESRCH`, `EINVAL`, …), `None` for a value not listed here.
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        let name = match self.0 {
            libc::EPERM => "EPERM",
            libc::ENOENT => "ENOENT",
            libc::ESRCH => "ESRCH",
            libc::EINTR => "EINTR",
            libc::EIO => "EIO",
            libc::ENXIO => "ENXIO",
            libc::E2BIG => "E2BIG",
            libc::EBADF => "EBADF",
            libc::EAGAIN => "EAGAIN",
            libc::ENOMEM => "ENOMEM",
            libc::EACCES => "EACCES",
            libc::EFAULT => "EFAULT",
            libc::EBUSY => "EBUSY",
            libc::EEXIST => "EEXIST",
            libc::EXDEV => "EXDEV",
            libc::ENODEV => "ENODEV",
            libc::ENOTDIR => "ENOTDIR",
            libc::EISDIR => "EISDIR",
            libc::EINVAL => "EINVAL",
            libc::ENFILE => "ENFILE",
            libc::EMFILE => "EMFILE",
            libc::ENOSPC => "ENOSPC",
            libc::EROFS => "EROFS",
            libc::EDOM => "EDOM",
            libc::ERANGE => "ERANGE",
            libc::ENAMETOOLONG => "ENAMETOOLONG",
            libc::ENOSYS => "ENOSYS",
            libc::ENOTEMPTY => "ENOTEMPTY",
            libc::ENODATA => "ENODATA",
            libc::EOVERFLOW => "EOVERFLOW",
            libc::EOPNOTSUPP => "EOPNOTSUPP",
            libc::ETIMEDOUT => "ETIMEDOUT",
            libc::ESTALE => "ESTALE",
            libc::ECANCELED => "ECANCELED",
            _ => return None,
        };
        Some(name)
    }
}

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = io::Error::from_raw_os_error(self.0);
        match self.name() {
            Some(name) => write!(f, "{name} ({text})"),
            None => write!(f, "errno {} ({text})", self.0),
        }
    }
}

impl std::error::Error for Errno {}

/// The `errno` of a failed system call; `EIO` for an error that carries none (which the
/// wrappers in this module never return).
impl From<io::Error> for Errno {
    fn from(e: io::Error) -> Errno {
        Errno(e.raw_os_error().unwrap_or(libc::EIO))
    }
}

impl From<Errno> for io::Error {
    fn from(e: Errno) -> io::Error {
        io::Error::from_raw_os_error(e.0)
    }
}

#[cfg(test)]
mod tests {
    use crate::sys::*;

    #[test]
    fn errno_names() {
        assert_eq!(Errno::ESRCH.name(), Some("ESRCH"));
        assert_eq!(Errno(libc::EPERM).name(), Some("EPERM"));
        assert_eq!(Errno(4095).name(), None);
        assert!(Errno::EINVAL.to_string().starts_with("EINVAL ("));
        assert!(Errno(4095).to_string().starts_with("errno 4095 ("));
    }
}
