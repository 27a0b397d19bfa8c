//! The app end of the three baseline delivery models (seed 000's pull, Android-like vsync
//! batching, X11/Wayland-like blocking middleware): the loop that waits the model's way on the
//! socket from the harness's hub and calls the app's handlers. The hub end is the lab's
//! (`lull_lab::stack::run_hub`).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use lull_esm::protocol::{DaemonMsg, MAX_MESSAGE};
use lull_model::time::NS_PER_MS;
use lull_model::{AppEvent, DeliveryModel};
use lull_os::event_loop::{EventLoop, FnSource, LoopCtl, PostAction, Source};
use lull_os::sys::{self, monotonic_ns, EventFd, TimerFd};

/// Seed 000's polling interval: 16 ms, about one 60 Hz frame.
pub const PULL_PERIOD_NS: u64 = 16 * NS_PER_MS;
/// Where in the hub's 16 ms period the app polls. 1 ms after the hub — the phase most favourable
/// to the baseline short of racing the hub: an event the hub picks up reaches the handler about
/// 1 ms later instead of up to a whole period later.
pub const PULL_APP_PHASE_NS: u64 = NS_PER_MS;
/// A 60 Hz display's frame period (Android's vsync).
pub const VSYNC_PERIOD_NS: u64 = 16_666_667;

/// Whether `timer` has expired since last asked (consuming the expirations).
pub fn fired(timer: Option<&TimerFd>) -> bool {
    timer.map_or(0, |t| t.take_expirations().unwrap_or(0)) > 0
}

pub fn stop_source<S>(fd: RawFd) -> Box<dyn Source<S>> {
    Box::new(FnSource {
        fd,
        f: move |_: &mut S, ctl: &mut LoopCtl<S>| {
            let mut b = [0u8; 8];
            let _ = sys::read(fd, &mut b);
            ctl.stop();
            PostAction::Continue
        },
    })
}

/// The first instant after `now_ns` on the grid of `period_ns` shifted by `phase_ns`.
pub fn next_boundary(now_ns: u64, period_ns: u64, phase_ns: u64) -> u64 {
    let base = now_ns.saturating_sub(phase_ns);
    (base / period_ns + 1) * period_ns + phase_ns
}

/// What a baseline app loop calls: the app's handlers. The loop itself (how it waits, when it
/// reads its socket, when it ticks) is the model's.
pub trait BaselineHandler {
    /// An event from the hub. The handler's first act should be reading the clock (latency).
    fn on_event(&mut self, ev: &AppEvent);
    /// A frame tick of the vsync model's looper (sent while animating).
    fn on_frame(&mut self) {}
    /// The pull model's periodic poll, after the socket was drained: where a polling app
    /// checks its other inputs (a network socket, say).
    fn on_poll(&mut self) {}
}

struct BaselineApp<H> {
    app: H,
    from_hub: OwnedFd,
    frame: Option<TimerFd>,
    frame_armed: bool,
    input_since_frame: bool,
    hub_gone: bool,
}

impl<H: BaselineHandler> BaselineApp<H> {
    /// Handles every message waiting on the socket (non-blocking).
    fn drain(&mut self) {
        let mut buf = [0u8; MAX_MESSAGE];
        loop {
            match sys::recv_msg(self.from_hub.as_raw_fd(), &mut buf) {
                Ok((0, _)) => {
                    self.hub_gone = true;
                    return;
                }
                Ok((n, false)) => {
                    if let Ok(DaemonMsg::Event { event, .. }) = DaemonMsg::decode(&buf[..n]) {
                        self.app.on_event(&event);
                        self.input_since_frame = true;
                    }
                }
                Ok((_, true)) => {}
                Err(_) => return,
            }
        }
    }

    fn request_frame(&mut self) {
        if self.frame_armed || !self.input_since_frame {
            return;
        }
        if let Some(f) = &self.frame {
            self.frame_armed = f
                .set_abs(next_boundary(monotonic_ns(), VSYNC_PERIOD_NS, 0), 0)
                .is_ok();
        }
    }
}

/// The app's socket, for the apps that block on it: handle what arrived, ask for a frame (a no-op
/// without a frame timer), and stop when the hub has gone.
fn socket_source<H: BaselineHandler + 'static>(sock: RawFd) -> Box<dyn Source<BaselineApp<H>>> {
    Box::new(FnSource {
        fd: sock,
        f: |a: &mut BaselineApp<H>, ctl: &mut LoopCtl<BaselineApp<H>>| {
            a.drain();
            a.request_frame();
            if a.hub_gone {
                ctl.stop();
                return PostAction::Remove;
            }
            PostAction::Continue
        },
    })
}

/// Runs a baseline app loop on this thread, calling `app`'s handlers, until the hub closes its
/// end (or `stop`). Returns the app.
///
/// # Errors
/// The kernel's error setting up the loop.
pub fn run_baseline_app<H: BaselineHandler + 'static>(
    model: DeliveryModel,
    from_hub: OwnedFd,
    app: H,
    stop: &EventFd,
) -> io::Result<H> {
    sys::set_nonblocking(from_hub.as_raw_fd(), true)?;
    let sock = from_hub.as_raw_fd();
    let mut lp: EventLoop<BaselineApp<H>> = EventLoop::new()?;
    lp.insert(stop_source(stop.raw()))?;
    let mut st = BaselineApp {
        app,
        from_hub,
        frame: None,
        frame_armed: false,
        input_since_frame: false,
        hub_gone: false,
    };
    match model {
        DeliveryModel::Esm | DeliveryModel::EsmKdsGuis => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the ESM app uses the client library",
            ))
        }
        DeliveryModel::BlockingMiddleware => {
            lp.insert(socket_source(sock))?;
        }
        DeliveryModel::VsyncBatched => {
            let timer = TimerFd::new()?;
            let tfd = timer.raw();
            st.frame = Some(timer);
            lp.insert(socket_source(sock))?;
            lp.insert(Box::new(FnSource {
                fd: tfd,
                f: |a: &mut BaselineApp<H>, _: &mut LoopCtl<BaselineApp<H>>| {
                    if fired(a.frame.as_ref()) {
                        a.frame_armed = false;
                        a.app.on_frame();
                        // Keep ticking while input keeps coming; stop after a quiet frame.
                        a.request_frame();
                        a.input_since_frame = false;
                    }
                    PostAction::Continue
                },
            }))?;
        }
        DeliveryModel::Pull16ms => {
            let timer = TimerFd::new()?;
            timer.set_abs(
                next_boundary(monotonic_ns(), PULL_PERIOD_NS, PULL_APP_PHASE_NS),
                PULL_PERIOD_NS,
            )?;
            let tfd = timer.raw();
            lp.insert(Box::new(FnSource {
                fd: tfd,
                f: move |a: &mut BaselineApp<H>, ctl: &mut LoopCtl<BaselineApp<H>>| {
                    let _ = timer.take_expirations();
                    a.drain();
                    a.app.on_poll();
                    if a.hub_gone {
                        ctl.stop();
                    }
                    PostAction::Continue
                },
            }))?;
        }
    }
    lp.run(&mut st)?;
    Ok(st.app)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_are_strictly_after_now_on_the_phased_grid() {
        assert_eq!(next_boundary(0, 16, 0), 16);
        assert_eq!(next_boundary(16, 16, 0), 32);
        assert_eq!(next_boundary(17, 16, 1), 33);
        assert_eq!(next_boundary(0, 16, 1), 17);
        assert_eq!(next_boundary(1, 16, 1), 17);
    }
}
