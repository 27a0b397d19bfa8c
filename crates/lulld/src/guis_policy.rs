//! guiS as a plug-in of the daemon ([`crate::policy`]): [`GuisPolicy`] hands the host table 1
//! for the seam, the cgroup freezer it writes and idle forcing ([`crate::guis`], which the daemon
//! hosts). Apart from [`crate::guis`] so that the plug-in interface can name idle forcing
//! without the two modules importing each other.

use lull_actuate::freezer::{Freezer, FreezerError};
use lull_sched::guis::Table1;

use crate::guis::{GuisConfig, GuisError, GuisHost, GuisStatus, IdleAction, KernelEnforcement};
use crate::policy::{FactSource, Installed, Knob, Policy};

/// guiS as a plug-in of the daemon ([`crate::policy`]): table 1 on the seam and idle forcing;
/// it needs the display server's facts (and, with an idle action, every wait as it happens),
/// and writes the cgroup freezer.
#[derive(Debug)]
pub struct GuisPolicy {
    freezer: Result<Freezer, String>,
    pub(crate) status: GuisStatus,
}

impl GuisPolicy {
    /// guiS with `config` (which must be enabled), its freezer opened when this machine has one.
    ///
    /// # Errors
    /// [`GuisError::Freezer`] for a bad namespace, or when a running daemon holds the namespace's
    /// cgroup directory (one a dead daemon left is adopted: thawed, emptied and removed;
    /// [`GuisStatus::recovered`] says what was done).
    pub fn new(config: &GuisConfig) -> Result<GuisPolicy, GuisError> {
        let mut recovered = None;
        let (freezer, kernel) = match Freezer::open(&config.freezer_namespace) {
            Ok(f) => {
                recovered = f.recovered().cloned();
                let kernel = KernelEnforcement::Active {
                    kind: f.kind(),
                    cgroup_root: f.root().to_owned(),
                };
                (Ok(f), kernel)
            }
            Err(e @ FreezerError::Unavailable { .. }) => {
                let reason = if lull_os::sys::geteuid() == 0 {
                    e.to_string()
                } else {
                    format!("not root, and the cgroup freezer needs root: {e}")
                };
                (
                    Err(reason.clone()),
                    KernelEnforcement::Unavailable { reason },
                )
            }
            Err(e) => return Err(GuisError::Freezer(e)),
        };
        let status = GuisStatus {
            kernel,
            idle_action: config.idle_action.clone(),
            recovered,
        };
        Ok(GuisPolicy { freezer, status })
    }
}

impl Policy for GuisPolicy {
    fn name(&self) -> &'static str {
        "guis"
    }

    fn needs(&self) -> Vec<FactSource> {
        let mut needs = vec![FactSource::DisplayServer];
        // Idle forcing acts when the last app waits: it must see that wait as it happens.
        if self.status.idle_action != IdleAction::None {
            needs.push(FactSource::EveryWait);
        }
        needs
    }

    fn writes(&self) -> Vec<Knob> {
        vec![Knob::Freezer]
    }

    fn install(self: Box<Self>) -> Installed {
        Installed {
            seam: Some(Box::new(Table1::new())),
            freezer: Some(self.freezer),
            idle: Some(GuisHost::new(self.status)),
            ..Installed::default()
        }
    }
}
