//! A kprobe that counts the calls of one kernel function: a hand-assembled BPF program adds 1
//! to a one-element array map on every hit, attached through a perf event of the kprobe PMU
//! (`perf_event_open(2)`, then `PERF_EVENT_IOC_SET_BPF`), the way libbpf attaches kprobes
//! without tracefs.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;

use super::syscall::{
    self, last_errno, BpfError, Insn, Map, MapSpec, MapType, ProgType, Reg, Size, BPF_ANY,
    HELPER_MAP_LOOKUP_ELEM,
};

/// The kprobe PMU's dynamic type number.
const KPROBE_PMU_TYPE: &str = "/sys/bus/event_source/devices/kprobe/type";
/// `KSYM_NAME_LEN`: the longest symbol name the kernel copies from `config1`, with its NUL.
const KSYM_NAME_LEN: usize = 512;
/// The one element of the count map.
const KEY: [u8; 4] = 0u32.to_ne_bytes();
/// The name of the map and of the program.
const OBJ_NAME: &str = "lull_kcount";

/// `PERF_ATTR_SIZE_VER1`: `struct perf_event_attr` up to `config2`, all a kprobe needs.
const PERF_ATTR_SIZE_VER1: u32 = 72;
/// `attr.disabled`, bit 0 of the flag word: the event starts off until `PERF_EVENT_IOC_ENABLE`.
const PERF_ATTR_FLAG_DISABLED: u64 = 1;
/// `PERF_FLAG_FD_CLOEXEC`.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// `PERF_EVENT_IOC_ENABLE`, `_IO('$', 0)` in `linux/perf_event.h`.
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
/// `PERF_EVENT_IOC_DISABLE`, `_IO('$', 1)`.
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
/// `PERF_EVENT_IOC_SET_BPF`, `_IOW('$', 8, __u32)`.
const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;

/// `struct perf_event_attr` up to `config2` ([`PERF_ATTR_SIZE_VER1`] bytes).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    /// For the kprobe PMU: bit 0 is `retprobe` (`format/retprobe` says `config:0`); clear here.
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    /// `kprobe_func`: a pointer to the symbol's NUL-terminated name.
    config1: u64,
    /// `probe_offset`: bytes into the function; 0 is its entry.
    config2: u64,
}

/// The counting program for count map `map`:
///
/// ```text
/// r1 = map
/// *(u32 *)(r10 - 4) = 0           key 0 on the stack
/// r2 = r10; r2 += -4
/// call bpf_map_lookup_elem        r0 = &value, or 0
/// if r0 == 0 goto out
/// r1 = 1
/// lock *(u64 *)(r0 + 0) += r1     hits on several CPUs at once all count
/// out: r0 = 0
/// exit
/// ```
#[must_use]
pub fn counter_program(map: BorrowedFd<'_>) -> Vec<Insn> {
    let mut p = Insn::ld_map_fd(Reg::R1, map).to_vec();
    p.extend([
        Insn::st_mem(Size::W, Reg::R10, -4, 0),
        Insn::mov64_reg(Reg::R2, Reg::R10),
        Insn::add64_imm(Reg::R2, -4),
        Insn::call(HELPER_MAP_LOOKUP_ELEM),
        Insn::jeq_imm(Reg::R0, 0, 2),
        Insn::mov64_imm(Reg::R1, 1),
        Insn::atomic_add(Size::DW, Reg::R0, Reg::R1, 0),
        Insn::mov64_imm(Reg::R0, 0),
        Insn::exit(),
    ]);
    p
}

fn check_symbol(symbol: &str) -> Result<CString, BpfError> {
    if symbol.is_empty() || symbol.len() >= KSYM_NAME_LEN {
        return Err(BpfError::InvalidArgument(format!(
            "kernel symbol {symbol:?}: 1 to {} bytes",
            KSYM_NAME_LEN - 1
        )));
    }
    CString::new(symbol)
        .map_err(|_| BpfError::InvalidArgument(format!("kernel symbol {symbol:?} holds NUL")))
}

/// The kprobe PMU's type number.
fn kprobe_pmu_type() -> Result<u32, BpfError> {
    let path = Path::new(KPROBE_PMU_TYPE);
    let text = std::fs::read_to_string(path).map_err(|e| {
        BpfError::Unsupported(format!(
            "{}: {e} (kernel without CONFIG_KPROBE_EVENTS or the kprobe PMU)",
            path.display()
        ))
    })?;
    text.trim().parse().map_err(|_| {
        BpfError::Unsupported(format!(
            "{} holds {:?}, not a number",
            path.display(),
            text.trim()
        ))
    })
}

fn ioctl(
    fd: BorrowedFd<'_>,
    request: libc::c_ulong,
    arg: libc::c_int,
    what: &str,
) -> Result<(), BpfError> {
    // SAFETY: the perf ioctls used here take an int argument by value (a descriptor or 0).
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), request, arg) };
    if r < 0 {
        Err(BpfError::Os {
            what: what.to_string(),
            errno: last_errno(),
        })
    } else {
        Ok(())
    }
}

/// Counts calls of one kernel function from the moment it is attached. Dropping it detaches
/// the probe and frees the program and the map.
#[derive(Debug)]
pub struct KprobeCounter {
    // Declared in the order they are released: the perf event (which holds the program), then
    // the program, then the map.
    perf: OwnedFd,
    _prog: OwnedFd,
    map: Map,
    symbol: String,
}

impl KprobeCounter {
    /// Loads the counting program and attaches it to a kprobe at the entry of `symbol`.
    ///
    /// # Errors
    /// `InvalidArgument` for a bad symbol name; `Unsupported` without the kprobe PMU; `Os`
    /// from `perf_event_open` (`ENOENT`/`EINVAL`: no such symbol, or one kprobes may not
    /// probe); `Verifier`/`Syscall` from loading (`EPERM` without root).
    pub fn attach(symbol: &str) -> Result<KprobeCounter, BpfError> {
        let csym = check_symbol(symbol)?;
        let pmu = kprobe_pmu_type()?;
        let map = Map::create(&MapSpec::new(MapType::Array, OBJ_NAME, 4, 8, 1))?;
        map.update(&KEY, &0u64.to_ne_bytes(), BPF_ANY)?;
        let prog = syscall::prog_load(
            ProgType::Kprobe,
            OBJ_NAME,
            &counter_program(map.as_fd()),
            "GPL",
        )?;
        let attr = PerfEventAttr {
            type_: pmu,
            size: PERF_ATTR_SIZE_VER1,
            flags: PERF_ATTR_FLAG_DISABLED,
            config1: csym.as_ptr() as usize as u64,
            ..PerfEventAttr::default()
        };
        // pid -1 with cpu 0 is how libbpf opens a kprobe event: it fires on every CPU for every
        // task (the program runs before the event's CPU filter), the CPU only owns the event.
        // Hand-written: `rustix` has no `perf_event_open`.
        // SAFETY: `attr` is a valid perf_event_attr of `attr.size` bytes; `csym` outlives the
        // call (the kernel copies the name).
        let r = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &raw const attr,
                -1 as libc::pid_t,
                0 as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if r < 0 {
            return Err(BpfError::Os {
                what: format!("perf_event_open (kprobe on {symbol})"),
                errno: last_errno(),
            });
        }
        let fd = libc::c_int::try_from(r).map_err(|_| BpfError::InvalidArgument("fd".into()))?;
        // SAFETY: a fresh descriptor from the kernel that nobody else owns.
        let perf = unsafe { OwnedFd::from_raw_fd(fd) };
        ioctl(
            perf.as_fd(),
            PERF_EVENT_IOC_SET_BPF,
            prog.as_raw_fd(),
            "PERF_EVENT_IOC_SET_BPF",
        )?;
        ioctl(
            perf.as_fd(),
            PERF_EVENT_IOC_ENABLE,
            0,
            "PERF_EVENT_IOC_ENABLE",
        )?;
        Ok(KprobeCounter {
            perf,
            _prog: prog,
            map,
            symbol: symbol.to_string(),
        })
    }

    /// The probed symbol.
    #[must_use]
    pub fn symbol(&self) -> &str {
        &self.symbol
    }

    /// Calls counted since [`KprobeCounter::attach`].
    ///
    /// # Errors
    /// The kernel's errno from the map lookup.
    pub fn count(&self) -> Result<u64, BpfError> {
        let mut v = [0u8; 8];
        self.map.lookup_into(&KEY, &mut v)?;
        Ok(u64::from_ne_bytes(v))
    }
}

impl Drop for KprobeCounter {
    fn drop(&mut self) {
        // Stop counting first; closing the event (next, with the fields) detaches the program.
        let _ = ioctl(
            self.perf.as_fd(),
            PERF_EVENT_IOC_DISABLE,
            0,
            "PERF_EVENT_IOC_DISABLE",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_attr_has_the_ver1_layout() {
        assert_eq!(
            std::mem::size_of::<PerfEventAttr>(),
            PERF_ATTR_SIZE_VER1 as usize
        );
        assert_eq!(std::mem::offset_of!(PerfEventAttr, flags), 40);
        assert_eq!(std::mem::offset_of!(PerfEventAttr, config1), 56);
    }

    #[test]
    fn the_program_skips_the_add_when_the_lookup_fails() {
        // SAFETY (test): an fd number only; nothing is read through it.
        let fd = unsafe { BorrowedFd::borrow_raw(5) };
        let p = counter_program(fd);
        assert_eq!(p.len(), 11);
        assert_eq!(p[0].imm, 5);
        let jeq = p
            .iter()
            .position(|i| *i == Insn::jeq_imm(Reg::R0, 0, 2))
            .unwrap();
        // The jump lands on `r0 = 0`, past the add.
        assert_eq!(p[jeq + 1 + 2], Insn::mov64_imm(Reg::R0, 0));
        assert_eq!(p[jeq + 2], Insn::atomic_add(Size::DW, Reg::R0, Reg::R1, 0));
        assert_eq!(*p.last().unwrap(), Insn::exit());
    }

    #[test]
    fn symbols_are_checked() {
        assert!(check_symbol("input_event").is_ok());
        assert!(check_symbol("").is_err());
        assert!(check_symbol("a\0b").is_err());
        assert!(check_symbol(&"x".repeat(KSYM_NAME_LEN)).is_err());
    }

    /// Where the host allows BPF and has the kprobe PMU (root on most kernels), the program
    /// passes the verifier and counts this thread's own system calls.
    #[test]
    fn counts_on_the_host_when_it_can() {
        let Ok(kallsyms) = std::fs::read_to_string("/proc/kallsyms") else {
            return;
        };
        let Some(sym) = ["__x64_sys_getppid", "__arm64_sys_getppid"]
            .into_iter()
            .find(|s| {
                kallsyms
                    .lines()
                    .any(|l| l.split_whitespace().nth(2) == Some(*s))
            })
        else {
            return;
        };
        let c = match KprobeCounter::attach(sym) {
            Ok(c) => c,
            Err(BpfError::Verifier { log, .. }) => panic!("verifier refused:\n{log}"),
            Err(_) => return, // no privilege or no kprobes here
        };
        let before = c.count().unwrap();
        for _ in 0..100 {
            let _ = rustix::process::getppid();
        }
        assert!(c.count().unwrap() >= before + 100);
    }

    #[test]
    fn an_unknown_symbol_is_an_error() {
        assert!(KprobeCounter::attach("lull_no_such_function_anywhere").is_err());
    }
}
