//! The daemon's side of its input devices ([`crate::devices`]): who holds input is the ESM's
//! and the connections' to say, so the holdings are brought in line here, after anything that
//! may change them; each device's own descriptor is a loop source that notices it going away.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;

use lull_esm::protocol::DaemonMsg;
use lull_model::{AppId, EventKind};
use lull_os::evdev::RECORD_SIZE;
use lull_os::evdev_ioctl;
use lull_os::event_loop::{FnSource, LoopCtl, PostAction};
use lull_os::sys;

use super::{Daemon, DaemonState};
use crate::devices::{plan, Device, DeviceAction, DeviceEnd, DeviceError, DeviceHost, Held};

impl DaemonState {
    /// The input devices and their holders.
    #[must_use]
    pub fn devices(&self) -> &DeviceHost {
        &self.devices
    }

    /// Brings the holdings in line with the application list: run after anything that may change
    /// who holds input (a registration, a window change, an app gone), before its answer goes
    /// out.
    pub(crate) fn devices_sync(&mut self) {
        if self.devices.devices.is_empty() {
            return;
        }
        let mut wanted = BTreeMap::new();
        for app in self.esm.apps() {
            if !self.conns.contains_key(&app) {
                continue;
            }
            let kinds = EventKind::ALL
                .iter()
                .filter(|k| k.is_input())
                .filter(|&&k| matches!(self.esm.handler(app, k), Ok(Some(_))))
                .fold(0, |m, k| m | (1 << k.index()));
            wanted.insert(app, kinds);
        }
        let held = self.devices.holdings();
        let live = self.devices.live_ids();
        for action in plan(&held, &wanted, &live) {
            match action {
                DeviceAction::Revoke { app, device } => {
                    let end = if !self.conns.contains_key(&app) {
                        DeviceEnd::AppGone
                    } else if self.esm.input_suspended(app).unwrap_or(false) {
                        DeviceEnd::InputSuspended
                    } else if !live.contains(&device) {
                        DeviceEnd::DeviceGone
                    } else {
                        DeviceEnd::Unregistered
                    };
                    self.devices.revoke(app, device, end);
                }
                DeviceAction::Remask { app, device, kinds } => {
                    if let Some(h) = self.devices.held.get_mut(&(app, device)) {
                        if evdev_ioctl::set_kind_mask(h.fd.as_fd(), kinds).is_ok() {
                            h.kinds = kinds;
                            self.devices.counters.remasked += 1;
                        }
                    }
                }
                DeviceAction::Hand { app, device, kinds } => self.hand(app, device, kinds),
            }
        }
    }

    fn hand(&mut self, app: AppId, device: u32, kinds: u32) {
        let Some((fd, account)) = self.devices.open_for(device, kinds) else {
            return;
        };
        let mut buf = Vec::new();
        DaemonMsg::Device { device }.encode(&mut buf);
        let sent = self.conns.get(&app).map(|c| {
            sys::send_with_fds(c.fd.as_raw_fd(), &buf, &[fd.as_raw_fd(), account.raw_fd()])
        });
        if !matches!(sent, Some(Ok(_))) {
            // Not taken (the app is not reading, or gone): it holds nothing; the socket's own
            // failure is dealt with by the next send that needs it.
            self.devices.counters.hand_failures += 1;
            return;
        }
        self.devices.counters.handed += 1;
        self.devices
            .held
            .insert((app, device), Held { fd, account, kinds });
    }

    /// `app` is gone: every device it held is taken back.
    pub(crate) fn devices_app_gone(&mut self, app: AppId) {
        let mine: Vec<u32> = self
            .devices
            .held
            .keys()
            .filter(|(a, _)| *a == app)
            .map(|&(_, d)| d)
            .collect();
        for device in mine {
            self.devices.revoke(app, device, DeviceEnd::AppGone);
        }
        self.devices.settle_retired(app);
    }

    /// The daemon's descriptor of `device` hung up: the device is gone, and every descriptor of
    /// it with it.
    fn device_gone(&mut self, device: u32) {
        let holders: Vec<AppId> = self
            .devices
            .held
            .keys()
            .filter(|&&(_, d)| d == device)
            .map(|&(a, _)| a)
            .collect();
        for app in holders {
            self.devices.revoke(app, device, DeviceEnd::DeviceGone);
        }
        if let Some(d) = self.devices.devices.iter_mut().find(|d| d.id == device) {
            d.control = None;
        }
        self.devices.counters.devices_gone += 1;
    }
}

impl Daemon {
    /// Serves the evdev device at `path` on the data plane: each app that holds input gets a
    /// descriptor of its own (see [`crate::devices`]); the daemon never reads the device. Returns
    /// the device's number (the `Device` message's).
    ///
    /// # Errors
    /// [`DeviceError`] when `path` is not an evdev device node or cannot be opened and watched.
    pub fn add_device(&mut self, path: &Path) -> Result<u32, DeviceError> {
        let fd = lull_os::input_file::open_event_source(path)?;
        let meta = std::fs::File::from(fd.try_clone().map_err(|source| DeviceError::Watch {
            path: path.to_owned(),
            source,
        })?)
        .metadata()
        .map_err(|source| DeviceError::Watch {
            path: path.to_owned(),
            source,
        })?;
        use std::os::unix::fs::FileTypeExt;
        if !meta.file_type().is_char_device() {
            return Err(DeviceError::NotADevice(path.to_owned()));
        }
        let control_err = |source| DeviceError::Control {
            path: path.to_owned(),
            source,
        };
        // Its own descriptor receives nothing: no event ever wakes the daemon.
        evdev_ioctl::set_kind_mask(fd.as_fd(), 0).map_err(control_err)?;
        let name = evdev_ioctl::device_name(fd.as_fd()).map_err(control_err)?;
        let fd = std::rc::Rc::new(fd);
        let st = self.state_mut();
        let id = u32::try_from(st.devices.devices.len()).unwrap_or(u32::MAX);
        let raw = fd.as_raw_fd();
        let watch = std::rc::Rc::clone(&fd);
        self.add_source(Box::new(FnSource {
            fd: raw,
            f: move |st: &mut DaemonState, _: &mut LoopCtl<DaemonState>| {
                st.devices.counters.control_wakeups += 1;
                let mut b = [0u8; RECORD_SIZE];
                match sys::read(watch.as_raw_fd(), &mut b) {
                    // Masked to nothing, it should hold nothing; a record read is dropped.
                    Ok(n) if n > 0 => PostAction::Continue,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => PostAction::Continue,
                    _ => {
                        st.device_gone(id);
                        PostAction::Remove
                    }
                }
            },
        }))
        .map_err(|source| DeviceError::Watch {
            path: path.to_owned(),
            source,
        })?;
        let st = self.state_mut();
        st.devices.devices.push(Device {
            id,
            path: path.to_owned(),
            name,
            control: Some(fd),
        });
        st.devices_sync();
        Ok(id)
    }
}
