//! Kernel input devices on the data plane: the daemon hands each app that holds input a
//! descriptor of the device of its own and stays off the per-event path.
//!
//! evdev keeps one queue per open file and wakes each reader from the driver's context, so the
//! kernel is the dispatcher (as systemd-logind hands compositors their device descriptors).
//! For every device the daemon is given ([`crate::daemon::Daemon::add_device`]) and every app
//! that **holds input** — in the ESM's application list for one of the device's kinds, so
//! registered and not input-suspended by the display server (a background app, the one guiS
//! freezes in the same window change) — the daemon:
//!
//! 1. opens the device afresh (a new evdev client, an empty queue), stamps on `CLOCK_MONOTONIC`,
//!    masks it (`EVIOCSMASK`) to what the app registered, and sends it with a device account
//!    page in a `Device` message (`SCM_RIGHTS`);
//! 2. keeps its own copy of that descriptor — the same open file — only to control it: a changed
//!    registration re-masks it in place; when the app stops holding input (unregistered,
//!    suspended on a focus change) or dies, the daemon masks it to nothing, reads what the app
//!    left unread (counted, never delivered), and revokes it (`EVIOCREVOKE`): from then on the
//!    app's reads fail with `ENODEV`. The revocation is done before the daemon answers the
//!    request that caused it and before it hands the device to the next holder, so the old holder
//!    gets no event injected after it.
//!
//! The daemon's own descriptor of each device is masked to nothing and watched only for the
//! device going away (`POLLHUP`): no event wakes the daemon.
//!
//! Who holds what is decided by [`plan`], a pure function of the holdings and of what each app
//! wants; the I/O follows it.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;

use lull_model::{AppId, EventKind};
use lull_os::device_account::{DeviceAccount, DeviceCounts};
use lull_os::evdev::{EvdevDecoder, RECORD_SIZE};
use lull_os::evdev_ioctl::{self, EvdevIoctlError};
use lull_os::sys;

/// The kinds an input device's events are made into: every input kind. Which of them a given
/// device produces is the kernel's business; the mask lets through only what the app asked for.
#[must_use]
pub fn device_kinds() -> u32 {
    EventKind::ALL
        .iter()
        .filter(|k| k.is_input())
        .fold(0, |m, k| m | (1 << k.index()))
}

/// One step of bringing the holdings in line with what the apps want.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DeviceAction {
    /// Take `device` back from `app`.
    Revoke { app: AppId, device: u32 },
    /// Hand `app` a new descriptor of `device` masked to `kinds`.
    Hand { app: AppId, device: u32, kinds: u32 },
    /// Change the mask of the descriptor `app` holds.
    Remask { app: AppId, device: u32, kinds: u32 },
}

/// What to do so that each app in `wanted` (its registered input kinds, none while suspended)
/// holds each of `devices` masked to those kinds, given what is `held` now ((app, device) →
/// kinds). Every revocation comes before any hand-over, so an old holder is cut off before a new
/// one is served.
#[must_use]
pub fn plan(
    held: &BTreeMap<(AppId, u32), u32>,
    wanted: &BTreeMap<AppId, u32>,
    devices: &[u32],
) -> Vec<DeviceAction> {
    let want = |app: AppId| wanted.get(&app).copied().unwrap_or(0) & device_kinds();
    let mut revokes = Vec::new();
    let mut rest = Vec::new();
    for (&(app, device), &kinds) in held {
        let w = want(app);
        if w == 0 || !devices.contains(&device) {
            revokes.push(DeviceAction::Revoke { app, device });
        } else if w != kinds {
            rest.push(DeviceAction::Remask {
                app,
                device,
                kinds: w,
            });
        }
    }
    for &app in wanted.keys() {
        let w = want(app);
        if w == 0 {
            continue;
        }
        for &device in devices {
            if !held.contains_key(&(app, device)) {
                rest.push(DeviceAction::Hand {
                    app,
                    device,
                    kinds: w,
                });
            }
        }
    }
    revokes.extend(rest);
    revokes
}

/// Why an app stopped holding a device.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceEnd {
    /// The display server suspended the app's input (it went to the background).
    InputSuspended,
    /// The app unregistered its last input kind.
    Unregistered,
    /// The app's connection closed (exit, crash, protocol error).
    AppGone,
    /// The device went away (unplugged; a virtual device destroyed).
    DeviceGone,
}

/// One descriptor handed to one app, as the daemon's report shows it: what the app said it read
/// (its account page) and what it left unread when the descriptor was taken back.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
pub struct DeviceRoute {
    pub device: u32,
    pub app: AppId,
    /// The kinds the descriptor was masked to last.
    pub kinds: u32,
    /// The app's own counts (`lull_os::device_account`).
    pub app_counts: DeviceCounts,
    /// Records and events still queued for the app when the daemon took the descriptor back:
    /// injected while it held the device, never delivered (as the ESM's `discarded_on_exit`).
    pub unread_records: u64,
    pub unread_events: u64,
    /// `None` while the app holds the device.
    pub end: Option<DeviceEnd>,
}

/// The daemon's counts for its input devices.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct DeviceHostCounters {
    /// Descriptors handed to apps, re-masked in place, and revoked.
    pub handed: u64,
    pub remasked: u64,
    pub revoked: u64,
    /// Hand-overs that failed (the device could not be opened or masked, no account page, the
    /// app's socket would not take the message); the app holds nothing then.
    pub hand_failures: u64,
    /// Revocations the kernel refused other than for a device already gone.
    pub revoke_failures: u64,
    /// Times the daemon's own descriptor of a device woke it: the device going away, never an
    /// event (its mask lets nothing through).
    pub control_wakeups: u64,
    /// Devices that went away.
    pub devices_gone: u64,
}

/// One device the daemon was given.
#[derive(Debug)]
pub(crate) struct Device {
    pub(crate) id: u32,
    pub(crate) path: PathBuf,
    pub(crate) name: String,
    /// The daemon's own descriptor, masked to nothing, watched for hang-up; `None` once gone.
    pub(crate) control: Option<std::rc::Rc<OwnedFd>>,
}

/// One descriptor an app holds; `fd` is the daemon's copy of the open file the app has.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) fd: OwnedFd,
    pub(crate) account: DeviceAccount,
    pub(crate) kinds: u32,
}

/// A device the daemon serves, for its report.
#[derive(Clone, PartialEq, Eq, Debug, serde::Serialize)]
pub struct DeviceInfo {
    pub device: u32,
    pub path: PathBuf,
    pub name: String,
    pub gone: bool,
}

/// The input devices in the daemon's report: each device, the daemon's counts, and every
/// descriptor handed out with the app's counts (the way `DaemonReport::rings` shows rings).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct DeviceReport {
    pub devices: Vec<DeviceInfo>,
    pub counters: DeviceHostCounters,
    pub routes: Vec<DeviceRoute>,
}

/// The daemon's devices and who holds them.
#[derive(Debug, Default)]
pub struct DeviceHost {
    pub(crate) devices: Vec<Device>,
    pub(crate) held: BTreeMap<(AppId, u32), Held>,
    /// Descriptors taken back, oldest first; the account of one whose app still runs stays
    /// mapped (the app's last reads and its `ENODEV` land there after the revocation), at most
    /// [`MAX_OPEN_RETIRED_ACCOUNTS`] of them.
    pub(crate) retired: Vec<(DeviceRoute, Option<DeviceAccount>)>,
    pub(crate) counters: DeviceHostCounters,
}

/// Accounts of revoked descriptors kept mapped while their apps run: one page each, so 64
/// pages; beyond them the oldest is read one last time and closed (an app that flips focus that
/// often has long since read its old descriptor's end).
pub const MAX_OPEN_RETIRED_ACCOUNTS: usize = 64;

/// Why a device could not be added.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("{0}")]
    Open(#[from] lull_os::input_file::EventSourceError),
    #[error("{}: is a pipe or socket, not a device node; the daemon reads those itself (add_evdev)", .0.display())]
    NotADevice(PathBuf),
    #[error("{}: {source}", path.display())]
    Control {
        path: PathBuf,
        source: EvdevIoctlError,
    },
    #[error("{}: cannot watch it: {source}", path.display())]
    Watch {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Records read per `read(2)` when draining what an app left unread.
const DRAIN_RECORDS: usize = 256;

impl DeviceHost {
    /// The devices and the holdings, live and ended, for the report.
    #[must_use]
    pub fn routes(&self) -> Vec<DeviceRoute> {
        let mut out: Vec<DeviceRoute> = self
            .retired
            .iter()
            .map(|(r, account)| DeviceRoute {
                app_counts: account.as_ref().map_or(r.app_counts, DeviceAccount::read),
                ..*r
            })
            .collect();
        for (&(app, device), h) in &self.held {
            out.push(DeviceRoute {
                device,
                app,
                kinds: h.kinds,
                app_counts: h.account.read(),
                unread_records: 0,
                unread_events: 0,
                end: None,
            });
        }
        out
    }

    #[must_use]
    pub fn report(&self) -> DeviceReport {
        DeviceReport {
            devices: self.devices(),
            counters: self.counters,
            routes: self.routes(),
        }
    }

    #[must_use]
    pub fn counters(&self) -> DeviceHostCounters {
        self.counters
    }

    #[must_use]
    pub fn devices(&self) -> Vec<DeviceInfo> {
        self.devices
            .iter()
            .map(|d| DeviceInfo {
                device: d.id,
                path: d.path.clone(),
                name: d.name.clone(),
                gone: d.control.is_none(),
            })
            .collect()
    }

    /// Which device each app holds and with what mask.
    #[must_use]
    pub fn holdings(&self) -> BTreeMap<(AppId, u32), u32> {
        self.held.iter().map(|(&k, h)| (k, h.kinds)).collect()
    }

    pub(crate) fn live_ids(&self) -> Vec<u32> {
        self.devices
            .iter()
            .filter(|d| d.control.is_some())
            .map(|d| d.id)
            .collect()
    }

    /// Takes `device` back from `app`: masks it to nothing, counts what the app left unread,
    /// revokes it and keeps its last counts.
    pub(crate) fn revoke(&mut self, app: AppId, device: u32, end: DeviceEnd) {
        let Some(h) = self.held.remove(&(app, device)) else {
            return;
        };
        // Nothing more enters the app's queue (the mask is the open file's, shared with the
        // app's descriptor); then what is left is read off and counted.
        let _ = evdev_ioctl::set_kind_mask(h.fd.as_fd(), 0);
        let (unread_records, unread_events) = drain(&h.fd);
        match evdev_ioctl::revoke(h.fd.as_fd()) {
            Ok(()) => self.counters.revoked += 1,
            // The device is gone: nothing can reach the app any more either.
            Err(EvdevIoctlError::Revoked { .. }) => self.counters.revoked += 1,
            Err(_) => self.counters.revoke_failures += 1,
        }
        let route = DeviceRoute {
            device,
            app,
            kinds: h.kinds,
            app_counts: h.account.read(),
            unread_records,
            unread_events,
            end: Some(end),
        };
        // A departed app writes no more: its counts are final now.
        let keep = (end != DeviceEnd::AppGone).then_some(h.account);
        self.retired.push((route, keep));
        let open = self.retired.iter().filter(|(_, a)| a.is_some()).count();
        if open > MAX_OPEN_RETIRED_ACCOUNTS {
            if let Some(oldest) = self.retired.iter_mut().find(|(_, a)| a.is_some()) {
                close_account(oldest);
            }
        }
    }

    /// `app` is gone: the accounts of its earlier descriptors are read one last time.
    pub(crate) fn settle_retired(&mut self, app: AppId) {
        for r in self
            .retired
            .iter_mut()
            .filter(|(r, a)| r.app == app && a.is_some())
        {
            close_account(r);
        }
    }

    /// Opens `device` afresh, masked to `kinds`; returns the descriptor to send and keeps its
    /// copy, or `None` (counted) when it cannot.
    pub(crate) fn open_for(&mut self, device: u32, kinds: u32) -> Option<(OwnedFd, DeviceAccount)> {
        let path = self.devices.iter().find(|d| d.id == device)?.path.clone();
        let made = (|| {
            let fd = sys::open_read_nonblocking(&path).ok()?;
            sys::evdev_use_monotonic(fd.as_raw_fd()).ok()?;
            evdev_ioctl::set_kind_mask(fd.as_fd(), kinds).ok()?;
            let account = DeviceAccount::create().ok()?;
            Some((fd, account))
        })();
        if made.is_none() {
            self.counters.hand_failures += 1;
        }
        made
    }
}

/// Keeps a retired route's last counts and closes its account.
fn close_account(r: &mut (DeviceRoute, Option<DeviceAccount>)) {
    if let Some(a) = r.1.take() {
        r.0.app_counts = a.read();
    }
}

/// Reads what is left in a descriptor masked to nothing: (records, events in them).
fn drain(fd: &OwnedFd) -> (u64, u64) {
    let mut buf = vec![0u8; DRAIN_RECORDS * RECORD_SIZE];
    let mut decoder = EvdevDecoder::new();
    let mut records = 0;
    let mut events = 0;
    while let Ok(n) = sys::read(fd.as_raw_fd(), &mut buf) {
        if n == 0 {
            break;
        }
        records += (n / RECORD_SIZE) as u64;
        decoder.feed_bytes(&buf[..n], &mut |_, _| events += 1);
    }
    (records, events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(i: u32) -> AppId {
        AppId::first_in_slot(i)
    }

    fn bit(k: EventKind) -> u32 {
        1 << k.index()
    }

    fn touch() -> u32 {
        bit(EventKind::TouchMotion) | bit(EventKind::TouchPress) | bit(EventKind::TouchRelease)
    }

    /// Applies a plan to the holdings, as the daemon's I/O does.
    fn apply(held: &mut BTreeMap<(AppId, u32), u32>, actions: &[DeviceAction]) {
        for a in actions {
            match *a {
                DeviceAction::Revoke { app, device } => {
                    assert!(
                        held.remove(&(app, device)).is_some(),
                        "revoked what was not held"
                    );
                }
                DeviceAction::Hand { app, device, kinds } => {
                    assert!(held.insert((app, device), kinds).is_none(), "handed twice");
                }
                DeviceAction::Remask { app, device, kinds } => {
                    *held
                        .get_mut(&(app, device))
                        .expect("remasked what was not held") = kinds;
                }
            }
        }
    }

    #[test]
    fn a_focus_change_revokes_the_old_holder_before_serving_the_new_one() {
        let (a, b) = (app(1), app(2));
        let mut held = BTreeMap::new();
        // A in front, B suspended (no input kinds in the application list).
        let wanted = BTreeMap::from([(a, touch()), (b, 0)]);
        let p = plan(&held, &wanted, &[0]);
        assert_eq!(
            p,
            vec![DeviceAction::Hand {
                app: a,
                device: 0,
                kinds: touch()
            }]
        );
        apply(&mut held, &p);
        // B comes forward: A is suspended in the same change.
        let wanted = BTreeMap::from([(a, 0), (b, touch())]);
        let p = plan(&held, &wanted, &[0]);
        assert_eq!(
            p,
            vec![
                DeviceAction::Revoke { app: a, device: 0 },
                DeviceAction::Hand {
                    app: b,
                    device: 0,
                    kinds: touch()
                }
            ]
        );
        apply(&mut held, &p);
        assert_eq!(held, BTreeMap::from([((b, 0), touch())]));
        assert!(plan(&held, &wanted, &[0]).is_empty(), "settled");
    }

    #[test]
    fn registrations_remask_in_place_and_non_input_kinds_hold_nothing() {
        let a = app(3);
        let mut held = BTreeMap::new();
        let only_net = BTreeMap::from([(a, bit(EventKind::NetMessage) | bit(EventKind::Timer))]);
        assert!(plan(&held, &only_net, &[0, 1]).is_empty());
        let keys = BTreeMap::from([(a, bit(EventKind::Key) | bit(EventKind::NetMessage))]);
        let p = plan(&held, &keys, &[0, 1]);
        assert_eq!(p.len(), 2, "one descriptor per device: {p:?}");
        apply(&mut held, &p);
        assert_eq!(
            held[&(a, 0)],
            bit(EventKind::Key),
            "masked to input kinds only"
        );
        let more = BTreeMap::from([(a, bit(EventKind::Key) | bit(EventKind::Mouse))]);
        let p = plan(&held, &more, &[0, 1]);
        assert!(
            p.iter().all(|x| matches!(x, DeviceAction::Remask { .. })),
            "{p:?}"
        );
        apply(&mut held, &p);
        // Unregistering the last input kind takes both back.
        let p = plan(&held, &BTreeMap::from([(a, 0)]), &[0, 1]);
        assert!(
            p.iter().all(|x| matches!(x, DeviceAction::Revoke { .. })),
            "{p:?}"
        );
        apply(&mut held, &p);
        assert!(held.is_empty());
    }

    #[test]
    fn a_departed_app_or_a_gone_device_is_revoked() {
        let (a, b) = (app(1), app(2));
        let mut held = BTreeMap::from([((a, 0), touch()), ((b, 0), touch()), ((b, 1), touch())]);
        // A's connection closed (not among the apps any more); device 1 is gone.
        let wanted = BTreeMap::from([(b, touch())]);
        let p = plan(&held, &wanted, &[0]);
        apply(&mut held, &p);
        assert_eq!(held, BTreeMap::from([((b, 0), touch())]));
        assert!(p[..2]
            .iter()
            .all(|x| matches!(x, DeviceAction::Revoke { .. })));
    }

    /// Any sequence of wants: after applying each plan, the holdings are exactly the wants (each
    /// app with input kinds holds each live device with those kinds), and no plan hands a device
    /// before it has revoked all it revokes.
    #[test]
    fn plans_always_reach_the_wanted_holdings() {
        let mut rng = lull_workload::rng::SplitMix64::new(27);
        let mut held = BTreeMap::new();
        for _ in 0..2_000 {
            let mut wanted = BTreeMap::new();
            for i in 0..4 {
                if rng.next_u64() % 4 != 0 {
                    wanted.insert(app(i), (rng.next_u64() as u32) & 0x7f);
                }
            }
            let devices: Vec<u32> = (0..3).filter(|_| rng.next_u64() % 3 != 0).collect();
            let p = plan(&held, &wanted, &devices);
            let first_other = p
                .iter()
                .position(|x| !matches!(x, DeviceAction::Revoke { .. }))
                .unwrap_or(p.len());
            assert!(p[first_other..]
                .iter()
                .all(|x| !matches!(x, DeviceAction::Revoke { .. })));
            apply(&mut held, &p);
            let expect: BTreeMap<(AppId, u32), u32> = wanted
                .iter()
                .filter(|(_, &k)| k & device_kinds() != 0)
                .flat_map(|(&a, &k)| devices.iter().map(move |&d| ((a, d), k & device_kinds())))
                .collect();
            assert_eq!(held, expect);
        }
    }
}
