//! The "newc" cpio archive the kernel unpacks as its initramfs (Linux
//! `Documentation/driver-api/early-userspace/buffer-format.rst`). Pure: entries in, bytes out.

/// Mode bits of a regular file and a directory (`S_IFREG`, `S_IFDIR`).
const S_IFREG: u32 = 0o100_000;
const S_IFDIR: u32 = 0o040_000;
/// The format's magic: "newc" without checksums.
const MAGIC: &str = "070701";
/// Headers and file data are padded to 4-byte boundaries.
const ALIGN: usize = 4;

/// An archive being written. Entries keep the order they are added in; parents must come first
/// (the kernel does not create missing directories).
#[derive(Debug, Default)]
pub struct Cpio {
    bytes: Vec<u8>,
    next_ino: u32,
}

impl Cpio {
    #[must_use]
    pub fn new() -> Cpio {
        Cpio {
            bytes: Vec::new(),
            next_ino: 1,
        }
    }

    /// A directory (`mode` is the permission bits).
    pub fn dir(&mut self, path: &str, mode: u32) {
        self.entry(path, S_IFDIR | (mode & 0o7777), 2, &[]);
    }

    /// A regular file.
    pub fn file(&mut self, path: &str, mode: u32, data: &[u8]) {
        self.entry(path, S_IFREG | (mode & 0o7777), 1, data);
    }

    /// The archive with its trailer.
    #[must_use]
    pub fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, 1, &[]);
        self.bytes
    }

    fn entry(&mut self, path: &str, mode: u32, nlink: u32, data: &[u8]) {
        let ino = self.next_ino;
        self.next_ino += 1;
        let name = path.trim_start_matches('/');
        // The name's length counts its terminating NUL.
        let namesize = name.len() + 1;
        let fields: [u32; 13] = [
            ino,
            mode,
            0, // uid
            0, // gid
            nlink,
            0, // mtime: fixed, so the same inputs give the same bytes
            u32::try_from(data.len()).unwrap_or(u32::MAX),
            0, // devmajor
            0, // devminor
            0, // rdevmajor
            0, // rdevminor
            u32::try_from(namesize).unwrap_or(u32::MAX),
            0, // check
        ];
        self.bytes.extend_from_slice(MAGIC.as_bytes());
        for f in fields {
            self.bytes.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.bytes.extend_from_slice(name.as_bytes());
        self.bytes.push(0);
        self.pad();
        self.bytes.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while self.bytes.len() % ALIGN != 0 {
            self.bytes.push(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads back (name, mode, data) triples: the inverse of the writer, from the format's text.
    fn parse(mut b: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut out = Vec::new();
        let mut offset = 0usize;
        loop {
            assert_eq!(&b[..6], MAGIC.as_bytes(), "magic at {offset}");
            let field = |i: usize| {
                u32::from_str_radix(std::str::from_utf8(&b[6 + i * 8..14 + i * 8]).unwrap(), 16)
                    .unwrap() as usize
            };
            let (mode, filesize, namesize) = (field(1), field(6), field(11));
            let name_end = 110 + namesize;
            let name = String::from_utf8(b[110..name_end - 1].to_vec()).unwrap();
            assert_eq!(b[name_end - 1], 0);
            let data_start = (offset + name_end).next_multiple_of(ALIGN) - offset;
            let data_end = data_start + filesize;
            let data = b[data_start..data_end].to_vec();
            let next = (offset + data_end).next_multiple_of(ALIGN) - offset;
            if name == "TRAILER!!!" {
                assert_eq!(next, b.len(), "nothing after the trailer");
                return out;
            }
            out.push((name, mode as u32, data));
            offset += next;
            b = &b[next..];
        }
    }

    #[test]
    fn entries_read_back_in_order_with_their_modes_and_data() {
        let mut c = Cpio::new();
        c.dir("/bin", 0o755);
        c.file("/bin/busybox", 0o755, b"\x7fELF...");
        c.file("init", 0o700, b"#!/bin/busybox sh\n");
        c.file("empty", 0o644, b"");
        let bytes = c.finish();
        assert_eq!(bytes.len() % ALIGN, 0);
        let entries = parse(&bytes);
        assert_eq!(
            entries,
            vec![
                ("bin".to_string(), S_IFDIR | 0o755, vec![]),
                (
                    "bin/busybox".to_string(),
                    S_IFREG | 0o755,
                    b"\x7fELF...".to_vec()
                ),
                (
                    "init".to_string(),
                    S_IFREG | 0o700,
                    b"#!/bin/busybox sh\n".to_vec()
                ),
                ("empty".to_string(), S_IFREG | 0o644, vec![]),
            ]
        );
    }

    #[test]
    fn same_entries_give_the_same_bytes() {
        let build = || {
            let mut c = Cpio::new();
            c.file("a", 0o644, b"xyz");
            c.finish()
        };
        assert_eq!(build(), build());
    }
}
