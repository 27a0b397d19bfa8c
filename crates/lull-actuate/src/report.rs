//! What the actuator reports: per action kind, how many were applied, put off, refused (by the
//! kernel's errno or the actuator's own reason) and not available on this machine (and why).

use std::collections::BTreeMap;
use std::fmt;

use lull_os::sys::Errno;
use lull_sched::seam::ActionKind;
use serde::Serialize;

use crate::freezer::FreezerError;

/// Why an action was not applied, for counting.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Refusal {
    /// The kernel said no.
    Errno(Errno),
    /// The thread's process no longer has the start time its `ThreadRef` carries: the pid names
    /// another process now, which is never acted on.
    Stale,
    /// The actuator declined for a reason of its own, named here (`not_fair`, `already_threaded`,
    /// ...).
    Declined(&'static str),
}

impl Refusal {
    /// The name reports count it under: the errno's (`EPERM`, `ESRCH`, ...), `stale`, or the
    /// actuator's reason.
    #[must_use]
    pub fn key(self) -> String {
        match self {
            Refusal::Errno(e) => e
                .name()
                .map_or_else(|| format!("errno {}", e.0), str::to_owned),
            Refusal::Stale => "stale".to_owned(),
            Refusal::Declined(why) => why.to_owned(),
        }
    }

    pub(crate) const ESRCH: Refusal = Refusal::Errno(Errno::ESRCH);

    /// A failure of the freezer as a refusal.
    pub(crate) fn of_freezer(e: &FreezerError) -> Refusal {
        match e {
            FreezerError::Io { source, .. } => source
                .raw_os_error()
                .map_or(Refusal::Declined("io"), |n| Refusal::Errno(Errno(n))),
            FreezerError::ThreadNotFound { .. } => Refusal::ESRCH,
            FreezerError::PidReused { .. } => Refusal::Stale,
            FreezerError::AlreadyThreaded { .. } => Refusal::Declined("already_threaded"),
            FreezerError::AlreadyAdopted { .. } => Refusal::Declined("already_adopted"),
            FreezerError::NotAdopted { .. } => Refusal::Declined("not_adopted"),
            FreezerError::BadName { .. } => Refusal::Declined("bad_label"),
            FreezerError::Parse { .. } => Refusal::Declined("unreadable_cgroup"),
            FreezerError::NotV2 { .. } => Refusal::Declined("cgroup_v1"),
            FreezerError::Timeout { .. } => Refusal::Declined("timeout"),
            FreezerError::Unavailable { .. } | FreezerError::NamespaceInUse { .. } => {
                Refusal::Declined("no_freezer")
            }
        }
    }
}

/// What became of one action.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Outcome {
    /// The thread (or CPU) is now as asked, by a change or because it already was.
    Applied,
    /// Not done now, and not refused: a freeze of a thread parked in a futex wait (freezing it
    /// could stall its siblings); the policy asks again at its next fact.
    PutOff,
    Refused(Refusal),
    /// This machine has no way to do it (no freezer, no cpufreq, no cpu controller in cgroup
    /// v2, a kernel without custom slices): the kind's report says why.
    Unavailable,
}

/// One action kind's counts.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct KindReport {
    pub applied: u64,
    /// Freezes put off (the thread was parked in a futex wait with no timeout).
    pub put_off: u64,
    /// Refused, by errno name (`EPERM`, `ESRCH`, `EINVAL`, ...), `stale` (the thread's process
    /// is no longer the one its `ThreadRef` names) or the actuator's reason.
    pub refused: BTreeMap<String, u64>,
    /// Asked for but not available on this machine.
    pub unavailable: u64,
    /// Why this kind cannot be done here, when it cannot (known from the start or learnt at
    /// the first try).
    pub unavailable_reason: Option<String>,
}

impl KindReport {
    /// Refusals of every reason.
    #[must_use]
    pub fn refused_total(&self) -> u64 {
        self.refused.values().sum()
    }

    /// Refusals counted under `key`.
    #[must_use]
    pub fn refused_as(&self, key: &str) -> u64 {
        self.refused.get(key).copied().unwrap_or(0)
    }

    pub(crate) fn count(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Applied => self.applied += 1,
            Outcome::PutOff => self.put_off += 1,
            Outcome::Unavailable => self.unavailable += 1,
            Outcome::Refused(r) => {
                let key = r.key();
                match self.refused.get_mut(&key) {
                    Some(n) => *n += 1,
                    None => {
                        self.refused.insert(key, 1);
                    }
                }
            }
        }
    }
}

/// The actuator's report: one [`KindReport`] per action kind, in [`ActionKind::ALL`]'s order.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct ActuatorReport {
    pub nice: KindReport,
    pub slice: KindReport,
    pub affinity: KindReport,
    pub freeze: KindReport,
    pub thaw: KindReport,
    pub cpu_weight: KindReport,
    pub frequency: KindReport,
    pub release: KindReport,
    pub restore_sched: KindReport,
}

impl ActuatorReport {
    #[must_use]
    pub fn kind(&self, k: ActionKind) -> &KindReport {
        match k {
            ActionKind::Nice => &self.nice,
            ActionKind::Slice => &self.slice,
            ActionKind::Affinity => &self.affinity,
            ActionKind::Freeze => &self.freeze,
            ActionKind::Thaw => &self.thaw,
            ActionKind::CpuWeight => &self.cpu_weight,
            ActionKind::Frequency => &self.frequency,
            ActionKind::Release => &self.release,
            ActionKind::RestoreSched => &self.restore_sched,
        }
    }

    pub(crate) fn kind_mut(&mut self, k: ActionKind) -> &mut KindReport {
        match k {
            ActionKind::Nice => &mut self.nice,
            ActionKind::Slice => &mut self.slice,
            ActionKind::Affinity => &mut self.affinity,
            ActionKind::Freeze => &mut self.freeze,
            ActionKind::Thaw => &mut self.thaw,
            ActionKind::CpuWeight => &mut self.cpu_weight,
            ActionKind::Frequency => &mut self.frequency,
            ActionKind::Release => &mut self.release,
            ActionKind::RestoreSched => &mut self.restore_sched,
        }
    }

    /// The kinds this machine cannot do, with the reason: what `lulld` says at start.
    pub fn unavailable_here(&self) -> impl Iterator<Item = (ActionKind, &str)> {
        ActionKind::ALL
            .into_iter()
            .filter_map(|k| Some((k, self.kind(k).unavailable_reason.as_deref()?)))
    }
}

impl fmt::Display for ActuatorReport {
    /// One clause per kind that was asked for or cannot be done here, e.g. `freeze: 1 applied,
    /// 2 put off; frequency: unavailable here (no cpufreq …)`; `nothing asked` otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for k in ActionKind::ALL {
            let r = self.kind(k);
            let asked = r.applied + r.put_off + r.refused_total() + r.unavailable;
            if asked == 0 && r.unavailable_reason.is_none() {
                continue;
            }
            f.write_str(if first { "" } else { "; " })?;
            first = false;
            write!(f, "{}:", k.name())?;
            let mut parts = Vec::new();
            if asked > 0 {
                parts.push(format!("{} applied", r.applied));
            }
            if r.put_off > 0 {
                parts.push(format!("{} put off", r.put_off));
            }
            for (why, n) in &r.refused {
                parts.push(format!("{n} refused {why}"));
            }
            if r.unavailable > 0 {
                parts.push(format!("{} unavailable", r.unavailable));
            }
            if let Some(why) = &r.unavailable_reason {
                parts.push(format!("unavailable here ({why})"));
            }
            write!(f, " {}", parts.join(", "))?;
        }
        if first {
            f.write_str("nothing asked")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_outcome_and_prints_what_happened() {
        let mut r = ActuatorReport::default();
        r.kind_mut(ActionKind::Freeze).count(Outcome::Applied);
        r.kind_mut(ActionKind::Freeze).count(Outcome::PutOff);
        r.kind_mut(ActionKind::Nice)
            .count(Outcome::Refused(Refusal::Errno(Errno::EPERM)));
        r.kind_mut(ActionKind::Nice)
            .count(Outcome::Refused(Refusal::Errno(Errno::EPERM)));
        r.kind_mut(ActionKind::Nice)
            .count(Outcome::Refused(Refusal::Stale));
        r.kind_mut(ActionKind::Nice)
            .count(Outcome::Refused(Refusal::Errno(Errno(4095))));
        r.frequency.unavailable_reason = Some("no cpufreq".into());
        r.kind_mut(ActionKind::Frequency)
            .count(Outcome::Unavailable);
        assert_eq!(r.nice.refused_as("EPERM"), 2);
        assert_eq!(r.nice.refused_as("stale"), 1);
        assert_eq!(r.nice.refused_as("errno 4095"), 1);
        assert_eq!(r.nice.refused_total(), 4);
        assert_eq!(
            r.to_string(),
            "nice: 0 applied, 2 refused EPERM, 1 refused errno 4095, 1 refused stale; \
             freeze: 1 applied, 1 put off; \
             frequency: 0 applied, 1 unavailable, unavailable here (no cpufreq)"
        );
        assert_eq!(
            r.unavailable_here().collect::<Vec<_>>(),
            [(ActionKind::Frequency, "no cpufreq")]
        );
        assert_eq!(ActuatorReport::default().to_string(), "nothing asked");
        let json = serde_json::to_value(&r).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), ActionKind::ALL.len());
        for k in ActionKind::ALL {
            assert!(json.get(k.name()).is_some(), "{}", k.name());
        }
        assert_eq!(json["nice"]["refused"]["EPERM"], 2);
    }
}
