//! The daemon's side of its policy plug-ins ([`crate::policy`]): [`Daemon::add_policy`] checks a
//! plug-in's name and knobs against those already on, arms the fact sources it needs that are not
//! armed yet (the proc connector and the deadline timer as loop sources, the run-queue sampler,
//! every wait as a message) and hands its parts to the seam, the actuator and idle forcing; the
//! `enable_*` methods build one of the daemon's own plug-ins and add it.

use std::path::Path;

use lull_actuate::Actuator;
use lull_os::event_loop::{FnSource, LoopCtl, PostAction};
use lull_os::proc_connector::ProcConnector;
use lull_os::runqueue::RunnableProbe;
use lull_os::sys::{self, TimerFd};
use lull_os::topology;
use lull_sched::boost::seam::BoostSeamConfig;

use super::{Daemon, DaemonError, DaemonState};
use crate::boost::{BoostPolicy, BoostStatus};
use crate::guis::{GuisConfig, GuisStatus, IdleAction, KernelEnforcement};
use crate::guis_policy::GuisPolicy;
use crate::policy::{Armed, FactSource, Policy, PolicyError};
use crate::scx_feed_policy::ScxFeedPolicy;
use crate::seam::{RunQueueSampler, SeamHost};
use crate::ucsg::{UcsgConfig, UcsgPolicy, UcsgStatus};

/// Why the actuator has no freezer while no policy writes [`Knob::Freezer`].
const NO_FREEZER: &str = "not opened: no policy that freezes runs (guiS is off)";

/// Every process whose name is in `names`.
fn processes_named(names: &[String]) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| names.iter().any(|n| n == c.trim_end()))
        })
        .collect()
}

impl Daemon {
    /// Adds a policy: checks that it is new, that no other policy writes its knobs and that
    /// the display server runs if it needs it; then arms the sources it needs that are not
    /// armed yet. A machine that lacks a source is not an error: [`Armed`] says what.
    ///
    /// # Errors
    /// [`PolicyError`] naming the refusal; the kernel's error creating a timer or registering a
    /// source.
    pub fn add_policy(&mut self, policy: Box<dyn Policy>) -> Result<Armed, PolicyError> {
        let name = policy.name();
        let needs = policy.needs();
        let writes = policy.writes();
        let st = self.state_mut();
        st.policies.check(name, &writes)?;
        if needs.contains(&FactSource::DisplayServer) && st.kds.is_none() {
            return Err(PolicyError::NeedsDisplayServer { policy: name });
        }
        st.policies.names.push(name);
        st.policies
            .writers
            .extend(writes.iter().map(|&k| (k, name)));
        let installed = policy.install();

        let seam = st.seam.get_or_insert_with(|| {
            SeamHost::new(Vec::new(), Actuator::new(Err(NO_FREEZER.into())))
        });
        if let Some(freezer) = installed.freezer {
            // The one writer of the freezer knob: the actuator holds nothing yet (the loop has
            // not run), so it is made anew around the freezer.
            seam.actuator = Actuator::new(freezer);
        }
        if let Some(p) = installed.seam {
            seam.add_policy(p);
        }
        if let Some(feed) = installed.scx_feed {
            seam.scx_feed = Some(feed);
        }
        if let Some(idle) = installed.idle {
            st.guis = Some(idle);
        }
        let arm = |source| PolicyError::Arm {
            policy: name,
            source,
        };
        let mut armed = Armed {
            frequency_unavailable: seam.actuator.report().frequency.unavailable_reason.clone(),
            ..Armed::default()
        };
        if needs.contains(&FactSource::ProcessEvents) {
            armed.process_events_unavailable = self.arm_process_events().map_err(arm)?;
        }
        let seam = self.state_mut().seam.as_mut().expect("made above");
        seam.adopt_names
            .extend(installed.adopt_names.iter().cloned());
        if needs.contains(&FactSource::DeadlineTimer) && !seam.has_timer() {
            let timer = TimerFd::new().map_err(arm)?;
            let timer_fd = timer.raw();
            seam.set_timer(timer);
            self.add_source(Box::new(FnSource {
                fd: timer_fd,
                f: |st: &mut DaemonState, _: &mut LoopCtl<DaemonState>| {
                    if let Some(s) = st.seam.as_mut() {
                        s.deadline();
                    }
                    PostAction::Continue
                },
            }))
            .map_err(arm)?;
        }
        let now = sys::monotonic_ns();
        let seam = self.state_mut().seam.as_mut().expect("made above");
        for pid in processes_named(&installed.adopt_names) {
            seam.adopt_if_named(now, pid);
        }
        let topo = topology::probe(Path::new(topology::SYSFS_CPUS));
        armed.cpus = u32::try_from(topo.online.len()).unwrap_or(1).max(1);
        if needs.contains(&FactSource::RunQueues)
            && seam.wants_run_queues()
            && !seam.samples_run_queues()
        {
            match RunnableProbe::open() {
                Ok(p) => seam.start_run_queues(RunQueueSampler::new(p, armed.cpus)),
                Err(e) => {
                    armed.run_queues_unavailable = Some(format!(
                        "run queues unreadable ({e}): every boost is sized for an empty queue"
                    ));
                }
            }
        }
        if needs.contains(&FactSource::EveryWait) {
            self.state_mut().set_report_waits(true);
        }
        Ok(armed)
    }

    /// Opens the proc connector once, for the policies that want process facts; `Ok(Some(why))`
    /// when it cannot listen here.
    fn arm_process_events(&mut self) -> std::io::Result<Option<String>> {
        let seam = self.state_mut().seam.as_mut().expect("made by add_policy");
        if seam.counts_process_facts() {
            return Ok(seam.connector_unavailable());
        }
        // Only a policy that wants process facts costs the daemon a socket hearing of every task.
        let (connector, unavailable) = if !seam.wants_process_facts() {
            (None, Some("no policy asks for process facts".to_owned()))
        } else {
            match ProcConnector::open() {
                Ok(c) => (Some(c), None),
                Err(e) => (None, Some(e.to_string())),
            }
        };
        let connector_fd = connector.as_ref().map(ProcConnector::raw);
        seam.start_process_facts(connector, unavailable.clone());
        if let Some(fd) = connector_fd {
            self.add_source(Box::new(FnSource {
                fd,
                f: |st: &mut DaemonState, _: &mut LoopCtl<DaemonState>| {
                    if let Some(s) = st.seam.as_mut() {
                        s.process_events();
                    }
                    PostAction::Continue
                },
            }))?;
        }
        Ok(unavailable)
    }
}

impl Daemon {
    /// Runs guiS in this daemon: table 1 on the policy seam, enforced by the kernel when a cgroup
    /// freezer is available here, and idle forcing always (see [`crate::guis`]). Call after
    /// [`Daemon::enable_kds`]. With `config.enabled` off it sets up nothing and says so.
    ///
    /// # Errors
    /// [`DaemonError::Policy`] without the display server or when called twice;
    /// [`GuisPolicy::new`]'s errors. A machine without a freezer is not an error: the status
    /// says why.
    pub fn enable_guis(&mut self, config: &GuisConfig) -> Result<GuisStatus, DaemonError> {
        let st = self.state_mut();
        if st.kds.is_none() {
            return Err(PolicyError::NeedsDisplayServer { policy: "guis" }.into());
        }
        if st.policies.contains("guis") {
            return Err(PolicyError::AlreadyAdded { policy: "guis" }.into());
        }
        if !config.enabled {
            return Ok(GuisStatus {
                kernel: KernelEnforcement::Off,
                idle_action: IdleAction::None,
                recovered: None,
            });
        }
        let policy = GuisPolicy::new(config)?;
        let status = policy.status.clone();
        self.add_policy(Box::new(policy))?;
        Ok(status)
    }

    /// Feeds lull-scx the display server's facts through the map pinned at `path`
    /// ([`lull_os::bpf::scx_facts::FACTS_PIN_PATH`] normally). Call after
    /// [`Daemon::enable_kds`]; works beside any seam policy.
    ///
    /// # Errors
    /// [`DaemonError::Policy`] without the display server or when called twice.
    pub fn enable_scx_feed(&mut self, path: &Path) -> Result<(), DaemonError> {
        self.add_policy(Box::new(ScxFeedPolicy::new(path)))?;
        Ok(())
    }

    /// Runs UCSG on the policy seam (beside guiS's table 1 when guiS is on). See
    /// [`crate::ucsg`] for what it manages and how it degrades; a machine that lacks something is
    /// not an error, the status says what.
    ///
    /// # Errors
    /// [`DaemonError::Ucsg`] for a bad configuration or when the machine's CPUs cannot be
    /// described; [`DaemonError::Policy`] when called twice or while the boost runs, or for the
    /// kernel's error creating the timer or registering sources.
    pub fn enable_ucsg(&mut self, config: &UcsgConfig) -> Result<UcsgStatus, DaemonError> {
        let topology = topology::probe(Path::new(topology::SYSFS_CPUS));
        let policy = UcsgPolicy::new(config, &topology)?;
        let armed = self.add_policy(Box::new(policy))?;
        Ok(UcsgStatus::new(topology, &armed))
    }

    /// Runs the interactive boost on the policy seam (see [`crate::boost`]). Call after
    /// [`Daemon::enable_kds`].
    ///
    /// # Errors
    /// [`DaemonError::Boost`] for a C or slice out of range; [`DaemonError::Policy`] without
    /// the display server, when called twice or while UCSG runs, or for the kernel's error
    /// creating the timer or registering it.
    pub fn enable_boost(&mut self, config: &BoostSeamConfig) -> Result<BoostStatus, DaemonError> {
        let armed = self.add_policy(Box::new(BoostPolicy::new(config)?))?;
        Ok(BoostStatus::new(config, &armed))
    }
}

#[cfg(test)]
mod tests {
    use super::super::DaemonConfig;
    use super::*;
    use crate::kds::KdsConfig;
    use crate::policy::{Installed, Knob};
    use lull_sched::seam::{Action, Fact, SeamPolicy};

    /// A seam policy that asks for nothing.
    #[derive(Debug)]
    struct Quiet;

    impl SeamPolicy for Quiet {
        fn name(&self) -> &'static str {
            "quiet"
        }
        fn on_fact(&mut self, _: u64, _: &Fact, _: &mut Vec<Action>) {}
    }

    /// A plug-in with the given name, needs and knobs.
    #[derive(Debug)]
    struct Plug(&'static str, Vec<FactSource>, Vec<Knob>);

    impl Policy for Plug {
        fn name(&self) -> &'static str {
            self.0
        }
        fn needs(&self) -> Vec<FactSource> {
            self.1.clone()
        }
        fn writes(&self) -> Vec<Knob> {
            self.2.clone()
        }
        fn install(self: Box<Self>) -> Installed {
            Installed::seam(Box::new(Quiet))
        }
    }

    /// A bound daemon, its sockets in the returned private directory (keep it while the daemon
    /// lives; it is removed on drop).
    fn daemon(tag: &str, kds: bool) -> (Daemon, lull_os::fileout::ScratchDir) {
        let dir = lull_os::fileout::ScratchDir::new("lull-policy").unwrap();
        let socket_path = dir.path().join(format!("{tag}.sock"));
        let mut d = Daemon::bind(&DaemonConfig {
            socket_path: socket_path.clone(),
            esm: lull_esm::EsmConfig::default(),
        })
        .unwrap();
        if kds {
            d.enable_kds(&KdsConfig {
                socket_path: socket_path.with_extension("kds.sock"),
                screen_width: 64,
                screen_height: 48,
                framebuffer: None,
            })
            .unwrap();
        }
        (d, dir)
    }

    #[test]
    fn a_second_writer_of_a_knob_is_refused_by_name() {
        let (mut d, _dir) = daemon("knob", false);
        d.add_policy(Box::new(Plug("a", vec![], vec![Knob::Nice, Knob::Slice])))
            .unwrap();
        let err = d
            .add_policy(Box::new(Plug(
                "b",
                vec![],
                vec![Knob::Affinity, Knob::Slice],
            )))
            .unwrap_err();
        assert!(matches!(
            err,
            PolicyError::KnobTaken {
                knob: Knob::Slice,
                holder: "a",
                policy: "b"
            }
        ));
        assert_eq!(err.to_string(), "b and a both set slices; run one of them");
        // A refused policy leaves nothing behind: a writer of other knobs still comes in.
        d.add_policy(Box::new(Plug("b", vec![], vec![Knob::Affinity])))
            .unwrap();
        assert!(matches!(
            d.add_policy(Box::new(Plug("b", vec![], vec![]))),
            Err(PolicyError::AlreadyAdded { policy: "b" })
        ));
        assert_eq!(
            d.state_mut().seam_report().unwrap().policies,
            ["quiet", "quiet"]
        );
    }

    #[test]
    fn a_policy_that_needs_the_display_server_waits_for_it() {
        let (mut d, _dir) = daemon("kds", false);
        let plug = || Box::new(Plug("p", vec![FactSource::DisplayServer], vec![]));
        assert!(matches!(
            d.add_policy(plug()),
            Err(PolicyError::NeedsDisplayServer { policy: "p" })
        ));
        assert!(d.state_mut().seam_report().is_none());
        let (mut d, _dir) = daemon("kds2", true);
        d.add_policy(plug()).unwrap();
    }

    #[test]
    fn sources_are_armed_once_however_many_policies_need_them() {
        let (mut d, _dir) = daemon("once", false);
        let before = d.sources();
        let timer = vec![FactSource::DeadlineTimer];
        d.add_policy(Box::new(Plug("a", timer.clone(), vec![])))
            .unwrap();
        assert_eq!(d.sources(), before + 1);
        d.add_policy(Box::new(Plug("b", timer, vec![]))).unwrap();
        assert_eq!(d.sources(), before + 1);
    }

    #[test]
    fn ucsg_and_the_boost_both_write_nice_values() {
        use lull_sched::boost::seam::{BoostMode, BoostSeamConfig};
        let (mut d, _dir) = daemon("ucsg-boost", true);
        d.enable_ucsg(&UcsgConfig::default()).unwrap();
        let err = d
            .enable_boost(&BoostSeamConfig::new(BoostMode::Nice))
            .unwrap_err();
        assert!(matches!(
            err,
            DaemonError::Policy(PolicyError::KnobTaken {
                knob: Knob::Nice,
                holder: "ucsg",
                policy: "boost"
            })
        ));
    }
}
