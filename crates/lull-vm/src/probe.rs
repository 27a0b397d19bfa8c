//! `lull lab vm --probe`: what the guest's kernel offers that Lull uses.

use std::path::Path;

use serde::Serialize;

use crate::boot::Accel;
use crate::error::VmError;

/// The shell program run in the guest: one `key=value` line per fact.
pub const PROBE_SCRIPT: &str = r#"yn() { if "$@" >/dev/null 2>&1; then echo yes; else echo no; fi; }
echo "release=$(uname -r)"
echo "cpus=$(nproc)"
echo "mem_kib=$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo)"
echo "sched_ext=$(cat /sys/kernel/sched_ext/state 2>/dev/null || echo absent)"
echo "btf=$(yn test -e /sys/kernel/btf/vmlinux)"
echo "uinput=$(yn test -c /dev/uinput)"
echo "input_devices=$(ls /dev/input 2>/dev/null | grep '^event' | tr '\n' ' ')"
echo "hid_bpf=$(yn grep -qx CONFIG_HID_BPF=y /boot/config-$(uname -r))"
echo "bpffs=$(yn grep -q ' /sys/fs/bpf bpf ' /proc/mounts)"
echo "tracefs=$(yn test -e /sys/kernel/tracing/trace)"
echo "cgroup2=$(yn test -e /sys/fs/cgroup/cgroup.controllers)"
echo "cpufreq=$(yn test -d /sys/devices/system/cpu/cpu0/cpufreq)"
"#;

/// What the guest has.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct GuestFacts {
    pub kernel_release: String,
    pub cpus: u32,
    pub mem_mib: u64,
    /// `/sys/kernel/sched_ext/state` (`disabled` when supported and nothing is loaded), or
    /// `absent` when the kernel has no sched_ext.
    pub sched_ext: String,
    /// `/sys/kernel/btf/vmlinux` (CO-RE BPF programs need it).
    pub btf: bool,
    pub uinput: bool,
    /// `/dev/input/event*` present at boot.
    pub input_devices: Vec<String>,
    pub hid_bpf: bool,
    pub bpffs: bool,
    pub tracefs: bool,
    pub cgroup2: bool,
    pub cpufreq: bool,
}

/// A probe's facts with how the guest ran.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeReport {
    #[serde(flatten)]
    pub facts: GuestFacts,
    pub accel: Accel,
    pub boot_ms: u64,
    pub wall_ms: u64,
    pub cache_dir: String,
    pub cache_bytes: u64,
}

/// Reads the probe script's output.
pub fn parse_facts(text: &str) -> Result<GuestFacts, VmError> {
    let get = |key: &str| -> Result<&str, VmError> {
        text.lines()
            .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
            .map(str::trim)
            .ok_or_else(|| VmError::Parse {
                what: "probe output",
                detail: format!("no {key}= line in {text:?}"),
            })
    };
    let yes = |key: &str| -> Result<bool, VmError> {
        match get(key)? {
            "yes" => Ok(true),
            "no" => Ok(false),
            other => Err(VmError::Parse {
                what: "probe output",
                detail: format!("{key}={other}: expected yes or no"),
            }),
        }
    };
    let num = |key: &str| -> Result<u64, VmError> {
        get(key)?.parse().map_err(|_| VmError::Parse {
            what: "probe output",
            detail: format!("{key} is not a number"),
        })
    };
    Ok(GuestFacts {
        kernel_release: get("release")?.to_string(),
        cpus: u32::try_from(num("cpus")?).unwrap_or(u32::MAX),
        mem_mib: num("mem_kib")? / 1024,
        sched_ext: get("sched_ext")?.to_string(),
        btf: yes("btf")?,
        uinput: yes("uinput")?,
        input_devices: get("input_devices")?
            .split_whitespace()
            .map(str::to_string)
            .collect(),
        hid_bpf: yes("hid_bpf")?,
        bpffs: yes("bpffs")?,
        tracefs: yes("tracefs")?,
        cgroup2: yes("cgroup2")?,
        cpufreq: yes("cpufreq")?,
    })
}

impl ProbeReport {
    /// The report as text, one fact a line.
    #[must_use]
    pub fn to_text(&self) -> String {
        let f = &self.facts;
        let yn = |b: bool| if b { "yes" } else { "no" };
        let devices = if f.input_devices.is_empty() {
            "none".to_string()
        } else {
            f.input_devices.join(" ")
        };
        format!(
            "lab guest: Linux {} ({}, {} CPUs, {} MiB)\n\
             sched_ext       {}\n\
             BTF             {}\n\
             uinput          {}\n\
             input devices   {}\n\
             HID-BPF         {}\n\
             bpffs           {}\n\
             tracefs         {}\n\
             cgroup2         {}\n\
             cpufreq         {}\n\
             boot to command {:.1} s, whole run {:.1} s (host wall time)\n\
             cache           {} ({:.1} MB)",
            f.kernel_release,
            self.accel.name(),
            f.cpus,
            f.mem_mib,
            f.sched_ext,
            yn(f.btf),
            yn(f.uinput),
            devices,
            yn(f.hid_bpf),
            yn(f.bpffs),
            yn(f.tracefs),
            yn(f.cgroup2),
            yn(f.cpufreq),
            self.boot_ms as f64 / 1e3,
            self.wall_ms as f64 / 1e3,
            self.cache_dir,
            self.cache_bytes as f64 / 1e6,
        )
    }
}

/// Where the probe's scratch output goes.
#[must_use]
pub fn scratch_dir(cache_root: &Path) -> std::path::PathBuf {
    cache_root.join(format!("probe-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "release=7.3.4+deb13-amd64\ncpus=2\nmem_kib=2014512\nsched_ext=disabled\n\
        btf=yes\nuinput=yes\ninput_devices=event0 \nhid_bpf=yes\nbpffs=yes\ntracefs=yes\n\
        cgroup2=yes\ncpufreq=no\n";

    #[test]
    fn facts_parse() {
        let f = parse_facts(SAMPLE).unwrap();
        assert_eq!(f.kernel_release, "7.3.4+deb13-amd64");
        assert_eq!((f.cpus, f.mem_mib), (2, 1967));
        assert_eq!(f.sched_ext, "disabled");
        assert!(f.btf && f.uinput && f.hid_bpf && !f.cpufreq);
        assert_eq!(f.input_devices, vec!["event0"]);
    }

    #[test]
    fn missing_or_garbled_facts_are_errors() {
        let no_btf = SAMPLE.replace("btf=yes\n", "");
        assert!(
            matches!(parse_facts(&no_btf), Err(VmError::Parse { detail, .. }) if detail.contains("btf"))
        );
        let garbled = SAMPLE.replace("uinput=yes", "uinput=maybe");
        assert!(parse_facts(&garbled).is_err());
        let bad_cpus = SAMPLE.replace("cpus=2", "cpus=two");
        assert!(parse_facts(&bad_cpus).is_err());
        assert!(parse_facts("").is_err());
    }
}
