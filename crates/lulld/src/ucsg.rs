//! UCSG (seed 001) in the daemon: [`UcsgPolicy`], a plug-in ([`crate::policy`]) that puts
//! `lull_sched::ucsg::live::UcsgSeam` on the policy seam, with what it needs that guiS does not — the kernel's proc connector (every
//! fork and exit, [`lull_os::proc_connector`]) and the seam's deadline timer (UCSG's 200 ms
//! sampling period and 500 ms expiry) — and says what this machine lets it do.
//!
//! What UCSG manages: the threads apps declare to the display server, every task their processes
//! create (threads, and child processes such as a compressor an app spawns), and the processes
//! the configuration names ([`UcsgConfig::manage`]). Every other process on the machine — system
//! daemons, shells, the kernel's threads — is left alone.
//!
//! What degrades, and how it is said ([`UcsgStatus`]):
//! - **Not root**: the proc connector needs `CAP_NET_ADMIN`, negative nice values need
//!   `CAP_SYS_NICE`. UCSG still runs on the declared threads; tasks they create are not seen, and
//!   the actuator counts the nice values the kernel refused (`EPERM`).
//! - **No cpufreq** (this machine): frequency actions are counted unavailable, with the reason.
//! - **cgroup v2 without the cpuset or cpu controller**: CPU masks are set with
//!   `sched_setaffinity`, which needs no cgroup; the status names the controllers cgroup v2 lacks.
//! - **One cluster**: cluster switching has nothing to switch to (counted by the policy).
//! - **Hotplug**: never done live (it would take CPUs from every process on the machine); DPM
//!   acts through the placement of the managed threads.

use std::fmt;

use lull_os::sys;
use lull_os::topology::Topology;
use lull_sched::ids::CpuId;
use lull_sched::ucsg::live::{LiveMachine, UcsgSeam};
use serde::Serialize;

use lull_actuate::freezer;

use crate::policy::{Armed, FactSource, Installed, Knob, Policy};

/// Longest process name the kernel keeps (`TASK_COMM_LEN` − 1).
pub const COMM_MAX_BYTES: usize = 15;

/// How to run UCSG in the daemon.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct UcsgConfig {
    /// Names (`/proc/PID/comm`) of processes owned by no app that UCSG should manage as system
    /// processes (medium).
    pub manage: Vec<String>,
}

/// A bad UCSG configuration.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum UcsgConfigError {
    #[error("process name {0:?} to manage is empty")]
    EmptyName(String),
    #[error("process name {name:?} to manage is longer than the kernel's {COMM_MAX_BYTES} bytes")]
    NameTooLong { name: String },
    #[error("process name {0:?} to manage holds a '/' or a control character")]
    BadName(String),
    #[error("process name {0:?} is listed twice")]
    Duplicate(String),
    #[error("UCSG cannot run on this machine: {0}")]
    Machine(String),
}

impl UcsgConfig {
    /// Checks the names.
    ///
    /// # Errors
    /// [`UcsgConfigError`] naming the first bad one.
    pub fn validate(&self) -> Result<(), UcsgConfigError> {
        for (i, n) in self.manage.iter().enumerate() {
            if n.is_empty() {
                return Err(UcsgConfigError::EmptyName(n.clone()));
            }
            if n.len() > COMM_MAX_BYTES {
                return Err(UcsgConfigError::NameTooLong { name: n.clone() });
            }
            if n.chars().any(|c| c == '/' || c.is_control()) {
                return Err(UcsgConfigError::BadName(n.clone()));
            }
            if self.manage[..i].contains(n) {
                return Err(UcsgConfigError::Duplicate(n.clone()));
            }
        }
        Ok(())
    }
}

/// What [`crate::daemon::Daemon::enable_ucsg`] found this machine lets UCSG do.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct UcsgStatus {
    pub topology: Topology,
    /// `None`: the proc connector listens; else why it does not.
    pub proc_connector_unavailable: Option<String>,
    /// `None`: negative nice values can be set; else why not.
    pub negative_nice_unavailable: Option<String>,
    /// `None`: cpufreq is there; else why frequency actions are unavailable.
    pub frequency_unavailable: Option<String>,
    /// Per cgroup v2 controller UCSG could use (`cpuset`, `cpu`), why it is not available, if it
    /// is not. CPU masks never need it (`sched_setaffinity`).
    pub cgroup_v2_unavailable: Vec<(String, String)>,
    pub cluster_switching: bool,
}

impl fmt::Display for UcsgStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "UCSG on: {} CPU(s) in {} cluster(s)",
            self.topology.online.len(),
            self.topology.clusters.len()
        )?;
        if !self.cluster_switching {
            f.write_str("; cluster switching unavailable (one cluster)")?;
        }
        f.write_str("; hotplug not done live (DPM acts by placement)")?;
        if let Some(why) = &self.proc_connector_unavailable {
            write!(
                f,
                "; UCSG live needs root: {why} — tasks apps create are not seen"
            )?;
        }
        if let Some(why) = &self.negative_nice_unavailable {
            write!(f, "; {why}")?;
        }
        if let Some(why) = &self.frequency_unavailable {
            write!(f, "; frequency unavailable ({why})")?;
        }
        for (c, why) in &self.cgroup_v2_unavailable {
            write!(
                f,
                "; cgroup v2 {c} unavailable ({why}); masks use sched_setaffinity"
            )?;
        }
        Ok(())
    }
}

/// The controllers UCSG could use from cgroup v2, and why each is not there.
fn cgroup_v2_gaps() -> Vec<(String, String)> {
    let wanted = ["cpuset", "cpu"];
    match freezer::cgroup2_controllers() {
        Ok((mount, have)) => wanted
            .iter()
            .filter(|w| !have.iter().any(|h| h == *w))
            .map(|w| {
                (
                    (*w).to_owned(),
                    format!(
                        "not enabled in cgroup v2 at {} (bound to cgroup v1 or disabled)",
                        mount.display()
                    ),
                )
            })
            .collect(),
        Err(why) => wanted
            .iter()
            .map(|w| ((*w).to_owned(), why.to_string()))
            .collect(),
    }
}

/// The machine as UCSG numbers it.
fn live_machine(t: &Topology) -> LiveMachine {
    LiveMachine {
        clusters: t
            .clusters
            .iter()
            .map(|c| c.iter().map(|&i| CpuId(i as usize)).collect())
            .collect(),
        levels_khz: t.levels_khz.clone(),
    }
}

/// UCSG as a plug-in of the daemon ([`crate::policy`]): it needs the proc connector and the
/// deadline timer, and writes nice values, CPU masks and frequencies.
#[derive(Debug)]
pub struct UcsgPolicy {
    policy: UcsgSeam,
    manage: Vec<String>,
}

impl UcsgPolicy {
    /// UCSG for this machine's CPUs, managing the processes `config` names too.
    ///
    /// # Errors
    /// [`UcsgConfigError`] for a bad configuration or CPUs UCSG cannot describe.
    pub fn new(config: &UcsgConfig, topology: &Topology) -> Result<UcsgPolicy, UcsgConfigError> {
        config.validate()?;
        let policy = UcsgSeam::new(&live_machine(topology), sys::monotonic_ns())
            .map_err(|e| UcsgConfigError::Machine(e.to_string()))?;
        Ok(UcsgPolicy {
            policy,
            manage: config.manage.clone(),
        })
    }
}

impl Policy for UcsgPolicy {
    fn name(&self) -> &'static str {
        "ucsg"
    }

    fn needs(&self) -> Vec<FactSource> {
        vec![FactSource::ProcessEvents, FactSource::DeadlineTimer]
    }

    fn writes(&self) -> Vec<Knob> {
        vec![Knob::Nice, Knob::Affinity, Knob::Frequency]
    }

    fn install(self: Box<Self>) -> Installed {
        Installed {
            seam: Some(Box::new(self.policy)),
            adopt_names: self.manage,
            ..Installed::default()
        }
    }
}

impl UcsgStatus {
    /// What this machine lets UCSG do on `topology`, once the host armed what it needs.
    #[must_use]
    pub fn new(topology: Topology, armed: &Armed) -> UcsgStatus {
        let negative_nice_unavailable = (sys::geteuid() != 0).then(|| {
            "not root: the kernel refuses negative nice values without CAP_SYS_NICE \
             (counted as EPERM)"
                .to_owned()
        });
        UcsgStatus {
            cluster_switching: topology.is_big_little(),
            topology,
            proc_connector_unavailable: armed.process_events_unavailable.clone(),
            negative_nice_unavailable,
            frequency_unavailable: armed.frequency_unavailable.clone(),
            cgroup_v2_unavailable: cgroup_v2_gaps(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_names_get_typed_errors() {
        let c = |v: &[&str]| UcsgConfig {
            manage: v.iter().map(|s| (*s).to_owned()).collect(),
        };
        assert_eq!(c(&["sshd", "cron"]).validate(), Ok(()));
        assert!(matches!(
            c(&[""]).validate(),
            Err(UcsgConfigError::EmptyName(_))
        ));
        assert!(matches!(
            c(&["a-name-of-sixteen"]).validate(),
            Err(UcsgConfigError::NameTooLong { .. })
        ));
        assert!(matches!(
            c(&["a/b"]).validate(),
            Err(UcsgConfigError::BadName(_))
        ));
        assert!(matches!(
            c(&["x", "x"]).validate(),
            Err(UcsgConfigError::Duplicate(_))
        ));
    }
}
