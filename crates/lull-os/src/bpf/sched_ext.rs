//! A sched_ext scheduler with no BPF program in it, and the state sched_ext reports in sysfs.
//!
//! sched_ext treats every callback of `struct sched_ext_ops` as optional: without
//! `ops.enqueue` a runnable task goes to the global dispatch queue, and every CPU takes tasks
//! from it in FIFO order. So a `sched_ext_ops` whose only field is its `name` is a complete
//! scheduler. It is registered by creating a `BPF_MAP_TYPE_STRUCT_OPS` map whose value is the
//! kernel's `struct bpf_struct_ops_sched_ext_ops` (its layout read from vmlinux's BTF) and
//! updating element 0 (`bpf_struct_ops_map_update_elem` calls the subsystem's `reg`, that is
//! sched_ext's enable); deleting element 0 unregisters it (`unreg`, sched_ext's disable).
//!
//! Without `BPF_F_LINK` the registered map holds a reference to itself: closing its descriptor
//! does not unregister it. [`SchedExtScheduler`] therefore deletes the element when dropped; a
//! process killed before that leaves the scheduler loaded until `bpftool struct_ops
//! unregister id N` (the map id is [`SchedExtScheduler::map_id`]) or sysrq-S.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::btf::{Btf, BtfBuilder, BtfError};
use super::syscall::{self, BpfError, Map, MapSpec, MapType, BPF_ANY};
use crate::sys::Errno;

/// sched_ext's sysfs directory; present only on a kernel with `CONFIG_SCHED_CLASS_EXT`.
pub const SCHED_EXT_SYSFS: &str = "/sys/kernel/sched_ext";
/// The struct_ops value type: `bpf_struct_ops_` followed by the `struct bpf_struct_ops`'s name
/// (`kernel/bpf/bpf_struct_ops.c`, `BPF_STRUCT_OPS_TYPE_PREFIX`).
pub const VALUE_TYPE_NAME: &str = "bpf_struct_ops_sched_ext_ops";
/// The scheduler's name inside the value: `data` is the `struct sched_ext_ops`.
const NAME_FIELD: &str = "data.name";
/// The name the struct_ops map itself gets (map names are at most 15 bytes).
const MAP_NAME: &str = "lull_sched_ext";
/// The one element of a struct_ops map.
const KEY: [u8; 4] = 0u32.to_ne_bytes();

/// Why sched_ext cannot be read or a scheduler registered.
#[derive(Debug, thiserror::Error)]
pub enum SchedExtError {
    #[error("sched_ext not supported: {0}")]
    NotSupported(String),
    #[error("invalid scheduler name {name:?}: {reason}")]
    InvalidName { name: String, reason: String },
    #[error("sched_ext state file says {0:?}, which is no known state")]
    UnknownState(String),
    #[error("another sched_ext scheduler ({loaded}) is loaded")]
    AlreadyLoaded { loaded: String },
    #[error("the kernel accepted scheduler {name:?} but sched_ext is {state:?} right after (the kernel log says why)")]
    NotEnabled { name: String, state: SchedExtState },
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
    #[error(transparent)]
    Btf(#[from] BtfError),
    #[error(transparent)]
    Bpf(#[from] BpfError),
}

/// What `/sys/kernel/sched_ext/state` says (`scx_enable_state_str` in `kernel/sched/ext.c`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SchedExtState {
    Enabling,
    Enabled,
    Disabling,
    Disabled,
}

impl SchedExtState {
    /// The state named by the file's text (surrounding white space ignored).
    ///
    /// # Errors
    /// `UnknownState` for any other text.
    pub fn parse(text: &str) -> Result<SchedExtState, SchedExtError> {
        match text.trim() {
            "enabling" => Ok(SchedExtState::Enabling),
            "enabled" => Ok(SchedExtState::Enabled),
            "disabling" => Ok(SchedExtState::Disabling),
            "disabled" => Ok(SchedExtState::Disabled),
            other => Err(SchedExtError::UnknownState(other.to_string())),
        }
    }
}

fn sysfs_dir(root: &Path) -> Result<&Path, SchedExtError> {
    if root.is_dir() {
        Ok(root)
    } else {
        Err(SchedExtError::NotSupported(format!(
            "no {} (kernel built without CONFIG_SCHED_CLASS_EXT)",
            root.display()
        )))
    }
}

fn read_text(path: &Path) -> Result<String, SchedExtError> {
    std::fs::read_to_string(path).map_err(|source| SchedExtError::Io {
        path: path.display().to_string(),
        source,
    })
}

fn state_at(root: &Path) -> Result<SchedExtState, SchedExtError> {
    SchedExtState::parse(&read_text(&sysfs_dir(root)?.join("state"))?)
}

fn root_ops_at(root: &Path) -> Result<Option<String>, SchedExtError> {
    let path: PathBuf = sysfs_dir(root)?.join("root/ops");
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text.trim().to_string())),
        // The `root` directory exists only while a scheduler is loaded.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SchedExtError::Io {
            path: path.display().to_string(),
            source,
        }),
    }
}

/// sched_ext's state now.
///
/// # Errors
/// `NotSupported` without sched_ext; `UnknownState`; `Io`.
pub fn state() -> Result<SchedExtState, SchedExtError> {
    state_at(Path::new(SCHED_EXT_SYSFS))
}

/// The name of the loaded root scheduler (`/sys/kernel/sched_ext/root/ops`), `None` when none
/// is loaded.
///
/// # Errors
/// `NotSupported` without sched_ext; `Io`.
pub fn root_ops() -> Result<Option<String>, SchedExtError> {
    root_ops_at(Path::new(SCHED_EXT_SYSFS))
}

/// How many times a scheduler has been enabled since boot (`enable_seq`).
///
/// # Errors
/// `NotSupported` without sched_ext; `Io`, or `UnknownState` for text that is no number.
pub fn enable_seq() -> Result<u64, SchedExtError> {
    let text = read_text(&sysfs_dir(Path::new(SCHED_EXT_SYSFS))?.join("enable_seq"))?;
    text.trim()
        .parse()
        .map_err(|_| SchedExtError::UnknownState(text.trim().to_string()))
}

/// Checks a scheduler name as `bpf_obj_name_cpy` does for `sched_ext_ops.name` (letters,
/// digits, `_` and `.`; not empty) and that it fits the field with its NUL.
fn check_name(name: &str, field_bytes: usize) -> Result<(), SchedExtError> {
    let bad = |reason: String| SchedExtError::InvalidName {
        name: name.to_string(),
        reason,
    };
    if name.is_empty() {
        return Err(bad("empty".into()));
    }
    if name.len() >= field_bytes {
        return Err(bad(format!(
            "longer than {} bytes",
            field_bytes.saturating_sub(1)
        )));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '.'))
    {
        return Err(bad(format!("{c:?} is not a letter, digit, '_' or '.'")));
    }
    Ok(())
}

/// The struct_ops value with every field zero but the name: where the value type lies in
/// vmlinux's BTF, and the bytes.
fn value_for(btf: &Btf, name: &str) -> Result<(u32, Vec<u8>), SchedExtError> {
    let vt = btf.find_struct(VALUE_TYPE_NAME).map_err(|e| match e {
        BtfError::NotFound { .. } => SchedExtError::NotSupported(format!(
            "vmlinux BTF has no struct {VALUE_TYPE_NAME} (sched_ext not built in)"
        )),
        other => other.into(),
    })?;
    let field = btf.member_layout(vt.id, NAME_FIELD)?;
    let (at, len) = (field.byte_offset as usize, field.size_bytes as usize);
    check_name(name, len)?;
    let mut value = vec![0u8; vt.size_bytes as usize];
    // A field reaching past the struct would be a malformed BTF; `name` is shorter than it.
    let slot = at
        .checked_add(len)
        .filter(|&end| end <= value.len())
        .and_then(|_| value.get_mut(at..at + name.len()))
        .ok_or(SchedExtError::Btf(BtfError::Overflow(vt.id)))?;
    slot.copy_from_slice(name.as_bytes());
    Ok((vt.id, value))
}

/// The program BTF a struct_ops map must name (`map_create` refuses one without, and refuses
/// vmlinux's own): the smallest blob the kernel accepts, one `int`.
fn placeholder_btf() -> Vec<u8> {
    let mut b = BtfBuilder::new();
    b.int("int", 4, true);
    b.build()
}

/// A registered sched_ext scheduler with no BPF programs: every task the fair class had runs
/// from the global dispatch queue in FIFO order. Unregistered by [`unregister`] or on drop.
///
/// [`unregister`]: SchedExtScheduler::unregister
#[derive(Debug)]
pub struct SchedExtScheduler {
    map: Map,
    /// The placeholder program BTF, kept open with the map for tidiness (the map holds its own
    /// reference).
    _btf: OwnedFd,
    name: String,
    registered: bool,
}

impl SchedExtScheduler {
    /// Registers the scheduler `name`. The kernel enables sched_ext within the update call,
    /// so on success sched_ext reports [`SchedExtState::Enabled`] at once.
    ///
    /// # Errors
    /// `NotSupported` without sched_ext or vmlinux BTF; `InvalidName`; `AlreadyLoaded` when
    /// another scheduler is loaded; `NotEnabled` when the kernel took the value but sched_ext
    /// did not come up; `Bpf` for what the kernel refused (`EPERM` without root).
    pub fn register(name: &str) -> Result<SchedExtScheduler, SchedExtError> {
        let root = Path::new(SCHED_EXT_SYSFS);
        sysfs_dir(root)?;
        let btf = match Btf::vmlinux() {
            Err(BtfError::Io { path, source }) if source.kind() == io::ErrorKind::NotFound => {
                return Err(SchedExtError::NotSupported(format!(
                    "no {path} (kernel built without CONFIG_DEBUG_INFO_BTF)"
                )))
            }
            other => other?,
        };
        let (value_type_id, value) = value_for(&btf, name)?;
        let prog_btf = syscall::btf_load(&placeholder_btf())?;
        let map = Map::create(&MapSpec {
            btf_fd: Some(prog_btf.as_fd()),
            btf_vmlinux_value_type_id: value_type_id,
            ..MapSpec::new(MapType::StructOps, MAP_NAME, 4, value.len() as u32, 1)
        })?;
        match map.update(&KEY, &value, BPF_ANY) {
            Ok(()) => {}
            Err(BpfError::Syscall { errno, .. }) if errno == Errno(libc::EBUSY) => {
                let loaded = root_ops_at(root)
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| "unnamed".into());
                return Err(SchedExtError::AlreadyLoaded { loaded });
            }
            Err(e) => return Err(e.into()),
        }
        let scheduler = SchedExtScheduler {
            map,
            _btf: prog_btf,
            name: name.to_string(),
            registered: true,
        };
        // sched_ext's enable reports a failure after it has allocated the scheduler through
        // its exit path, not the update's return value: the update succeeds and sched_ext is
        // disabled again by the time it returns. Dropping `scheduler` releases the map.
        match state_at(root)? {
            SchedExtState::Enabled => Ok(scheduler),
            state => Err(SchedExtError::NotEnabled {
                name: name.to_string(),
                state,
            }),
        }
    }

    /// The scheduler's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The struct_ops map's id (for `bpftool struct_ops show id N`).
    ///
    /// # Errors
    /// The kernel's errno.
    pub fn map_id(&self) -> Result<u32, SchedExtError> {
        Ok(self.map.info()?.id)
    }

    /// Unregisters the scheduler: the kernel starts sched_ext's disable and waits for its
    /// worker before the call returns; tasks go back to the fair class.
    ///
    /// # Errors
    /// The kernel's errno (`ENOENT` if something else unregistered it first).
    pub fn unregister(mut self) -> Result<(), SchedExtError> {
        self.registered = false;
        self.map.delete(&KEY)?;
        Ok(())
    }
}

impl Drop for SchedExtScheduler {
    fn drop(&mut self) {
        if self.registered {
            let _ = self.map.delete(&KEY);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::btf::{BtfBuilder, BtfKind};

    #[test]
    fn states_parse_and_unknown_text_is_an_error() {
        assert_eq!(
            SchedExtState::parse("enabled\n").unwrap(),
            SchedExtState::Enabled
        );
        assert_eq!(
            SchedExtState::parse("disabled\n").unwrap(),
            SchedExtState::Disabled
        );
        assert_eq!(
            SchedExtState::parse("enabling").unwrap(),
            SchedExtState::Enabling
        );
        assert_eq!(
            SchedExtState::parse(" disabling ").unwrap(),
            SchedExtState::Disabling
        );
        assert!(matches!(
            SchedExtState::parse("prepping"),
            Err(SchedExtError::UnknownState(s)) if s == "prepping"
        ));
        assert!(matches!(
            SchedExtState::parse(""),
            Err(SchedExtError::UnknownState(_))
        ));
    }

    #[test]
    fn a_kernel_without_sched_ext_is_not_supported() {
        // A directory that does not exist: a fresh private one's child.
        let scratch = crate::fileout::ScratchDir::new("lull-scx-none").unwrap();
        let dir = scratch.path().join("sched_ext");
        let err = state_at(&dir).unwrap_err();
        assert!(matches!(err, SchedExtError::NotSupported(_)));
        assert!(err.to_string().contains("CONFIG_SCHED_CLASS_EXT"), "{err}");
        assert!(matches!(
            root_ops_at(&dir),
            Err(SchedExtError::NotSupported(_))
        ));
        // On this host, whichever it is, the real paths agree with each other.
        if !Path::new(SCHED_EXT_SYSFS).exists() {
            assert!(matches!(state(), Err(SchedExtError::NotSupported(_))));
            assert!(matches!(
                SchedExtScheduler::register("lull_probe"),
                Err(SchedExtError::NotSupported(_))
            ));
        }
    }

    #[test]
    fn reads_a_sysfs_directory() {
        let scratch = crate::fileout::ScratchDir::new("lull-scx-fake").unwrap();
        let dir = scratch.path().to_path_buf();
        std::fs::write(dir.join("state"), "enabled\n").unwrap();
        assert_eq!(state_at(&dir).unwrap(), SchedExtState::Enabled);
        assert_eq!(root_ops_at(&dir).unwrap(), None);
        std::fs::create_dir_all(dir.join("root")).unwrap();
        std::fs::write(dir.join("root/ops"), "lull_probe\n").unwrap();
        assert_eq!(root_ops_at(&dir).unwrap().as_deref(), Some("lull_probe"));
        std::fs::write(dir.join("state"), "weird\n").unwrap();
        assert!(matches!(
            state_at(&dir),
            Err(SchedExtError::UnknownState(_))
        ));
    }

    /// A BTF shaped like the kernel's: `common` (8 bytes), then `data` cache-line aligned,
    /// whose `name` is a `char[128]` after 8 bytes of callbacks.
    fn fake_vmlinux() -> Btf {
        let mut b = BtfBuilder::new();
        let int = b.int("int", 4, true);
        let ch = b.int("char", 1, true);
        let name = b.array(ch, int, 128);
        let ptr = b.ptr(int);
        let ops = b.composite(
            BtfKind::Struct,
            "sched_ext_ops",
            136,
            &[("enqueue", ptr, 0), ("name", name, 64)],
        );
        let common = b.composite(
            BtfKind::Struct,
            "bpf_struct_ops_common_value",
            8,
            &[("refcnt", int, 0), ("state", int, 32)],
        );
        b.composite(
            BtfKind::Struct,
            VALUE_TYPE_NAME,
            256,
            &[("common", common, 0), ("data", ops, 512)],
        );
        Btf::parse(&b.build()).unwrap()
    }

    #[test]
    fn the_value_is_zero_but_the_name() {
        let btf = fake_vmlinux();
        let (id, v) = value_for(&btf, "lull_probe").unwrap();
        assert_eq!(
            id,
            btf.find_by_name(VALUE_TYPE_NAME, BtfKind::Struct).unwrap()
        );
        assert_eq!(v.len(), 256);
        assert_eq!(&v[72..82], b"lull_probe");
        assert!(v[..72].iter().chain(&v[82..]).all(|&b| b == 0));
    }

    #[test]
    fn bad_names_are_refused_before_the_kernel() {
        let btf = fake_vmlinux();
        for bad in ["", "has space", "dash-ed", "ünï", &"x".repeat(128)] {
            assert!(
                matches!(value_for(&btf, bad), Err(SchedExtError::InvalidName { .. })),
                "{bad:?}"
            );
        }
        assert!(value_for(&btf, &"x".repeat(127)).is_ok());
        let empty = Btf::parse(&BtfBuilder::new().build()).unwrap();
        assert!(matches!(
            value_for(&empty, "a"),
            Err(SchedExtError::NotSupported(_))
        ));
    }

    #[test]
    fn the_placeholder_btf_parses() {
        let btf = Btf::parse(&placeholder_btf()).unwrap();
        assert_eq!(btf.type_count(), 1);
        assert_eq!(
            btf.type_size(btf.find_by_name("int", BtfKind::Int).unwrap())
                .unwrap(),
            4
        );
    }

    /// The host's own BTF, when it has sched_ext built in, lays the value out as expected.
    #[test]
    fn the_host_btf_has_the_value_type_if_sched_ext_is_built() {
        let Ok(btf) = Btf::vmlinux() else { return };
        let Ok(vt) = btf.find_struct(VALUE_TYPE_NAME) else {
            return;
        };
        let name = btf.member_layout(vt.id, NAME_FIELD).unwrap();
        assert_eq!(name.size_bytes, 128); // SCX_OPS_NAME_LEN
        assert!(name.byte_offset + name.size_bytes <= vt.size_bytes);
    }
}
