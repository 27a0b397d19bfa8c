//! Thin wrappers over `bpf(2)` (`include/uapi/linux/bpf.h`): maps, BTF objects, programs and
//! pinning, each refused with a typed [`BpfError`] carrying the kernel's errno (and, for a
//! program, the verifier's log); and [`Insn`], the encoding of the few instructions the
//! hand-assembled programs of this module use.
//!
//! Each command's `union bpf_attr` member is a `#[repr(C)]` struct here with explicit padding,
//! passed with its own size: the kernel zero-extends a shorter attr, so fields newer than the
//! ones written here read as zero.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::sys::Errno;

// Commands (`enum bpf_cmd`).
const BPF_MAP_CREATE: libc::c_int = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_int = 1;
const BPF_MAP_UPDATE_ELEM: libc::c_int = 2;
const BPF_MAP_DELETE_ELEM: libc::c_int = 3;
const BPF_PROG_LOAD: libc::c_int = 5;
const BPF_OBJ_PIN: libc::c_int = 6;
const BPF_OBJ_GET: libc::c_int = 7;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_int = 15;
const BPF_BTF_LOAD: libc::c_int = 18;

/// `BPF_OBJ_NAME_LEN`: a map's or program's name, with its NUL.
pub const OBJ_NAME_LEN: usize = 16;
/// `BPF_ANY`: create the element or replace it.
pub const BPF_ANY: u64 = 0;
/// `BPF_NOEXIST`: create the element only if it is not there.
pub const BPF_NOEXIST: u64 = 1;
/// `BPF_EXIST`: replace the element only if it is there.
pub const BPF_EXIST: u64 = 2;
/// `BPF_F_LINK` (map flag): a struct_ops map registered through a link rather than by its
/// update; not used here (the map's update registers it).
pub const BPF_F_LINK: u32 = 1 << 13;

/// Bytes of verifier (or BTF checker) log asked for when a load fails: ample for the
/// few-instruction programs and one-type blobs here; a longer log is cut by the kernel
/// (`ENOSPC`), and what fits is still returned.
const LOG_BYTES: usize = 256 * 1024;
/// `log_level` 1: the verifier's basic log (`BPF_LOG_LEVEL1`).
const LOG_LEVEL_BASIC: u32 = 1;
/// Loads tried while the verifier answers `EAGAIN` (it can, under memory pressure): libbpf's
/// count (`sys_bpf_prog_load`, `tools/lib/bpf/bpf.c`).
const PROG_LOAD_ATTEMPTS: usize = 5;

/// Why a BPF object could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    #[error("bpf({cmd}): {errno}{}", hint(*errno))]
    Syscall { cmd: &'static str, errno: Errno },
    #[error("the verifier rejected program {prog:?}: {errno}{}\n{log}", hint(*errno))]
    Verifier {
        prog: String,
        errno: Errno,
        log: String,
    },
    #[error("the kernel rejected a BTF blob: {errno}\n{log}")]
    BtfRejected { errno: Errno, log: String },
    #[error("{what}: {errno}{}", hint(*errno))]
    Os { what: String, errno: Errno },
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("not supported by this kernel: {0}")]
    Unsupported(String),
    #[error("{what} is {got} bytes; the map's is {want}")]
    WrongSize {
        what: &'static str,
        got: usize,
        want: usize,
    },
}

/// A hint for the errors a missing privilege or kernel feature gives.
fn hint(errno: Errno) -> &'static str {
    match errno.0 {
        libc::EPERM | libc::EACCES => " (BPF needs root: CAP_BPF, CAP_PERFMON or CAP_SYS_ADMIN)",
        libc::ENOSYS => " (kernel built without CONFIG_BPF_SYSCALL)",
        _ => "",
    }
}

pub(crate) fn last_errno() -> Errno {
    Errno(io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// `bpf(cmd, attr, sizeof *attr)`. Hand-written: `rustix` has no `bpf`.
///
/// # Safety
/// `A` must be the `#[repr(C)]` prefix of the `union bpf_attr` member for `cmd`, with no
/// uninitialised padding, and every pointer in it must point at memory valid for what the
/// kernel does with it during the call (read or write as many bytes as the attr says).
unsafe fn sys_bpf<A>(cmd: libc::c_int, attr: &mut A) -> Result<libc::c_long, Errno> {
    // SAFETY: the caller vouches for `attr`; the size passed is its own.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            (attr as *mut A).cast::<libc::c_void>(),
            std::mem::size_of::<A>() as libc::c_uint,
        )
    };
    if r < 0 {
        Err(last_errno())
    } else {
        Ok(r)
    }
}

/// A descriptor returned by a `bpf` command.
fn owned_fd(r: libc::c_long) -> Result<OwnedFd, Errno> {
    let fd = libc::c_int::try_from(r).map_err(|_| Errno::EINVAL)?;
    // SAFETY: a fresh descriptor from the kernel that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// [`owned_fd`] of command `cmd`'s result, a failure named by the command.
fn kernel_fd(cmd: &'static str, r: libc::c_long) -> Result<OwnedFd, BpfError> {
    owned_fd(r).map_err(|errno| BpfError::Syscall { cmd, errno })
}

/// A pointer as the `__aligned_u64` the kernel reads.
fn ptr_u64<T>(p: *const T) -> u64 {
    p as usize as u64
}

/// Checks a map or program name as the kernel's `bpf_obj_name_cpy` does (letters, digits,
/// `_` and `.`, fewer than [`OBJ_NAME_LEN`] bytes) and returns it NUL-padded.
pub fn obj_name(name: &str) -> Result<[u8; OBJ_NAME_LEN], BpfError> {
    if name.len() >= OBJ_NAME_LEN
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
    {
        return Err(BpfError::InvalidArgument(format!(
            "BPF object name {name:?}: at most {} of [A-Za-z0-9_.]",
            OBJ_NAME_LEN - 1
        )));
    }
    let mut out = [0u8; OBJ_NAME_LEN];
    out[..name.len()].copy_from_slice(name.as_bytes());
    Ok(out)
}

/// Map types (`enum bpf_map_type`) this module creates: those whose value is one value for
/// all CPUs, so a value buffer of `value_size` bytes is the whole of it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum MapType {
    Hash,
    Array,
    /// A kernel structure of callbacks (`BPF_MAP_TYPE_STRUCT_OPS`), registered by its update.
    StructOps,
}

impl MapType {
    #[must_use]
    pub fn raw(self) -> u32 {
        match self {
            MapType::Hash => 1,
            MapType::Array => 2,
            MapType::StructOps => 26,
        }
    }
}

/// What [`Map::create`] asks for.
#[derive(Clone, Copy, Debug)]
pub struct MapSpec<'a> {
    pub map_type: MapType,
    pub name: &'a str,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub map_flags: u32,
    /// A program BTF object; the kernel requires one with `btf_vmlinux_value_type_id`.
    pub btf_fd: Option<BorrowedFd<'a>>,
    /// For struct_ops: the id of `bpf_struct_ops_<name>` in vmlinux's BTF.
    pub btf_vmlinux_value_type_id: u32,
}

impl<'a> MapSpec<'a> {
    /// A plain map of `map_type`, no flags, no BTF.
    #[must_use]
    pub fn new(
        map_type: MapType,
        name: &'a str,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
    ) -> MapSpec<'a> {
        MapSpec {
            map_type,
            name,
            key_size,
            value_size,
            max_entries,
            map_flags: 0,
            btf_fd: None,
            btf_vmlinux_value_type_id: 0,
        }
    }
}

/// The `BPF_MAP_CREATE` member of `union bpf_attr`, up to `map_token_fd`.
#[repr(C)]
#[derive(Default)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; OBJ_NAME_LEN],
    map_ifindex: u32,
    btf_fd: u32,
    btf_key_type_id: u32,
    btf_value_type_id: u32,
    btf_vmlinux_value_type_id: u32,
    map_extra: u64,
    value_type_btf_obj_fd: i32,
    map_token_fd: i32,
}

/// The `BPF_MAP_*_ELEM` member.
#[repr(C)]
struct MapElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// A BPF map, with the key and value sizes it was made with so that every access passes
/// buffers of exactly those sizes.
#[derive(Debug)]
pub struct Map {
    fd: OwnedFd,
    map_type: MapType,
    key_size: usize,
    value_size: usize,
}

impl Map {
    /// `BPF_MAP_CREATE`.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad name; the kernel's errno (`EINVAL` for sizes or flags the
    /// type refuses, `ENOTSUPP`/`EINVAL` for a struct_ops type it does not have).
    pub fn create(spec: &MapSpec<'_>) -> Result<Map, BpfError> {
        let mut attr = MapCreateAttr {
            map_type: spec.map_type.raw(),
            key_size: spec.key_size,
            value_size: spec.value_size,
            max_entries: spec.max_entries,
            map_flags: spec.map_flags,
            map_name: obj_name(spec.name)?,
            btf_fd: spec.btf_fd.map_or(0, |f| f.as_raw_fd() as u32),
            btf_vmlinux_value_type_id: spec.btf_vmlinux_value_type_id,
            ..MapCreateAttr::default()
        };
        // SAFETY: the BPF_MAP_CREATE attr; it holds no pointers.
        let r =
            unsafe { sys_bpf(BPF_MAP_CREATE, &mut attr) }.map_err(|errno| BpfError::Syscall {
                cmd: "BPF_MAP_CREATE",
                errno,
            })?;
        Ok(Map {
            fd: kernel_fd("BPF_MAP_CREATE", r)?,
            map_type: spec.map_type,
            key_size: spec.key_size as usize,
            value_size: spec.value_size as usize,
        })
    }

    #[must_use]
    pub fn map_type(&self) -> MapType {
        self.map_type
    }

    #[must_use]
    pub fn key_size(&self) -> usize {
        self.key_size
    }

    #[must_use]
    pub fn value_size(&self) -> usize {
        self.value_size
    }

    fn check(&self, key: &[u8], value: Option<usize>) -> Result<(), BpfError> {
        if key.len() != self.key_size {
            return Err(BpfError::WrongSize {
                what: "key",
                got: key.len(),
                want: self.key_size,
            });
        }
        match value {
            Some(got) if got != self.value_size => Err(BpfError::WrongSize {
                what: "value",
                got,
                want: self.value_size,
            }),
            _ => Ok(()),
        }
    }

    fn elem(
        &self,
        cmd: libc::c_int,
        name: &'static str,
        key: &[u8],
        value: u64,
        flags: u64,
    ) -> Result<(), BpfError> {
        let mut attr = MapElemAttr {
            map_fd: self.fd.as_raw_fd() as u32,
            _pad: 0,
            key: ptr_u64(key.as_ptr()),
            value,
            flags,
        };
        // SAFETY: the BPF_MAP_*_ELEM attr; `key` holds key_size bytes (checked by the caller),
        // `value` is 0 or points at value_size bytes the caller lent for this call.
        unsafe { sys_bpf(cmd, &mut attr) }
            .map(|_| ())
            .map_err(|errno| BpfError::Syscall { cmd: name, errno })
    }

    /// `BPF_MAP_UPDATE_ELEM` with `flags` ([`BPF_ANY`], [`BPF_NOEXIST`], [`BPF_EXIST`]). On a
    /// struct_ops map this registers the structure with its subsystem.
    ///
    /// # Errors
    /// `WrongSize`; the kernel's errno (for struct_ops, whatever the subsystem's `reg` said).
    pub fn update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<(), BpfError> {
        self.check(key, Some(value.len()))?;
        let v = ptr_u64(value.as_ptr());
        self.elem(BPF_MAP_UPDATE_ELEM, "BPF_MAP_UPDATE_ELEM", key, v, flags)
    }

    /// `BPF_MAP_LOOKUP_ELEM` into `value`.
    ///
    /// # Errors
    /// `WrongSize`; the kernel's errno (`ENOENT`: no such element).
    pub fn lookup_into(&self, key: &[u8], value: &mut [u8]) -> Result<(), BpfError> {
        self.check(key, Some(value.len()))?;
        let v = ptr_u64(value.as_mut_ptr());
        self.elem(BPF_MAP_LOOKUP_ELEM, "BPF_MAP_LOOKUP_ELEM", key, v, 0)
    }

    /// `BPF_MAP_LOOKUP_ELEM` into a new buffer.
    ///
    /// # Errors
    /// As [`Map::lookup_into`].
    pub fn lookup(&self, key: &[u8]) -> Result<Vec<u8>, BpfError> {
        let mut v = vec![0u8; self.value_size];
        self.lookup_into(key, &mut v)?;
        Ok(v)
    }

    /// `BPF_MAP_DELETE_ELEM`. On a struct_ops map this unregisters the structure.
    ///
    /// # Errors
    /// `WrongSize`; the kernel's errno (`ENOENT`: no such element or nothing registered;
    /// `EINVAL` for an array, whose elements cannot be deleted).
    pub fn delete(&self, key: &[u8]) -> Result<(), BpfError> {
        self.check(key, None)?;
        self.elem(BPF_MAP_DELETE_ELEM, "BPF_MAP_DELETE_ELEM", key, 0, 0)
    }

    /// What the kernel says about the map.
    ///
    /// # Errors
    /// The kernel's errno.
    pub fn info(&self) -> Result<MapInfo, BpfError> {
        map_info(self.fd.as_fd())
    }

    /// Opens a map another process pinned at `path` (`BPF_OBJ_GET`); its type and sizes are
    /// the kernel's. A type this layer does not name is [`BpfError::InvalidArgument`].
    ///
    /// # Errors
    /// The kernel's errno (`ENOENT`: nothing pinned there; `EPERM`: not root).
    pub fn open_pinned(path: &Path) -> Result<Map, BpfError> {
        let fd = obj_get(path)?;
        let info = map_info(fd.as_fd())?;
        let map_type = [MapType::Hash, MapType::Array, MapType::StructOps]
            .into_iter()
            .find(|t| t.raw() == info.map_type)
            .ok_or_else(|| {
                BpfError::InvalidArgument(format!(
                    "{}: map type {} is not one this layer handles",
                    path.display(),
                    info.map_type
                ))
            })?;
        Ok(Map {
            fd,
            map_type,
            key_size: info.key_size as usize,
            value_size: info.value_size as usize,
        })
    }
}

impl AsFd for Map {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The `BPF_BTF_LOAD` member, up to `btf_log_true_size`.
#[repr(C)]
#[derive(Default)]
struct BtfLoadAttr {
    btf: u64,
    btf_log_buf: u64,
    btf_size: u32,
    btf_log_size: u32,
    btf_log_level: u32,
    btf_log_true_size: u32,
}

/// The text of a log buffer the kernel filled: up to its first NUL.
fn log_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).trim_end().to_string()
}

/// `BPF_BTF_LOAD`: a BTF object for maps and programs to refer to. On failure it loads again
/// with a log, which the error carries.
///
/// # Errors
/// `BtfRejected` with the BTF checker's log; `InvalidArgument` for a blob over 4 GiB.
pub fn btf_load(blob: &[u8]) -> Result<OwnedFd, BpfError> {
    let size = u32::try_from(blob.len())
        .map_err(|_| BpfError::InvalidArgument("BTF blob over 4 GiB".into()))?;
    let mut attr = BtfLoadAttr {
        btf: ptr_u64(blob.as_ptr()),
        btf_size: size,
        ..BtfLoadAttr::default()
    };
    // SAFETY: the BPF_BTF_LOAD attr; `blob` holds `btf_size` bytes; no log buffer.
    let first = unsafe { sys_bpf(BPF_BTF_LOAD, &mut attr) };
    let errno = match first {
        Ok(r) => return kernel_fd("BPF_BTF_LOAD", r),
        Err(e) => e,
    };
    let mut log = vec![0u8; LOG_BYTES];
    attr.btf_log_buf = ptr_u64(log.as_mut_ptr());
    attr.btf_log_size = LOG_BYTES as u32;
    attr.btf_log_level = LOG_LEVEL_BASIC;
    // SAFETY: as above, with `log` writable for `btf_log_size` bytes.
    match unsafe { sys_bpf(BPF_BTF_LOAD, &mut attr) } {
        Ok(r) => kernel_fd("BPF_BTF_LOAD", r),
        Err(_) if log[0] == 0 => Err(BpfError::Syscall {
            cmd: "BPF_BTF_LOAD",
            errno,
        }),
        Err(_) => Err(BpfError::BtfRejected {
            errno,
            log: log_text(&log),
        }),
    }
}

/// Program types (`enum bpf_prog_type`) this module loads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ProgType {
    SocketFilter,
    /// Attached to a kprobe (or uprobe) perf event.
    Kprobe,
    Tracepoint,
}

impl ProgType {
    #[must_use]
    pub fn raw(self) -> u32 {
        match self {
            ProgType::SocketFilter => 1,
            ProgType::Kprobe => 2,
            ProgType::Tracepoint => 5,
        }
    }
}

/// The `BPF_PROG_LOAD` member, up to `log_true_size`.
#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; OBJ_NAME_LEN],
    prog_ifindex: u32,
    expected_attach_type: u32,
    prog_btf_fd: u32,
    func_info_rec_size: u32,
    func_info: u64,
    func_info_cnt: u32,
    line_info_rec_size: u32,
    line_info: u64,
    line_info_cnt: u32,
    attach_btf_id: u32,
    attach_prog_fd: u32,
    core_relo_cnt: u32,
    fd_array: u64,
    core_relos: u64,
    core_relo_rec_size: u32,
    log_true_size: u32,
}

/// `BPF_PROG_LOAD`: verifies and loads `insns`. When the verifier refuses, the program is
/// loaded again with the verifier's log on, and the error carries that log.
///
/// # Errors
/// `Verifier` with the log; `InvalidArgument` for a bad name, an empty program or a license
/// holding NUL.
pub fn prog_load(
    prog_type: ProgType,
    name: &str,
    insns: &[Insn],
    license: &str,
) -> Result<OwnedFd, BpfError> {
    let prog_name = obj_name(name)?;
    let license =
        CString::new(license).map_err(|_| BpfError::InvalidArgument("license holds NUL".into()))?;
    let insn_cnt = u32::try_from(insns.len())
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| BpfError::InvalidArgument(format!("{} instructions", insns.len())))?;
    let mut attr = ProgLoadAttr {
        prog_type: prog_type.raw(),
        insn_cnt,
        insns: ptr_u64(insns.as_ptr()),
        license: ptr_u64(license.as_ptr()),
        prog_name,
        ..ProgLoadAttr::default()
    };
    let load = |attr: &mut ProgLoadAttr| {
        let mut last = Errno::EINVAL;
        for _ in 0..PROG_LOAD_ATTEMPTS {
            // SAFETY: the BPF_PROG_LOAD attr; `insns` holds `insn_cnt` 8-byte instructions,
            // `license` is NUL-terminated, and the log buffer (if any) is writable for
            // `log_size` bytes — all live until the call returns.
            match unsafe { sys_bpf(BPF_PROG_LOAD, attr) } {
                Err(e) if e.0 == libc::EAGAIN => last = e,
                other => return other,
            }
        }
        Err(last)
    };
    let errno = match load(&mut attr) {
        Ok(r) => return kernel_fd("BPF_PROG_LOAD", r),
        Err(e) => e,
    };
    let mut log = vec![0u8; LOG_BYTES];
    attr.log_buf = ptr_u64(log.as_mut_ptr());
    attr.log_size = LOG_BYTES as u32;
    attr.log_level = LOG_LEVEL_BASIC;
    match load(&mut attr) {
        Ok(r) => kernel_fd("BPF_PROG_LOAD", r),
        // No log at all: refused before the verifier ran (privilege, a bad attr).
        Err(_) if log[0] == 0 => Err(BpfError::Syscall {
            cmd: "BPF_PROG_LOAD",
            errno,
        }),
        Err(_) => Err(BpfError::Verifier {
            prog: name.to_string(),
            errno,
            log: log_text(&log),
        }),
    }
}

/// The `BPF_OBJ_PIN`/`BPF_OBJ_GET` member.
#[repr(C)]
#[derive(Default)]
struct ObjAttr {
    pathname: u64,
    bpf_fd: u32,
    file_flags: u32,
    path_fd: i32,
    _pad: u32,
}

fn c_path(path: &Path) -> Result<CString, BpfError> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| BpfError::InvalidArgument(format!("{} holds NUL", path.display())))
}

/// `BPF_OBJ_PIN`: keeps a map or program alive at `path` in a bpffs (`/sys/fs/bpf/…`) after
/// its last descriptor is closed.
///
/// # Errors
/// The kernel's errno (`EPERM`/`EINVAL` outside a bpffs, `EEXIST`).
pub fn obj_pin(fd: BorrowedFd<'_>, path: &Path) -> Result<(), BpfError> {
    let cpath = c_path(path)?;
    let mut attr = ObjAttr {
        pathname: ptr_u64(cpath.as_ptr()),
        bpf_fd: fd.as_raw_fd() as u32,
        ..ObjAttr::default()
    };
    // SAFETY: the BPF_OBJ_PIN attr; `cpath` is NUL-terminated and lives for the call.
    unsafe { sys_bpf(BPF_OBJ_PIN, &mut attr) }
        .map(|_| ())
        .map_err(|errno| BpfError::Os {
            what: format!("pinning at {}", path.display()),
            errno,
        })
}

/// `BPF_OBJ_GET`: a descriptor for the object pinned at `path`.
///
/// # Errors
/// The kernel's errno (`ENOENT`).
pub fn obj_get(path: &Path) -> Result<OwnedFd, BpfError> {
    let cpath = c_path(path)?;
    let mut attr = ObjAttr {
        pathname: ptr_u64(cpath.as_ptr()),
        ..ObjAttr::default()
    };
    let os = |errno| BpfError::Os {
        what: format!("opening pinned {}", path.display()),
        errno,
    };
    // SAFETY: the BPF_OBJ_GET attr; `cpath` is NUL-terminated and lives for the call.
    let r = unsafe { sys_bpf(BPF_OBJ_GET, &mut attr) }.map_err(os)?;
    owned_fd(r).map_err(os)
}

/// The `BPF_OBJ_GET_INFO_BY_FD` member.
#[repr(C)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// `struct bpf_map_info`, up to `btf_value_type_id`.
#[repr(C)]
#[derive(Default)]
struct RawMapInfo {
    map_type: u32,
    id: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    name: [u8; OBJ_NAME_LEN],
    ifindex: u32,
    btf_vmlinux_value_type_id: u32,
    netns_dev: u64,
    netns_ino: u64,
    btf_id: u32,
    btf_key_type_id: u32,
    btf_value_type_id: u32,
    _pad: u32,
}

/// What the kernel reports about a map.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MapInfo {
    /// `enum bpf_map_type`.
    pub map_type: u32,
    /// The map's system-wide id (what `bpftool map show id N` takes).
    pub id: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub map_flags: u32,
    pub name: String,
    pub btf_vmlinux_value_type_id: u32,
}

/// `BPF_OBJ_GET_INFO_BY_FD` for a map.
///
/// # Errors
/// The kernel's errno (`EINVAL`/`EBADF` for a descriptor that is no BPF map).
pub fn map_info(fd: BorrowedFd<'_>) -> Result<MapInfo, BpfError> {
    let mut raw = RawMapInfo::default();
    let mut attr = InfoAttr {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: std::mem::size_of::<RawMapInfo>() as u32,
        info: ptr_u64(&raw mut raw),
    };
    // SAFETY: the BPF_OBJ_GET_INFO_BY_FD attr; `raw` is writable for `info_len` bytes.
    unsafe { sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr) }.map_err(|errno| BpfError::Syscall {
        cmd: "BPF_OBJ_GET_INFO_BY_FD",
        errno,
    })?;
    Ok(MapInfo {
        map_type: raw.map_type,
        id: raw.id,
        key_size: raw.key_size,
        value_size: raw.value_size,
        max_entries: raw.max_entries,
        map_flags: raw.map_flags,
        name: log_text(&raw.name),
        btf_vmlinux_value_type_id: raw.btf_vmlinux_value_type_id,
    })
}

// ---------------------------------------------------------------------------------------------
// Instructions (`struct bpf_insn`, `Documentation/bpf/standardization/instruction-set.rst`).

/// A BPF register.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Reg {
    /// Return value, and a helper's result.
    R0,
    /// Arguments 1 to 5 of a helper call (R1 holds the context on entry).
    R1,
    R2,
    R3,
    R4,
    R5,
    /// Callee-saved.
    R6,
    R7,
    R8,
    R9,
    /// The read-only frame pointer: the 512-byte stack lies below it.
    R10,
}

impl Reg {
    fn num(self) -> u8 {
        self as u8
    }
}

/// Width of a memory access.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Size {
    /// 8 bits (`BPF_B`).
    B,
    /// 16 bits (`BPF_H`).
    H,
    /// 32 bits (`BPF_W`).
    W,
    /// 64 bits (`BPF_DW`).
    DW,
}

impl Size {
    fn bits(self) -> u8 {
        match self {
            Size::W => 0x00,
            Size::H => 0x08,
            Size::B => 0x10,
            Size::DW => 0x18,
        }
    }
}

// Opcode parts.
const CLASS_LD: u8 = 0x00;
const CLASS_LDX: u8 = 0x01;
const CLASS_ST: u8 = 0x02;
const CLASS_STX: u8 = 0x03;
const CLASS_JMP: u8 = 0x05;
const CLASS_ALU64: u8 = 0x07;
const MODE_IMM: u8 = 0x00;
const MODE_MEM: u8 = 0x60;
const MODE_ATOMIC: u8 = 0xc0;
const SRC_K: u8 = 0x00;
const SRC_X: u8 = 0x08;
const ALU_ADD: u8 = 0x00;
const ALU_MOV: u8 = 0xb0;
const JMP_JA: u8 = 0x00;
const JMP_JEQ: u8 = 0x10;
const JMP_JNE: u8 = 0x50;
const JMP_CALL: u8 = 0x80;
const JMP_EXIT: u8 = 0x90;
/// `BPF_PSEUDO_MAP_FD`: the source register of a 64-bit immediate load whose immediate is a
/// map descriptor, which the verifier replaces by the map's address.
const PSEUDO_MAP_FD: u8 = 1;
/// `BPF_ADD` as an atomic operation (the immediate of a `BPF_ATOMIC` store).
const ATOMIC_ADD: i32 = 0x00;

/// Helper `bpf_map_lookup_elem(map, key)` (`BPF_FUNC_map_lookup_elem`): a pointer to the value,
/// or 0.
pub const HELPER_MAP_LOOKUP_ELEM: i32 = 1;

/// One BPF instruction: `struct bpf_insn` (opcode, destination and source register in one
/// byte, 16-bit offset, 32-bit immediate), in this machine's byte order.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Insn {
    pub code: u8,
    /// `dst_reg:4, src_reg:4` as C lays out the bit fields.
    pub regs: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    /// An instruction from its fields; `dst` and `src` are 4-bit register fields.
    fn encode(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        // C bit fields fill from the low bits on little-endian targets, from the high on big.
        let regs = if cfg!(target_endian = "little") {
            (src << 4) | (dst & 0x0f)
        } else {
            (dst << 4) | (src & 0x0f)
        };
        Insn {
            code,
            regs,
            off,
            imm,
        }
    }

    fn new(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> Insn {
        Insn::encode(code, dst.num(), src.num(), off, imm)
    }

    /// `dst = map` for map descriptor `fd`: a 64-bit immediate load, two instruction slots
    /// (the second holds the upper 32 bits of the immediate, 0 here).
    #[must_use]
    pub fn ld_map_fd(dst: Reg, fd: BorrowedFd<'_>) -> [Insn; 2] {
        let code = CLASS_LD | Size::DW.bits() | MODE_IMM;
        [
            Insn::encode(code, dst.num(), PSEUDO_MAP_FD, 0, fd.as_raw_fd()),
            Insn::encode(0, 0, 0, 0, 0),
        ]
    }

    /// `dst = imm` (64-bit, sign-extended).
    #[must_use]
    pub fn mov64_imm(dst: Reg, imm: i32) -> Insn {
        Insn::new(CLASS_ALU64 | ALU_MOV | SRC_K, dst, Reg::R0, 0, imm)
    }

    /// `dst = src`.
    #[must_use]
    pub fn mov64_reg(dst: Reg, src: Reg) -> Insn {
        Insn::new(CLASS_ALU64 | ALU_MOV | SRC_X, dst, src, 0, 0)
    }

    /// `dst += imm` (64-bit).
    #[must_use]
    pub fn add64_imm(dst: Reg, imm: i32) -> Insn {
        Insn::new(CLASS_ALU64 | ALU_ADD | SRC_K, dst, Reg::R0, 0, imm)
    }

    /// `*(size *)(dst + off) = imm`.
    #[must_use]
    pub fn st_mem(size: Size, dst: Reg, off: i16, imm: i32) -> Insn {
        Insn::new(CLASS_ST | MODE_MEM | size.bits(), dst, Reg::R0, off, imm)
    }

    /// `*(size *)(dst + off) = src`.
    #[must_use]
    pub fn stx_mem(size: Size, dst: Reg, src: Reg, off: i16) -> Insn {
        Insn::new(CLASS_STX | MODE_MEM | size.bits(), dst, src, off, 0)
    }

    /// `dst = *(size *)(src + off)`.
    #[must_use]
    pub fn ldx_mem(size: Size, dst: Reg, src: Reg, off: i16) -> Insn {
        Insn::new(CLASS_LDX | MODE_MEM | size.bits(), dst, src, off, 0)
    }

    /// `lock *(size *)(dst + off) += src`: an atomic add (`size` W or DW; the verifier refuses
    /// the others).
    #[must_use]
    pub fn atomic_add(size: Size, dst: Reg, src: Reg, off: i16) -> Insn {
        Insn::new(
            CLASS_STX | MODE_ATOMIC | size.bits(),
            dst,
            src,
            off,
            ATOMIC_ADD,
        )
    }

    /// Calls helper number `helper` (arguments in R1–R5, result in R0).
    #[must_use]
    pub fn call(helper: i32) -> Insn {
        Insn::new(CLASS_JMP | JMP_CALL, Reg::R0, Reg::R0, 0, helper)
    }

    /// `goto +off` (instructions after this one).
    #[must_use]
    pub fn ja(off: i16) -> Insn {
        Insn::new(CLASS_JMP | JMP_JA, Reg::R0, Reg::R0, off, 0)
    }

    /// `if dst == imm goto +off`.
    #[must_use]
    pub fn jeq_imm(dst: Reg, imm: i32, off: i16) -> Insn {
        Insn::new(CLASS_JMP | JMP_JEQ | SRC_K, dst, Reg::R0, off, imm)
    }

    /// `if dst != imm goto +off`.
    #[must_use]
    pub fn jne_imm(dst: Reg, imm: i32, off: i16) -> Insn {
        Insn::new(CLASS_JMP | JMP_JNE | SRC_K, dst, Reg::R0, off, imm)
    }

    /// `return R0`.
    #[must_use]
    pub fn exit() -> Insn {
        Insn::new(CLASS_JMP | JMP_EXIT, Reg::R0, Reg::R0, 0, 0)
    }

    /// The 8 bytes the kernel reads.
    #[must_use]
    pub fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = self.regs;
        b[2..4].copy_from_slice(&self.off.to_ne_bytes());
        b[4..].copy_from_slice(&self.imm.to_ne_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encodings as the kernel's own macros (`include/linux/filter.h`) produce them,
    /// little-endian, e.g. `BPF_STX_XADD(BPF_DW, BPF_REG_0, BPF_REG_1, 0)` is `db 10 00…`.
    #[test]
    #[cfg(target_endian = "little")]
    fn instructions_encode_as_the_kernel_macros() {
        let hex = |i: Insn| {
            i.to_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        assert_eq!(hex(Insn::mov64_imm(Reg::R0, 0)), "b700000000000000");
        assert_eq!(hex(Insn::mov64_imm(Reg::R1, 1)), "b701000001000000");
        assert_eq!(hex(Insn::mov64_reg(Reg::R2, Reg::R10)), "bfa2000000000000");
        assert_eq!(hex(Insn::add64_imm(Reg::R2, -4)), "07020000fcffffff");
        assert_eq!(
            hex(Insn::st_mem(Size::W, Reg::R10, -4, 0)),
            "620afcff00000000"
        );
        assert_eq!(
            hex(Insn::stx_mem(Size::DW, Reg::R10, Reg::R1, -8)),
            "7b1af8ff00000000"
        );
        assert_eq!(
            hex(Insn::ldx_mem(Size::DW, Reg::R0, Reg::R1, 8)),
            "7910080000000000"
        );
        assert_eq!(hex(Insn::call(HELPER_MAP_LOOKUP_ELEM)), "8500000001000000");
        assert_eq!(hex(Insn::jeq_imm(Reg::R0, 0, 2)), "1500020000000000");
        assert_eq!(hex(Insn::jne_imm(Reg::R1, 7, -3)), "5501fdff07000000");
        assert_eq!(hex(Insn::ja(1)), "0500010000000000");
        assert_eq!(
            hex(Insn::atomic_add(Size::DW, Reg::R0, Reg::R1, 0)),
            "db10000000000000"
        );
        assert_eq!(
            hex(Insn::atomic_add(Size::W, Reg::R0, Reg::R1, 4)),
            "c310040000000000"
        );
        assert_eq!(hex(Insn::exit()), "9500000000000000");
        // SAFETY (test): an fd number only; nothing is read through it.
        let fd = unsafe { BorrowedFd::borrow_raw(7) };
        let [a, b] = Insn::ld_map_fd(Reg::R1, fd);
        assert_eq!(hex(a), "1811000007000000");
        assert_eq!(hex(b), "0000000000000000");
    }

    #[test]
    fn an_instruction_is_eight_bytes() {
        assert_eq!(std::mem::size_of::<Insn>(), 8);
    }

    /// The attr structs have the sizes of the kernel's union members up to the last field
    /// written here (no implicit padding, which would reach the kernel uninitialised).
    #[test]
    fn attrs_have_the_kernel_layout() {
        assert_eq!(std::mem::size_of::<MapCreateAttr>(), 80);
        assert_eq!(
            std::mem::offset_of!(MapCreateAttr, btf_vmlinux_value_type_id),
            60
        );
        assert_eq!(std::mem::offset_of!(MapCreateAttr, map_extra), 64);
        assert_eq!(std::mem::size_of::<MapElemAttr>(), 32);
        assert_eq!(std::mem::size_of::<ProgLoadAttr>(), 144);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, prog_name), 48);
        assert_eq!(std::mem::offset_of!(ProgLoadAttr, fd_array), 120);
        assert_eq!(std::mem::size_of::<BtfLoadAttr>(), 32);
        assert_eq!(std::mem::size_of::<ObjAttr>(), 24);
        assert_eq!(std::mem::size_of::<InfoAttr>(), 16);
        assert_eq!(
            std::mem::offset_of!(RawMapInfo, btf_vmlinux_value_type_id),
            44
        );
        assert_eq!(std::mem::offset_of!(RawMapInfo, btf_value_type_id), 72);
    }

    #[test]
    fn object_names_are_checked_like_the_kernel() {
        assert_eq!(&obj_name("lull_probe").unwrap()[..11], b"lull_probe\0");
        assert!(obj_name("").is_ok());
        assert!(obj_name("a.b_C9").is_ok());
        assert!(obj_name("sixteen_chars_xx").is_err());
        assert!(obj_name("has space").is_err());
        assert!(obj_name("dash-ed").is_err());
    }

    #[test]
    fn logs_stop_at_their_nul() {
        assert_eq!(log_text(b"0: R1=ctx\nfail\n\0\0garbage"), "0: R1=ctx\nfail");
        assert_eq!(log_text(b""), "");
    }

    /// On any kernel (or without privilege) the wrappers answer with a typed error, not a
    /// panic; buffers of the wrong size never reach the kernel.
    #[test]
    fn bad_buffers_are_refused_before_the_kernel() {
        let Ok(map) = Map::create(&MapSpec::new(MapType::Array, "lull_t", 4, 8, 1)) else {
            return; // no BPF here (unprivileged, or no CONFIG_BPF_SYSCALL)
        };
        assert!(matches!(
            map.update(&[0; 3], &[0; 8], BPF_ANY),
            Err(BpfError::WrongSize {
                what: "key",
                got: 3,
                want: 4
            })
        ));
        assert!(matches!(
            map.lookup_into(&[0; 4], &mut [0; 9]),
            Err(BpfError::WrongSize { what: "value", .. })
        ));
        map.update(&0u32.to_ne_bytes(), &42u64.to_ne_bytes(), BPF_ANY)
            .unwrap();
        assert_eq!(
            map.lookup(&0u32.to_ne_bytes()).unwrap(),
            42u64.to_ne_bytes()
        );
        let info = map.info().unwrap();
        assert_eq!((info.map_type, info.key_size, info.value_size), (2, 4, 8));
        assert_eq!(info.name, "lull_t");
    }

    /// A program the verifier refuses (R0 is never set before `exit`) comes back as a
    /// `Verifier` error with the log that says why.
    #[test]
    fn a_refused_program_carries_the_verifier_log() {
        match prog_load(ProgType::SocketFilter, "lull_bad", &[Insn::exit()], "GPL") {
            Err(BpfError::Verifier { prog, log, .. }) => {
                assert_eq!(prog, "lull_bad");
                assert!(log.contains("R0 !read_ok"), "{log}");
            }
            Err(BpfError::Syscall { .. }) => {} // no BPF here
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            prog_load(ProgType::SocketFilter, "lull_empty", &[], "GPL"),
            Err(BpfError::InvalidArgument(_))
        ));
    }
}
