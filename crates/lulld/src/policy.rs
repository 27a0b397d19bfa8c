//! Policies as plug-ins of the daemon: [`Daemon::add_policy`] takes any [`Policy`], which
//! declares the facts it needs ([`FactSource`]) and the knobs it writes ([`Knob`]). The host
//! arms each source once, however many policies ask for it, and refuses a second writer of a
//! knob with a typed error ([`PolicyError::KnobTaken`]). guiS ([`crate::guis::GuisPolicy`]),
//! UCSG ([`crate::ucsg::UcsgPolicy`]), the interactive boost ([`crate::boost::BoostPolicy`]) and
//! the sched_ext feed ([`crate::scx_feed::ScxFeedPolicy`]) are such plug-ins; changing one
//! touches its own module and neither the loop nor the seam.
//!
//! | source | what the host arms |
//! | --- | --- |
//! | `DisplayServer` | nothing: the display server must run already (its facts: window states, declared threads) |
//! | `EveryWait` | every app reports each wait as a message (the wait cell's report-waits flag) |
//! | `ProcessEvents` | the kernel's proc connector as a loop source (root only; the answer says why not), and the processes the policy names adopted |
//! | `RunQueues` | the run-queue sampler at pushes (`/proc/loadavg`) |
//! | `DeadlineTimer` | the seam's one deadline timer as a loop source |

use std::fmt;
use std::path::Path;

use lull_actuate::freezer::Freezer;
use lull_actuate::Actuator;
use lull_os::event_loop::{FnSource, LoopCtl, PostAction};
use lull_os::proc_connector::ProcConnector;
use lull_os::runqueue::RunnableProbe;
use lull_os::sys::{self, TimerFd};
use lull_os::topology;
use lull_sched::seam::SeamPolicy;
use serde::Serialize;

use crate::daemon::{Daemon, DaemonState};
use crate::guis::GuisHost;
use crate::scx_feed::ScxFeed;
use crate::seam::{RunQueueSampler, SeamHost};

/// A source of facts the daemon arms for the policies that need it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FactSource {
    /// The display server's facts: window states and the threads apps declare.
    DisplayServer,
    /// Every app's `Wait` as it happens (handler ends, idle forcing).
    EveryWait,
    /// Every fork, exec and exit on the machine (the proc connector).
    ProcessEvents,
    /// The run queues' length, sampled at input pushes.
    RunQueues,
    /// A wake-up at the policy's own deadline.
    DeadlineTimer,
}

/// Something a policy sets on the machine; each has at most one writer.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Knob {
    /// A thread's nice value (`setpriority`).
    Nice,
    /// A fair thread's custom slice (`sched_setattr`).
    Slice,
    /// A thread's CPU mask (`sched_setaffinity`).
    Affinity,
    /// Freezing and thawing threads (the cgroup freezer).
    Freezer,
    /// A thread's cgroup v2 `cpu.weight`.
    CpuWeight,
    /// A frequency domain's lowest frequency (cpufreq).
    Frequency,
    /// lull-scx's facts map (`lull_os::bpf::scx_facts`).
    ScxFacts,
}

impl fmt::Display for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Knob::Nice => "nice values",
            Knob::Slice => "slices",
            Knob::Affinity => "CPU masks",
            Knob::Freezer => "the cgroup freezer",
            Knob::CpuWeight => "cpu.weight",
            Knob::Frequency => "cpufreq",
            Knob::ScxFacts => "lull-scx's facts map",
        })
    }
}

/// What a plug-in hands the host once its needs and knobs are accepted.
#[derive(Debug, Default)]
pub struct Installed {
    /// The policy told the seam's facts, whose actions the actuator applies.
    pub seam: Option<Box<dyn SeamPolicy>>,
    /// The actuator's freezer (by the writer of [`Knob::Freezer`]), or why there is none.
    pub freezer: Option<Result<Freezer, String>>,
    /// lull-scx's facts writer (by the writer of [`Knob::ScxFacts`]).
    pub scx_feed: Option<ScxFeed>,
    /// Names (`comm`) of processes to tell the policies about as `Adopted`, now and at exec.
    pub adopt_names: Vec<String>,
    /// guiS's idle forcing.
    pub(crate) idle: Option<GuisHost>,
}

impl Installed {
    /// A seam policy alone (the shape of most plug-ins).
    #[must_use]
    pub fn seam(policy: Box<dyn SeamPolicy>) -> Installed {
        Installed {
            seam: Some(policy),
            ..Installed::default()
        }
    }
}

/// A policy plug-in of the daemon.
pub trait Policy: fmt::Debug {
    /// Its name, unique among the daemon's policies.
    fn name(&self) -> &'static str;
    /// The facts it needs the host to arm.
    fn needs(&self) -> Vec<FactSource>;
    /// The knobs it writes; no other policy may write them.
    fn writes(&self) -> Vec<Knob>;
    /// Hands over what the host runs (called once, after the checks).
    fn install(self: Box<Self>) -> Installed;
}

/// A policy the daemon refused.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("{policy} is already on")]
    AlreadyAdded { policy: &'static str },
    #[error("{policy} and {holder} both set {knob}; run one of them")]
    KnobTaken {
        knob: Knob,
        holder: &'static str,
        policy: &'static str,
    },
    #[error(
        "{policy} needs the display server (apps declare their threads there): enable it first"
    )]
    NeedsDisplayServer { policy: &'static str },
    #[error("{policy}: {source}")]
    Arm {
        policy: &'static str,
        source: std::io::Error,
    },
}

/// What the host armed for a policy, and what this machine did not let it arm.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Armed {
    /// `Some(why)` when the policy needs process events and the proc connector does not listen.
    pub process_events_unavailable: Option<String>,
    /// `Some(why)` when the policy needs the run queues and they cannot be read.
    pub run_queues_unavailable: Option<String>,
    /// `Some(why)` when cpufreq is not there (the actuator counts frequency actions unavailable).
    pub frequency_unavailable: Option<String>,
    /// The machine's online CPUs (the run-queue count is divided among them).
    pub cpus: u32,
}

/// The policies on the daemon and the knob each writes.
#[derive(Debug, Default)]
pub(crate) struct PolicyTable {
    names: Vec<&'static str>,
    writers: Vec<(Knob, &'static str)>,
}

impl PolicyTable {
    /// Whether a policy named `name` is on.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.names.contains(&name)
    }

    fn check(&self, name: &'static str, writes: &[Knob]) -> Result<(), PolicyError> {
        if self.names.contains(&name) {
            return Err(PolicyError::AlreadyAdded { policy: name });
        }
        for &knob in writes {
            if let Some(&(_, holder)) = self.writers.iter().find(|(k, _)| *k == knob) {
                return Err(PolicyError::KnobTaken {
                    knob,
                    holder,
                    policy: name,
                });
            }
        }
        Ok(())
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::{DaemonConfig, DaemonError};
    use crate::kds::KdsConfig;
    use lull_sched::seam::{Action, Fact};

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

    fn daemon(tag: &str, kds: bool) -> Daemon {
        let socket_path =
            std::env::temp_dir().join(format!("lull-policy-{tag}-{}.sock", std::process::id()));
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
        d
    }

    #[test]
    fn a_second_writer_of_a_knob_is_refused_by_name() {
        let mut d = daemon("knob", false);
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
        let mut d = daemon("kds", false);
        let plug = || Box::new(Plug("p", vec![FactSource::DisplayServer], vec![]));
        assert!(matches!(
            d.add_policy(plug()),
            Err(PolicyError::NeedsDisplayServer { policy: "p" })
        ));
        assert!(d.state_mut().seam_report().is_none());
        let mut d = daemon("kds2", true);
        d.add_policy(plug()).unwrap();
    }

    #[test]
    fn sources_are_armed_once_however_many_policies_need_them() {
        let mut d = daemon("once", false);
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
        let mut d = daemon("ucsg-boost", true);
        d.enable_ucsg(&crate::ucsg::UcsgConfig::default()).unwrap();
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
