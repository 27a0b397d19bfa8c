//! Policies as plug-ins of the daemon: [`crate::daemon::Daemon::add_policy`] takes any [`Policy`], which
//! declares the facts it needs ([`FactSource`]) and the knobs it writes ([`Knob`]). The host
//! arms each source once, however many policies ask for it, and refuses a second writer of a
//! knob with a typed error ([`PolicyError::KnobTaken`]). guiS ([`crate::guis_policy::GuisPolicy`]),
//! UCSG ([`crate::ucsg::UcsgPolicy`]), the interactive boost ([`crate::boost::BoostPolicy`]) and
//! the sched_ext feed ([`crate::scx_feed_policy::ScxFeedPolicy`]) are such plug-ins; changing one
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

use lull_actuate::freezer::Freezer;
use lull_sched::seam::SeamPolicy;
use serde::Serialize;

use crate::guis::GuisHost;
use crate::scx_feed::ScxFeed;

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
    pub(crate) names: Vec<&'static str>,
    pub(crate) writers: Vec<(Knob, &'static str)>,
}

impl PolicyTable {
    /// Whether a policy named `name` is on.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.names.contains(&name)
    }

    pub(crate) fn check(&self, name: &'static str, writes: &[Knob]) -> Result<(), PolicyError> {
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
