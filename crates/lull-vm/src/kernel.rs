//! The guest's kernel: Debian's packaged Linux from `trixie-backports`, fetched with the
//! machine's own `apt-get` into Lull's cache (the machine's apt configuration is not touched),
//! and the few modules the guest loads, unpacked.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::cache::{Cache, CacheLock};
use crate::error::VmError;

/// The kernel the lab machine boots unless told otherwise: the newest in Debian's
/// `trixie-backports` on 2026-11-27, the first Debian kernel line with `CONFIG_SCHED_CLASS_EXT=y`
/// (bookworm's 6.1 and bookworm-backports' 6.12 have none). Pinned so that runs compare; when the
/// archive has dropped it, the newest release there is taken instead and the run says so.
pub const DEFAULT_RELEASE: &str = "7.3.4+deb13-amd64";
/// The archive suite that serves it, and the archive the machine's apt already uses.
pub const SUITE: &str = "trixie-backports";
const ARCHIVE_URL: &str = "http://deb.debian.org/debian";
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Modules the guest loads at boot, in load order (each after what it needs): 9p over virtio
/// for the host's files, evdev and uinput for real input devices, hid and uhid for HID devices
/// (the HID-BPF path), overlay to give the guest a writable `/tmp` that still shows the host's.
pub const GUEST_MODULES: &[&str] = &[
    "netfs",
    "9pnet",
    "9pnet_virtio",
    "9p",
    "evdev",
    "uinput",
    "hid",
    "uhid",
    "overlay",
];

/// A kernel ready to boot, in the cache.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct KernelImage {
    /// `uname -r` inside the guest.
    pub release: String,
    /// The Debian package version it came from.
    pub package_version: String,
    pub vmlinuz: PathBuf,
    /// The kernel's build configuration (libbpf resolves Kconfig externs from
    /// `/boot/config-<release>`, so the guest gets it there).
    pub config: PathBuf,
    /// Uncompressed `.ko` files named as in [`GUEST_MODULES`].
    pub modules_dir: PathBuf,
}

const MANIFEST: &str = "manifest.json";

impl KernelImage {
    /// The kernel `release` (default [`DEFAULT_RELEASE`]) from the cache, fetching it first if
    /// it is not there. `log` hears what is being done (one line each).
    pub fn ensure(
        cache: &Cache,
        release: Option<&str>,
        log: &mut dyn FnMut(&str),
    ) -> Result<KernelImage, VmError> {
        let wanted = release.unwrap_or(DEFAULT_RELEASE);
        if let Some(k) = Self::cached(cache, wanted) {
            return Ok(k);
        }
        let _lock = CacheLock::take(cache)?;
        // Another process may have fetched it while this one waited for the lock.
        if let Some(k) = Self::cached(cache, wanted) {
            return Ok(k);
        }
        let apt = Apt::new(cache)?;
        apt.update(log)?;
        let available = apt.kernel_releases()?;
        let chosen = if available.iter().any(|r| r == wanted) {
            wanted.to_string()
        } else if release.is_none() && !available.is_empty() {
            let newest = available.last().cloned().unwrap_or_default();
            log(&format!(
                "lab vm: {DEFAULT_RELEASE} is no longer in {SUITE}; using its newest kernel, {newest}"
            ));
            if let Some(k) = Self::cached(cache, &newest) {
                return Ok(k);
            }
            newest
        } else {
            return Err(VmError::UnknownKernel {
                release: wanted.to_string(),
                suite: SUITE,
                available: if available.is_empty() {
                    "none".to_string()
                } else {
                    available.join(", ")
                },
            });
        };
        fetch(cache, &apt, &chosen, log)
    }

    /// The kernel `release` if the cache holds all of it.
    #[must_use]
    pub fn cached(cache: &Cache, release: &str) -> Option<KernelImage> {
        let text = fs::read_to_string(cache.kernel_dir(release).join(MANIFEST)).ok()?;
        let k: KernelImage = serde_json::from_str(&text).ok()?;
        let complete = k.vmlinuz.is_file()
            && k.config.is_file()
            && GUEST_MODULES
                .iter()
                .all(|m| k.modules_dir.join(format!("{m}.ko")).is_file());
        complete.then_some(k)
    }
}

fn fetch(
    cache: &Cache,
    apt: &Apt,
    release: &str,
    log: &mut dyn FnMut(&str),
) -> Result<KernelImage, VmError> {
    let fail = |detail: String| VmError::Fetch {
        release: release.to_string(),
        detail,
    };
    let work = cache.root().join(format!("fetch-{}", std::process::id()));
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| VmError::io("create", &work, e))?;
    let result = (|| {
        let packages = [
            format!("linux-binary-{release}"),
            format!("linux-base-{release}"),
            format!("linux-modules-{release}"),
        ];
        log(&format!(
            "lab vm: fetching Linux {release} from Debian's {SUITE} (about 120 MB, once)"
        ));
        apt.download(&packages, &work)?;
        let unpacked = work.join("root");
        for entry in fs::read_dir(&work).map_err(|e| VmError::io("list", &work, e))? {
            let path = entry.map_err(|e| VmError::io("list", &work, e))?.path();
            if path.extension().is_some_and(|x| x == "deb") {
                run(Command::new("dpkg-deb").arg("-x").arg(&path).arg(&unpacked))
                    .map_err(|d| fail(format!("dpkg-deb -x {}: {d}", path.display())))?;
            }
        }
        let package_version = apt.version(&packages[0])?;
        let src = unpacked.join("usr/lib/modules").join(release);
        let staged = cache.root().join(format!("kernel-{release}.staged"));
        let _ = fs::remove_dir_all(&staged);
        let modules_dir = staged.join("modules");
        fs::create_dir_all(&modules_dir).map_err(|e| VmError::io("create", &modules_dir, e))?;
        for name in ["vmlinuz", "config"] {
            fs::copy(src.join(name), staged.join(name))
                .map_err(|e| fail(format!("{name} missing from the packages ({e})")))?;
        }
        let order = fs::read_to_string(src.join("modules.order"))
            .map_err(|e| fail(format!("modules.order missing ({e})")))?;
        for m in GUEST_MODULES {
            let rel = module_path(&order, m)
                .ok_or_else(|| fail(format!("module {m} is not in modules.order")))?;
            unpack_module(&src, rel, &modules_dir.join(format!("{m}.ko")))
                .map_err(|d| fail(format!("module {m}: {d}")))?;
        }
        let final_dir = cache.kernel_dir(release);
        let _ = fs::remove_dir_all(&final_dir);
        if let Some(parent) = final_dir.parent() {
            fs::create_dir_all(parent).map_err(|e| VmError::io("create", parent, e))?;
        }
        fs::rename(&staged, &final_dir).map_err(|e| VmError::io("rename", &staged, e))?;
        let image = KernelImage {
            release: release.to_string(),
            package_version,
            vmlinuz: final_dir.join("vmlinuz"),
            config: final_dir.join("config"),
            modules_dir: final_dir.join("modules"),
        };
        let manifest = serde_json::to_string_pretty(&image).unwrap_or_default();
        let path = final_dir.join(MANIFEST);
        fs::write(&path, manifest).map_err(|e| VmError::io("write", &path, e))?;
        Ok(image)
    })();
    let _ = fs::remove_dir_all(&work);
    result
}

/// The path of module `name` in `modules.order` (`kernel/…/name.ko`).
fn module_path<'a>(order: &'a str, name: &str) -> Option<&'a str> {
    let file = format!("/{name}.ko");
    order.lines().map(str::trim).find(|l| l.ends_with(&file))
}

/// Writes module `rel` (as `modules.order` names it) uncompressed to `out`: Debian ships them
/// xz-compressed, and the guest's busybox `insmod` takes plain ELF.
fn unpack_module(src: &Path, rel: &str, out: &Path) -> Result<(), ModuleError> {
    let base = src.join(rel);
    let tools: [(&str, Option<&str>); 4] = [
        ("", None),
        (".xz", Some("xz")),
        (".zst", Some("zstd")),
        (".gz", Some("gzip")),
    ];
    for (ext, tool) in tools {
        let path = PathBuf::from(format!("{}{ext}", base.display()));
        if !path.is_file() {
            continue;
        }
        return match tool {
            None => fs::copy(&path, out).map(|_| ()).map_err(ModuleError::Write),
            Some(tool) => {
                let output = Command::new(tool)
                    .arg("-dc")
                    .arg(&path)
                    .output()
                    .map_err(|source| ModuleError::Spawn { tool, source })?;
                if !output.status.success() {
                    return Err(ModuleError::Decompress {
                        tool,
                        stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
                    });
                }
                fs::write(out, output.stdout).map_err(ModuleError::Write)
            }
        };
    }
    Err(ModuleError::Missing(base))
}

/// The machine's `apt-get`, pointed at its own sources list, lists and archive directory in the
/// cache so that nothing of the machine's apt configuration or state is read or changed.
struct Apt {
    options: Vec<String>,
}

impl Apt {
    fn new(cache: &Cache) -> Result<Apt, VmError> {
        for tool in ["apt-get", "apt-cache", "dpkg-deb"] {
            if !crate::on_path(tool) {
                return Err(VmError::ToolMissing {
                    tool,
                    remedy: "the lab machine fetches Debian's kernel with apt; run on Debian",
                });
            }
        }
        let dir = cache.root().join("apt");
        for sub in ["lists/partial", "archives/partial"] {
            let d = dir.join(sub);
            fs::create_dir_all(&d).map_err(|e| VmError::io("create", &d, e))?;
        }
        let sources = dir.join("sources.list");
        let line = format!("deb [signed-by={KEYRING}] {ARCHIVE_URL} {SUITE} main\n");
        fs::write(&sources, line).map_err(|e| VmError::io("write", &sources, e))?;
        let d = dir.display();
        Ok(Apt {
            options: vec![
                format!("Dir::Etc::sourcelist={}", sources.display()),
                "Dir::Etc::sourceparts=-".to_string(),
                format!("Dir::State::Lists={d}/lists"),
                format!("Dir::Cache={d}"),
                format!("Dir::Cache::archives={d}/archives"),
                "Dir::State::status=/dev/null".to_string(),
                // The downloads land in Lull's cache, which apt's unprivileged user cannot read.
                "APT::Sandbox::User=root".to_string(),
            ],
        })
    }

    fn command(&self, tool: &str) -> Command {
        let mut c = Command::new(tool);
        for o in &self.options {
            c.arg("-o").arg(o);
        }
        c
    }

    fn update(&self, log: &mut dyn FnMut(&str)) -> Result<(), VmError> {
        log(&format!("lab vm: reading Debian's {SUITE} package list"));
        run(self.command("apt-get").args(["-q", "update"])).map_err(|d| VmError::Fetch {
            release: DEFAULT_RELEASE.to_string(),
            detail: format!("apt-get update of {SUITE}: {d}"),
        })
    }

    /// Kernel releases the suite serves (`linux-binary-<release>` for generic amd64), oldest
    /// first.
    fn kernel_releases(&self) -> Result<Vec<String>, VmError> {
        let out = run_output(
            self.command("apt-cache")
                .args(["pkgnames", "linux-binary-"]),
        )
        .map_err(|d| VmError::Fetch {
            release: DEFAULT_RELEASE.to_string(),
            detail: format!("apt-cache pkgnames: {d}"),
        })?;
        Ok(parse_releases(&out))
    }

    fn version(&self, package: &str) -> Result<String, VmError> {
        let out = run_output(self.command("apt-cache").args(["show", package])).map_err(|d| {
            VmError::Fetch {
                release: package.to_string(),
                detail: format!("apt-cache show: {d}"),
            }
        })?;
        Ok(out
            .lines()
            .find_map(|l| l.strip_prefix("Version: "))
            .unwrap_or("unknown")
            .to_string())
    }

    fn download(&self, packages: &[String], into: &Path) -> Result<(), VmError> {
        run(self
            .command("apt-get")
            .args(["-q", "download"])
            .args(packages)
            .current_dir(into))
        .map_err(|d| VmError::Fetch {
            release: packages.join(" "),
            detail: format!("apt-get download: {d}"),
        })
    }
}

/// Generic amd64 releases among `linux-binary-*` package names (not cloud, rt or unsigned
/// flavours), sorted by version.
fn parse_releases(pkgnames: &str) -> Vec<String> {
    let mut releases: Vec<String> = pkgnames
        .lines()
        .filter_map(|l| l.trim().strip_prefix("linux-binary-"))
        .filter(|r| r.ends_with("-amd64") && r.starts_with(|c: char| c.is_ascii_digit()))
        .filter(|r| !r.contains("-cloud-") && !r.contains("-rt-"))
        .map(str::to_string)
        .collect();
    releases.sort_by_key(|r| version_key(r));
    releases.dedup();
    releases
}

/// "7.3.4+deb13-amd64" → [7, 3, 4, 13]: numbers in order, for sorting.
fn version_key(release: &str) -> Vec<u64> {
    release
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// Why one guest module could not be unpacked; the text goes into [`VmError::Fetch`].
#[derive(Debug, thiserror::Error)]
enum ModuleError {
    #[error("{0}")]
    Write(std::io::Error),
    #[error("{tool}: {source}")]
    Spawn {
        tool: &'static str,
        source: std::io::Error,
    },
    #[error("{tool} -dc failed: {stderr}")]
    Decompress { tool: &'static str, stderr: String },
    #[error("{} not found in the package", .0.display())]
    Missing(PathBuf),
}

/// Why a packaging tool (`apt-get`, `dpkg-deb`) failed; the text goes into [`VmError::Fetch`].
#[derive(Debug, thiserror::Error)]
enum ToolError {
    #[error("{0}")]
    Spawn(std::io::Error),
    /// The tool ran and failed: the last lines of its standard error and its status.
    #[error("{stderr_tail} ({status})")]
    Failed {
        stderr_tail: String,
        status: std::process::ExitStatus,
    },
}

fn run(cmd: &mut Command) -> Result<(), ToolError> {
    run_output(cmd).map(|_| ())
}

fn run_output(cmd: &mut Command) -> Result<String, ToolError> {
    let out = cmd.output().map_err(ToolError::Spawn)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        let last: Vec<&str> = err.lines().rev().take(3).collect();
        Err(ToolError::Failed {
            stderr_tail: last.into_iter().rev().collect::<Vec<_>>().join(" / "),
            status: out.status,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_keep_generic_amd64_and_sort_by_version() {
        let names = "linux-binary-7.2.12+deb13-amd64\n\
                     linux-binary-unsigned-7.3.4+deb13-amd64\n\
                     linux-binary-7.3.4+deb13-cloud-amd64\n\
                     linux-binary-7.3.4+deb13-rt-amd64\n\
                     linux-binary-7.3.4+deb13-amd64\n\
                     linux-binary-7.2.9+deb13-amd64\n\
                     linux-binary-7.10.1+deb13-amd64\n";
        assert_eq!(
            parse_releases(names),
            vec![
                "7.2.9+deb13-amd64",
                "7.2.12+deb13-amd64",
                "7.3.4+deb13-amd64",
                "7.10.1+deb13-amd64"
            ]
        );
        assert!(parse_releases("garbage\n\n").is_empty());
    }

    #[test]
    fn module_paths_come_from_modules_order() {
        let order = "kernel/fs/netfs/netfs.ko\nkernel/fs/9p/9p.ko\nkernel/net/9p/9pnet.ko\n\
                     kernel/net/9p/9pnet_virtio.ko\n";
        assert_eq!(module_path(order, "9p"), Some("kernel/fs/9p/9p.ko"));
        assert_eq!(
            module_path(order, "9pnet"),
            Some("kernel/net/9p/9pnet.ko"),
            "a name is matched whole, not as a prefix"
        );
        assert_eq!(module_path(order, "uinput"), None);
    }
}
