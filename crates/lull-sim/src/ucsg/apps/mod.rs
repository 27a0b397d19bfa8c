//! The app models of seed 001 §4.1 (Table II) and the phone's system threads, as the user space
//! of a UCSG scenario. Every thread belongs to an app (an app key) or to the system; apps are in
//! front or behind; touches are events the policy hears. What the policy may learn is collected
//! as [`Fact`]s: a thread forked (with its parent and owner), a touch, the front app, the display.

pub(crate) mod file_manager;
pub(crate) mod ftp;
pub(crate) mod system;
pub(crate) mod video;
pub(crate) mod zip;

use std::borrow::Cow;

use super::spec::AppWork;
use crate::kernel::{Action, Cx, DeviceWork, Kernel, Userspace};
use file_manager::FileManager;
use ftp::Ftp;
use system::System;
use video::Video;
use zip::Zip;

/// The app keys of the scenario's apps (the policy's `Owner::App`).
pub const APP_HOME: u32 = 1;
pub const APP_FILE_MANAGER: u32 = 2;
pub const APP_VIDEO: u32 = 3;
pub const APP_ZIP: u32 = 4;
pub const APP_FTP: u32 = 5;

/// `DeviceWork::Input` index of a network chunk (touches use their own index).
pub(crate) const NET_DEVICE: u32 = u32::MAX;

/// Who owns a thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Owner {
    System,
    App(u32),
}

/// What a thread does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Role {
    Input,
    Compositor,
    Housekeeping,
    Launcher,
    FmUi,
    FmScanner,
    VideoDecoder,
    VideoRender,
    VideoAudio,
    Zip,
    Ftp,
    /// The UCSG daemon's own sampling work (only where the model runs it).
    Daemon,
}

/// A fact the policy can hear.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fact {
    Fork {
        thread: usize,
        parent: Option<usize>,
        owner: Owner,
    },
    Touch,
    Foreground(u32),
    Display(bool),
}

/// A thread of the scene.
#[derive(Clone, Debug)]
pub(crate) struct SceneThread {
    pub role: Role,
}

/// Which apps a scenario runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Cast {
    pub file_manager: bool,
    pub video: bool,
    pub zip: bool,
    pub ftp: bool,
    /// The UCSG daemon's thread.
    pub daemon: bool,
}

/// Work of the UCSG daemon at each sampling period: a fixed part and a part per tracked thread
/// (reading `/proc/<pid>/task/<tid>/stat`, updating the thread's estimate). ESTIMATE 100 k and
/// 30 k Cortex-A15 cycles: opening, reading and parsing a small procfs file costs some tens of
/// µs on a phone core. Seed 001 §4.2 attributes UCSG's higher idle power to this work.
pub const DAEMON_BASE_CYCLES: u64 = 100_000;
pub const DAEMON_PER_THREAD_CYCLES: u64 = 30_000;

/// The user space of one scenario.
#[derive(Debug)]
pub(crate) struct Scene {
    pub threads: Vec<SceneThread>,
    pub sys: System,
    pub fm: Option<FileManager>,
    pub video: Option<Video>,
    pub zip: Option<Zip>,
    pub ftp: Option<Ftp>,
    /// The touches' (time, file-manager action).
    pub touches: Vec<(u64, file_manager::FmAction)>,
    pub daemon: Option<usize>,
    daemon_cycles: u64,
    daemon_busy: bool,
    pub facts: Vec<Fact>,
    /// The link restarts after a stall: the runner schedules the next chunk.
    pub link_restart: bool,
    wakes: Vec<usize>,
}

/// Threads created so far and the fork facts for the policy.
type Created = (Vec<SceneThread>, Vec<Fact>);

fn spawn(
    k: &mut Kernel<'_>,
    (threads, facts): &mut Created,
    name: &'static str,
    role: Role,
    owner: Owner,
    parent: Option<usize>,
    cache_kib: u64,
) -> usize {
    let proc_id = match owner {
        Owner::System => 0,
        Owner::App(a) => a,
    };
    let t = k.add_task(Cow::Borrowed(name), proc_id, 0, cache_kib);
    debug_assert_eq!(t, threads.len());
    threads.push(SceneThread { role });
    facts.push(Fact::Fork {
        thread: t,
        parent,
        owner,
    });
    t
}

impl Scene {
    /// Creates every thread of `cast` in the kernel (asleep), in a fixed order; the video starts
    /// at `start_ns`. Hot sets ESTIMATE: 256 KiB for UI and media threads, 512 KiB for ZIP's
    /// dictionary and buffers, 128 KiB for the rest.
    pub fn new(cast: Cast, start_ns: u64, work: AppWork, k: &mut Kernel<'_>) -> Scene {
        let mut acc: Created = (Vec::new(), Vec::new());
        let s = Owner::System;
        let input = spawn(k, &mut acc, "input", Role::Input, s, None, 128);
        let comp = spawn(
            k,
            &mut acc,
            "surfaceflinger",
            Role::Compositor,
            s,
            None,
            256,
        );
        let hk = spawn(
            k,
            &mut acc,
            "system_server",
            Role::Housekeeping,
            s,
            None,
            128,
        );
        let home = Owner::App(APP_HOME);
        // The launcher exists (its thread is the home app's for the policy) and idles.
        spawn(k, &mut acc, "launcher", Role::Launcher, home, None, 256);
        let fm = cast.file_manager.then(|| {
            let o = Owner::App(APP_FILE_MANAGER);
            let ui = spawn(k, &mut acc, "fm-ui", Role::FmUi, o, None, 256);
            let sc = spawn(k, &mut acc, "fm-scanner", Role::FmScanner, o, Some(ui), 128);
            FileManager::new(ui, sc, work.file_manager_work_pct)
        });
        let video = cast.video.then(|| {
            let o = Owner::App(APP_VIDEO);
            let r = spawn(k, &mut acc, "video-render", Role::VideoRender, o, None, 256);
            let d = spawn(
                k,
                &mut acc,
                "video-decoder",
                Role::VideoDecoder,
                o,
                Some(r),
                256,
            );
            let a = spawn(
                k,
                &mut acc,
                "video-audio",
                Role::VideoAudio,
                o,
                Some(r),
                128,
            );
            Video::new(d, r, a, start_ns, work.video_decode_cycles_per_pixel)
        });
        let zip = cast.zip.then(|| {
            let o = Owner::App(APP_ZIP);
            let tid = spawn(k, &mut acc, "zip", Role::Zip, o, None, 512);
            Zip::new(tid, work.zip_cycles_per_byte)
        });
        let ftp = cast.ftp.then(|| {
            let o = Owner::App(APP_FTP);
            Ftp::new(spawn(k, &mut acc, "ftp", Role::Ftp, o, None, 128))
        });
        let daemon = cast
            .daemon
            .then(|| spawn(k, &mut acc, "ucsgd", Role::Daemon, s, None, 128));
        let (th, facts) = acc;
        Scene {
            threads: th,
            sys: System::new(input, comp, hk),
            fm,
            video,
            zip,
            ftp,
            touches: Vec::new(),
            daemon,
            daemon_cycles: 0,
            daemon_busy: false,
            facts,
            link_restart: false,
            wakes: Vec::new(),
        }
    }

    /// Starts the threads that run from the beginning.
    pub fn start(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        let mut first = vec![self.sys.housekeeping];
        if let Some(v) = &self.video {
            first.extend([v.render, v.decoder, v.audio]);
        }
        if let Some(z) = &self.zip {
            first.push(z.tid);
        }
        if let Some(f) = &self.ftp {
            first.push(f.tid);
        }
        k.wake_each(first, &*self, cx);
    }

    /// The UCSG daemon samples, tracking `threads` threads: it runs its work.
    pub fn daemon_sample(&mut self, threads: usize, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        let Some(d) = self.daemon else {
            return;
        };
        self.daemon_cycles += DAEMON_BASE_CYCLES + DAEMON_PER_THREAD_CYCLES * threads as u64;
        k.wake(d, &*self, cx);
    }

    /// Every app's work is done (the scenario may end).
    pub fn all_done(&self) -> bool {
        self.fm.as_ref().is_none_or(FileManager::done)
            && self.video.as_ref().is_none_or(|v| v.done_ns.is_some())
            && self.zip.as_ref().is_none_or(|z| z.done_ns.is_some())
            && self.ftp.as_ref().is_none_or(|f| f.done_ns.is_some())
    }

    fn post_frame(&mut self) {
        if self.sys.post_frame() {
            self.wakes.push(self.sys.compositor);
        }
    }

    fn step(&mut self, t: usize, now: u64) -> Action {
        let mut wakes = std::mem::take(&mut self.wakes);
        let a = match self.threads[t].role {
            Role::Input => {
                let (a, dispatched) = self.sys.input_step();
                if let (Some(i), Some(fm)) = (dispatched, self.fm.as_mut()) {
                    let (at, action) = self.touches[i as usize];
                    fm.deliver(at, action);
                    wakes.push(fm.ui);
                }
                a
            }
            Role::Compositor => self.sys.compositor_step(),
            Role::Housekeeping => self.sys.housekeeping_step(now),
            Role::Launcher => Action::Block,
            Role::FmUi => {
                let fm = self.fm.as_mut().expect("fm thread implies fm");
                let before = fm.responses_ns.len();
                let a = fm.ui_step(now, &mut wakes);
                if fm.responses_ns.len() > before {
                    self.wakes = wakes;
                    self.post_frame();
                    wakes = std::mem::take(&mut self.wakes);
                }
                a
            }
            Role::FmScanner => self
                .fm
                .as_mut()
                .expect("fm thread implies fm")
                .scanner_step(&mut wakes),
            Role::VideoDecoder => self.video.as_mut().expect("video").decoder_step(),
            Role::VideoRender => {
                let mut posted = false;
                let a =
                    self.video
                        .as_mut()
                        .expect("video")
                        .render_step(now, &mut wakes, &mut posted);
                if posted {
                    self.wakes = wakes;
                    self.post_frame();
                    wakes = std::mem::take(&mut self.wakes);
                }
                a
            }
            Role::VideoAudio => self.video.as_mut().expect("video").audio_step(now),
            Role::Zip => self.zip.as_mut().expect("zip").step(now),
            Role::Ftp => {
                let (a, restart) = self.ftp.as_mut().expect("ftp").step(now);
                self.link_restart |= restart;
                a
            }
            Role::Daemon => {
                if self.daemon_busy {
                    self.daemon_busy = false;
                }
                if self.daemon_cycles > 0 {
                    self.daemon_busy = true;
                    Action::Compute(std::mem::take(&mut self.daemon_cycles))
                } else {
                    Action::Block
                }
            }
        };
        self.wakes = wakes;
        a
    }

    fn flush_wakes(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        while let Some(t) = self.wakes.pop() {
            k.wake(t, &*self, cx);
        }
    }
}

impl Userspace for Scene {
    fn next_action(&mut self, t: usize, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) -> Action {
        let a = self.step(t, cx.now());
        self.flush_wakes(k, cx);
        a
    }

    fn device_work(&mut self, w: DeviceWork, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        match w {
            DeviceWork::Input(NET_DEVICE) => {
                if let Some(f) = self.ftp.as_mut() {
                    if f.take_waiting() {
                        self.wakes.push(f.tid);
                    }
                }
            }
            DeviceWork::Input(i) => {
                // The touchscreen driver's hook (seed 001 §3.3): the policy hears the touch.
                self.facts.push(Fact::Touch);
                self.sys.touches.push_back(i);
                self.wakes.push(self.sys.input);
            }
            DeviceWork::Vsync => {}
        }
        self.flush_wakes(k, cx);
    }
}

impl crate::pm::IdleForcing for Scene {}
