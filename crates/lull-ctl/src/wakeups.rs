//! What a controller's loop waits for, in one epoll: its sampling timer, the registry's proc
//! connector (when it has one) and the end of the process it follows.

use lull_os::sys::{Epoll, TimerFd};

use crate::error::CtlError;
use crate::registry::Registry;

pub(crate) const TOKEN_TIMER: u64 = 0;
pub(crate) const TOKEN_CONNECTOR: u64 = 1;
pub(crate) const TOKEN_EXIT: u64 = 2;

/// The epoll a controller waits in, holding the sampling timer (not armed) and `reg`'s
/// connector; the process's end is the caller's to add under [`TOKEN_EXIT`].
///
/// # Errors
/// [`CtlError::Io`] naming the call that failed.
pub(crate) fn wait_set(reg: &Registry) -> Result<(Epoll, TimerFd), CtlError> {
    let io = |what: &'static str| move |e| CtlError::io(what, e);
    let epoll = Epoll::new().map_err(io("create epoll"))?;
    let timer = TimerFd::new().map_err(io("create the sampling timer"))?;
    epoll
        .add(timer.raw(), TOKEN_TIMER)
        .map_err(io("watch the timer"))?;
    if let Some(fd) = reg.connector_fd() {
        epoll
            .add(fd, TOKEN_CONNECTOR)
            .map_err(io("watch the connector"))?;
    }
    Ok((epoll, timer))
}
