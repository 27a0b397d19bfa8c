//! Where the lab machine keeps what it fetched: `$LULL_CACHE_DIR/vm`, else
//! `$XDG_CACHE_HOME/lull/vm`, else `~/.cache/lull/vm`.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::VmError;

#[derive(Clone, Debug)]
pub struct Cache {
    root: PathBuf,
}

impl Cache {
    /// The cache named by the environment (created if missing).
    pub fn locate() -> Result<Cache, VmError> {
        let base = std::env::var_os("LULL_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("lull")))
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/lull")))
            .ok_or_else(|| {
                VmError::Invalid(
                    "no cache directory: set LULL_CACHE_DIR, XDG_CACHE_HOME or HOME".to_string(),
                )
            })?;
        Cache::at(base.join("vm"))
    }

    /// A cache at `root` (created if missing).
    pub fn at(root: impl Into<PathBuf>) -> Result<Cache, VmError> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| VmError::io("create", &root, e))?;
        Ok(Cache { root })
    }

    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    #[must_use]
    pub fn kernel_dir(&self, release: &str) -> PathBuf {
        self.root.join("kernels").join(release)
    }

    /// The kernel releases fetched into the cache (`lull lab vm --fetch`), sorted.
    #[must_use]
    pub fn kernels(&self) -> Vec<String> {
        let mut out: Vec<String> = fs::read_dir(self.root.join("kernels"))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }

    /// Bytes the cache holds on disk.
    #[must_use]
    pub fn size_bytes(&self) -> u64 {
        dir_size(&self.root)
    }
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

/// An exclusive lock on the cache while a fetch writes to it, so that two runs (two test
/// binaries, or a test and a command) never unpack into the same place at once.
#[derive(Debug)]
pub(crate) struct CacheLock {
    _file: fs::File,
}

impl CacheLock {
    pub(crate) fn take(cache: &Cache) -> Result<CacheLock, VmError> {
        let path = cache.root.join(".lock");
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| VmError::io("open", &path, e))?;
        // The lock goes with the file.
        lull_os::fs::lock_exclusive(&file).map_err(|e| VmError::io("lock", &path, e))?;
        Ok(CacheLock { _file: file })
    }
}
