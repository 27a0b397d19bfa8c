//! The cgroup file systems' text as the kernel writes it: which hierarchies are mounted where
//! (`/proc/self/mountinfo`), which cgroup a thread is in (`/proc/PID/cgroup`), whether a v2
//! cgroup is frozen (`cgroup.events`), and the controllers cgroup v2 offers.

use std::fs;
use std::path::{Path, PathBuf};

/// Why cgroup v2's controllers cannot be named.
#[derive(Debug, thiserror::Error)]
pub enum Cgroup2Error {
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no cgroup v2 file system is mounted")]
    NotMounted,
}

/// The controllers cgroup v2 offers at its root on this machine (`cgroup.controllers` of the
/// first `cgroup2` mount): `Err` says why none can be named (no cgroup v2 mounted, unreadable).
///
/// # Errors
/// [`Cgroup2Error`], naming what is missing.
pub fn cgroup2_controllers() -> Result<(PathBuf, Vec<String>), Cgroup2Error> {
    let mountinfo = Path::new("/proc/self/mountinfo");
    let read = |path: &Path| {
        fs::read_to_string(path).map_err(|source| Cgroup2Error::Read {
            path: path.to_owned(),
            source,
        })
    };
    let m = parse_mountinfo(&read(mountinfo)?)
        .into_iter()
        .find(|m| m.fstype == "cgroup2")
        .ok_or(Cgroup2Error::NotMounted)?;
    let text = read(&m.point.join("cgroup.controllers"))?;
    Ok((
        m.point,
        text.split_whitespace().map(str::to_owned).collect(),
    ))
}

/// One line of `/proc/self/mountinfo`, the fields this module needs.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Mount {
    pub(crate) root: String,
    pub(crate) point: PathBuf,
    pub(crate) fstype: String,
    pub(crate) super_opts: Vec<String>,
}

/// `proc(5)`: `id parent major:minor root point options [optional...] - fstype source super`.
pub(crate) fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (pre, post) = line.split_once(" - ")?;
            let pre: Vec<&str> = pre.split(' ').collect();
            let post: Vec<&str> = post.split(' ').collect();
            Some(Mount {
                root: unescape_octal(pre.get(3)?),
                point: PathBuf::from(unescape_octal(pre.get(4)?)),
                fstype: (*post.first()?).to_owned(),
                super_opts: post.get(2)?.split(',').map(str::to_owned).collect(),
            })
        })
        .collect()
}

/// mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let code = if b[i] == b'\\' && i + 4 <= b.len() {
            std::str::from_utf8(&b[i + 1..i + 4])
                .ok()
                .and_then(|o| u8::from_str_radix(o, 8).ok())
        } else {
            None
        };
        match code {
            Some(c) => {
                out.push(c);
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The path in `/proc/PID/cgroup` text of the v2 hierarchy (`controller` = `None`, line
/// `0::PATH`) or of the v1 hierarchy holding `controller`.
pub(crate) fn cgroup_path_of(text: &str, controller: Option<&str>) -> Option<String> {
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let id = parts.next()?;
        let controllers = parts.next()?;
        let path = parts.next()?;
        let hit = match controller {
            None => id == "0" && controllers.is_empty(),
            Some(c) => controllers.split(',').any(|x| x == c),
        };
        hit.then(|| path.to_owned())
    })
}

/// The `frozen` field of a v2 `cgroup.events` file.
pub(crate) fn parse_events_frozen(text: &str) -> Option<bool> {
    text.lines()
        .find_map(|l| match l.strip_prefix("frozen ")?.trim() {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_finds_both_hierarchies() {
        let text = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime shared:9 - cgroup cgroup rw,name=systemd
41 31 0:38 /inner /sys/fs/cgroup/uni\\040fied rw,relatime - cgroup2 cgroup2 rw
garbage line
";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 4);
        assert_eq!(m[1].point, Path::new("/sys/fs/cgroup/freezer"));
        assert_eq!(m[1].super_opts, ["rw", "freezer"]);
        assert_eq!(m[2].fstype, "cgroup");
        assert_eq!(m[3].fstype, "cgroup2");
        assert_eq!(m[3].root, "/inner");
        assert_eq!(m[3].point, Path::new("/sys/fs/cgroup/uni fied"));
        assert_eq!(unescape_octal("a\\134b\\"), "a\\b\\");
    }

    #[test]
    fn proc_cgroup_lines() {
        let text =
            "9:name=systemd:/\n6:freezer:/a/b\n4:memory:/x\n3:cpu,cpuacct:/c\n0::/user.slice/s\n";
        assert_eq!(cgroup_path_of(text, None).as_deref(), Some("/user.slice/s"));
        assert_eq!(
            cgroup_path_of(text, Some("freezer")).as_deref(),
            Some("/a/b")
        );
        assert_eq!(cgroup_path_of(text, Some("cpuacct")).as_deref(), Some("/c"));
        assert_eq!(cgroup_path_of(text, Some("pids")), None);
        assert_eq!(cgroup_path_of("6:freezer:/\n", None), None);
    }

    #[test]
    fn events_frozen_field() {
        assert_eq!(parse_events_frozen("populated 1\nfrozen 1\n"), Some(true));
        assert_eq!(parse_events_frozen("populated 0\nfrozen 0\n"), Some(false));
        assert_eq!(parse_events_frozen("populated 1\n"), None);
        assert_eq!(parse_events_frozen("frozen 2\n"), None);
    }
}
