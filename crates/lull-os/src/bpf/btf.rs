//! A bounds-checked reader of BTF, the kernel's type information (`/sys/kernel/btf/vmlinux`,
//! format in the kernel's `Documentation/bpf/btf.rst` and `include/uapi/linux/btf.h`), and a
//! small writer for the few blobs this crate hands to the kernel itself.
//!
//! Only what user space needs to build a kernel structure by hand is here: find a struct by
//! name, list its members, and resolve a member's byte offset and size through typedefs,
//! qualifiers and arrays. Every read is checked against the blob, so truncated or garbage input
//! is a [`BtfError`], never a panic. Split BTF (a module's, which continues vmlinux's ids) is not
//! handled: only a base blob.

use std::io;
use std::path::Path;

/// `BTF_MAGIC`, the first two bytes of a blob, in the byte order of the blob's writer.
pub const BTF_MAGIC: u16 = 0xeb9f;
/// `BTF_VERSION`: the only version the kernel has ever written.
pub const BTF_VERSION: u8 = 1;
/// Where the running kernel exposes its own BTF (`CONFIG_DEBUG_INFO_BTF=y`).
pub const VMLINUX_BTF_PATH: &str = "/sys/kernel/btf/vmlinux";

/// `struct btf_header` with the two section descriptors: magic, version, flags, `hdr_len`,
/// then `type_off`, `type_len`, `str_off`, `str_len`, all `u32`.
const HEADER_LEN: usize = 24;
/// `struct btf_type`: `name_off`, `info`, `size`/`type`.
const TYPE_HEADER_LEN: usize = 12;
/// `BTF_MAX_TYPE` in `include/uapi/linux/btf.h`: type ids are 20 bits.
const MAX_TYPE_ID: u32 = 0x000f_ffff;
/// How many typedefs, qualifiers and array levels a resolution follows before it calls the
/// chain a loop: libbpf's `MAX_RESOLVE_DEPTH` (`tools/lib/bpf/btf.c`).
pub const MAX_RESOLVE_DEPTH: usize = 32;
/// Bits of a struct member's `offset` that hold the bit offset when the struct's `kind_flag`
/// is set; the top 8 bits then hold the bit-field size (`BTF_MEMBER_BIT_OFFSET`).
const MEMBER_BIT_OFFSET_MASK: u32 = 0x00ff_ffff;
/// `BTF_INT_SIGNED`, in bits 24..28 of an INT's encoding word.
const BTF_INT_SIGNED: u32 = 1 << 24;

/// The BTF kinds (`BTF_KIND_*`), with their numbers.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum BtfKind {
    /// Type id 0, which every blob has implicitly; no entry in the type section has it.
    Void,
    Int,
    Ptr,
    Array,
    Struct,
    Union,
    Enum,
    Fwd,
    Typedef,
    Volatile,
    Const,
    Restrict,
    Func,
    FuncProto,
    Var,
    Datasec,
    Float,
    DeclTag,
    TypeTag,
    Enum64,
}

impl BtfKind {
    /// The kind of a raw `info` kind number; `None` for a number no kernel writes.
    #[must_use]
    pub fn from_raw(kind: u32) -> Option<BtfKind> {
        Some(match kind {
            1 => BtfKind::Int,
            2 => BtfKind::Ptr,
            3 => BtfKind::Array,
            4 => BtfKind::Struct,
            5 => BtfKind::Union,
            6 => BtfKind::Enum,
            7 => BtfKind::Fwd,
            8 => BtfKind::Typedef,
            9 => BtfKind::Volatile,
            10 => BtfKind::Const,
            11 => BtfKind::Restrict,
            12 => BtfKind::Func,
            13 => BtfKind::FuncProto,
            14 => BtfKind::Var,
            15 => BtfKind::Datasec,
            16 => BtfKind::Float,
            17 => BtfKind::DeclTag,
            18 => BtfKind::TypeTag,
            19 => BtfKind::Enum64,
            _ => return None,
        })
    }

    /// The kind's number in `info` (0 for [`BtfKind::Void`]).
    #[must_use]
    pub fn raw(self) -> u32 {
        match self {
            BtfKind::Void => 0,
            BtfKind::Int => 1,
            BtfKind::Ptr => 2,
            BtfKind::Array => 3,
            BtfKind::Struct => 4,
            BtfKind::Union => 5,
            BtfKind::Enum => 6,
            BtfKind::Fwd => 7,
            BtfKind::Typedef => 8,
            BtfKind::Volatile => 9,
            BtfKind::Const => 10,
            BtfKind::Restrict => 11,
            BtfKind::Func => 12,
            BtfKind::FuncProto => 13,
            BtfKind::Var => 14,
            BtfKind::Datasec => 15,
            BtfKind::Float => 16,
            BtfKind::DeclTag => 17,
            BtfKind::TypeTag => 18,
            BtfKind::Enum64 => 19,
        }
    }

    /// Bytes that follow a type's 12-byte header in the type section, for `vlen` entries.
    fn trailing_len(self, vlen: u16) -> usize {
        let n = usize::from(vlen);
        match self {
            // An INT's encoding word, a VAR's linkage, a DECL_TAG's component index.
            BtfKind::Int | BtfKind::Var | BtfKind::DeclTag => 4,
            // `struct btf_array`: element type, index type, element count.
            BtfKind::Array => 12,
            // `struct btf_member`: name, type, offset.
            BtfKind::Struct | BtfKind::Union => 12 * n,
            // `struct btf_enum`: name, 32-bit value.
            BtfKind::Enum => 8 * n,
            // `struct btf_param`: name, type.
            BtfKind::FuncProto => 8 * n,
            // `struct btf_var_secinfo`: type, offset, size.
            BtfKind::Datasec => 12 * n,
            // `struct btf_enum64`: name, low and high 32 bits of the value.
            BtfKind::Enum64 => 12 * n,
            BtfKind::Void
            | BtfKind::Ptr
            | BtfKind::Fwd
            | BtfKind::Typedef
            | BtfKind::Volatile
            | BtfKind::Const
            | BtfKind::Restrict
            | BtfKind::Func
            | BtfKind::Float
            | BtfKind::TypeTag => 0,
        }
    }
}

/// Why a BTF blob cannot be read, or a question about it has no answer.
#[derive(Debug, thiserror::Error)]
pub enum BtfError {
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("BTF truncated: the {what} needs {need} bytes at offset {offset}, the blob has {len}")]
    Truncated {
        what: &'static str,
        offset: usize,
        need: usize,
        len: usize,
    },
    #[error("not BTF: magic {0:#06x}, expected {BTF_MAGIC:#06x}")]
    BadMagic(u16),
    #[error("BTF version {0}; only version {BTF_VERSION} is known")]
    UnsupportedVersion(u8),
    #[error("BTF header: {0}")]
    BadHeader(String),
    #[error("BTF type {id} (at byte {offset} of the type section) has unknown kind {kind}")]
    UnknownKind { id: u32, offset: usize, kind: u32 },
    #[error("BTF has more than {MAX_TYPE_ID} types")]
    TooManyTypes,
    #[error("BTF string offset {offset} is outside the {len}-byte string section")]
    BadStringOffset { offset: u32, len: usize },
    #[error("BTF string at offset {0} is not NUL-terminated UTF-8")]
    BadString(u32),
    #[error("BTF type id {id} does not exist (the blob has ids 0 to {max})")]
    BadTypeId { id: u32, max: u32 },
    #[error("no BTF {kind:?} named {name:?}")]
    NotFound { kind: BtfKind, name: String },
    #[error("BTF type {id} is a {kind:?}, not a struct or union")]
    NotComposite { id: u32, kind: BtfKind },
    #[error("BTF type {type_name:?} has no member {member:?}")]
    NoMember { type_name: String, member: String },
    #[error(
        "BTF member {member:?} is a bit field ({bits} bits at bit {bit_offset}): no byte layout"
    )]
    BitField {
        member: String,
        bits: u32,
        bit_offset: u32,
    },
    #[error("BTF type {id} is a {kind:?}, which has no size")]
    NoSize { id: u32, kind: BtfKind },
    #[error("BTF type {0}: typedefs, qualifiers and arrays nest deeper than {MAX_RESOLVE_DEPTH} (a loop?)")]
    TooDeep(u32),
    #[error("BTF type {0}: its size or offset overflows 32 bits")]
    Overflow(u32),
}

/// The byte order the blob was written in (the kernel writes its own).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Endian {
    Little,
    Big,
}

/// One entry of the type section, as indexed at parse time.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// Offset of the 12-byte header in the type section.
    offset: usize,
    kind: BtfKind,
    name_off: u32,
    vlen: u16,
    kind_flag: bool,
    size_or_type: u32,
}

/// A parsed BTF blob: the type and string sections, and an index of the types by id.
#[derive(Clone, Debug)]
pub struct Btf {
    endian: Endian,
    types: Vec<u8>,
    strings: Vec<u8>,
    /// `entries[id - 1]` is type `id`.
    entries: Vec<Entry>,
    /// Size of a pointer in the described program: the size of the INT `long` (or
    /// `long unsigned int`), else this process's own.
    ptr_size: u32,
}

/// A struct or union member.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct BtfMember {
    /// Empty for an anonymous struct or union member.
    pub name: String,
    pub type_id: u32,
    /// Offset from the start of the containing type, in bits.
    pub bit_offset: u32,
    /// Width of a bit field in bits; 0 for an ordinary member.
    pub bitfield_bits: u32,
}

/// A struct (or union) type with its members.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct BtfStruct {
    pub id: u32,
    pub name: String,
    pub kind: BtfKind,
    pub size_bytes: u32,
    pub members: Vec<BtfMember>,
}

impl BtfStruct {
    /// The member called `name` (direct members only).
    #[must_use]
    pub fn member(&self, name: &str) -> Option<&BtfMember> {
        self.members.iter().find(|m| m.name == name)
    }
}

/// Where a (possibly nested) member lies in a struct.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FieldLayout {
    pub byte_offset: u32,
    pub size_bytes: u32,
    /// The member's declared type (before typedefs and qualifiers are followed).
    pub type_id: u32,
}

fn slice<'a>(
    blob: &'a [u8],
    offset: usize,
    need: usize,
    what: &'static str,
) -> Result<&'a [u8], BtfError> {
    offset
        .checked_add(need)
        .and_then(|end| blob.get(offset..end))
        .ok_or(BtfError::Truncated {
            what,
            offset,
            need,
            len: blob.len(),
        })
}

fn u32_at(blob: &[u8], endian: Endian, offset: usize, what: &'static str) -> Result<u32, BtfError> {
    let b = slice(blob, offset, 4, what)?;
    let b = [b[0], b[1], b[2], b[3]];
    Ok(match endian {
        Endian::Little => u32::from_le_bytes(b),
        Endian::Big => u32::from_be_bytes(b),
    })
}

fn to_usize(v: u32) -> usize {
    // u32 always fits usize on the targets this crate builds for (Linux, 32 or 64 bits).
    v as usize
}

impl Btf {
    /// Reads and parses a BTF file.
    ///
    /// # Errors
    /// [`BtfError::Io`] when it cannot be read; any parse error of [`Btf::parse`].
    pub fn from_file(path: &Path) -> Result<Btf, BtfError> {
        let blob = std::fs::read(path).map_err(|source| BtfError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Btf::parse(&blob)
    }

    /// The running kernel's BTF ([`VMLINUX_BTF_PATH`]).
    ///
    /// # Errors
    /// As [`Btf::from_file`]; `Io` with `NotFound` on a kernel without `CONFIG_DEBUG_INFO_BTF`.
    pub fn vmlinux() -> Result<Btf, BtfError> {
        Btf::from_file(Path::new(VMLINUX_BTF_PATH))
    }

    /// Parses a BTF blob: checks the header and that both sections lie inside the blob, and
    /// indexes every type, checking that each one's trailing data lies inside the type section.
    /// Names and referenced type ids are checked when they are read.
    ///
    /// # Errors
    /// A typed [`BtfError`] for anything that is not a well-formed blob.
    pub fn parse(blob: &[u8]) -> Result<Btf, BtfError> {
        let magic = slice(blob, 0, 2, "header magic")?;
        let endian = if u16::from_le_bytes([magic[0], magic[1]]) == BTF_MAGIC {
            Endian::Little
        } else if u16::from_be_bytes([magic[0], magic[1]]) == BTF_MAGIC {
            Endian::Big
        } else {
            return Err(BtfError::BadMagic(u16::from_le_bytes([magic[0], magic[1]])));
        };
        let fixed = slice(blob, 0, HEADER_LEN, "header")?;
        if fixed[2] != BTF_VERSION {
            return Err(BtfError::UnsupportedVersion(fixed[2]));
        }
        let field = |i: usize| u32_at(blob, endian, 4 + 4 * i, "header");
        let hdr_len = to_usize(field(0)?);
        let (type_off, type_len) = (to_usize(field(1)?), to_usize(field(2)?));
        let (str_off, str_len) = (to_usize(field(3)?), to_usize(field(4)?));
        if hdr_len < HEADER_LEN {
            return Err(BtfError::BadHeader(format!(
                "hdr_len {hdr_len} is shorter than the {HEADER_LEN}-byte header"
            )));
        }
        // Section offsets count from the end of the header, whatever its length.
        let data = blob.get(hdr_len..).ok_or(BtfError::Truncated {
            what: "header",
            offset: 0,
            need: hdr_len,
            len: blob.len(),
        })?;
        let section = |off: usize, len: usize, what: &'static str| {
            slice(data, off, len, what).map_err(|_| BtfError::Truncated {
                what,
                offset: hdr_len.saturating_add(off),
                need: len,
                len: blob.len(),
            })
        };
        let types = section(type_off, type_len, "type section")?.to_vec();
        let strings = section(str_off, str_len, "string section")?.to_vec();

        let mut entries = Vec::new();
        let mut offset = 0;
        while offset < types.len() {
            let id = u32::try_from(entries.len() + 1).map_err(|_| BtfError::TooManyTypes)?;
            if id > MAX_TYPE_ID {
                return Err(BtfError::TooManyTypes);
            }
            let header = |i: usize| {
                u32_at(&types, endian, offset + 4 * i, "type header").map_err(|_| {
                    BtfError::Truncated {
                        what: "type header",
                        offset,
                        need: TYPE_HEADER_LEN,
                        len: types.len(),
                    }
                })
            };
            let (name_off, info, size_or_type) = (header(0)?, header(1)?, header(2)?);
            // info: vlen in bits 0..16, kind in bits 24..29, kind_flag in bit 31.
            let raw_kind = (info >> 24) & 0x1f;
            let kind = BtfKind::from_raw(raw_kind).ok_or(BtfError::UnknownKind {
                id,
                offset,
                kind: raw_kind,
            })?;
            let vlen = (info & 0xffff) as u16;
            let len = TYPE_HEADER_LEN + kind.trailing_len(vlen);
            slice(&types, offset, len, "type's trailing data")?;
            entries.push(Entry {
                offset,
                kind,
                name_off,
                vlen,
                kind_flag: info >> 31 == 1,
                size_or_type,
            });
            offset += len;
        }
        let mut btf = Btf {
            endian,
            types,
            strings,
            entries,
            ptr_size: std::mem::size_of::<usize>() as u32,
        };
        let long = ["long", "long int", "long unsigned int", "unsigned long"]
            .iter()
            .find_map(|n| btf.find_by_name(n, BtfKind::Int).ok());
        if let Some(id) = long {
            btf.ptr_size = btf.entry(id)?.size_or_type;
        }
        Ok(btf)
    }

    /// Number of types in the blob (ids 1 to this; id 0 is void).
    #[must_use]
    pub fn type_count(&self) -> u32 {
        // Bounded by MAX_TYPE_ID at parse time.
        self.entries.len() as u32
    }

    fn entry(&self, id: u32) -> Result<Entry, BtfError> {
        id.checked_sub(1)
            .and_then(|i| self.entries.get(to_usize(i)))
            .copied()
            .ok_or(BtfError::BadTypeId {
                id,
                max: self.type_count(),
            })
    }

    fn word(&self, offset: usize) -> Result<u32, BtfError> {
        u32_at(&self.types, self.endian, offset, "type's trailing data")
    }

    /// The string at `offset` of the string section.
    ///
    /// # Errors
    /// `BadStringOffset` outside the section, `BadString` without a NUL or not UTF-8.
    pub fn string(&self, offset: u32) -> Result<&str, BtfError> {
        let rest = self
            .strings
            .get(to_usize(offset)..)
            .filter(|r| !r.is_empty())
            .ok_or(BtfError::BadStringOffset {
                offset,
                len: self.strings.len(),
            })?;
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or(BtfError::BadString(offset))?;
        std::str::from_utf8(&rest[..end]).map_err(|_| BtfError::BadString(offset))
    }

    /// The kind of type `id` ([`BtfKind::Void`] for 0).
    ///
    /// # Errors
    /// `BadTypeId` for an id the blob does not have.
    pub fn kind(&self, id: u32) -> Result<BtfKind, BtfError> {
        if id == 0 {
            return Ok(BtfKind::Void);
        }
        Ok(self.entry(id)?.kind)
    }

    /// The name of type `id` (empty for anonymous types and void).
    ///
    /// # Errors
    /// `BadTypeId`, or a bad name offset.
    pub fn name(&self, id: u32) -> Result<&str, BtfError> {
        if id == 0 {
            return Ok("");
        }
        self.string(self.entry(id)?.name_off)
    }

    /// The id of the first type of `kind` called `name`.
    ///
    /// # Errors
    /// `NotFound` when there is none.
    pub fn find_by_name(&self, name: &str, kind: BtfKind) -> Result<u32, BtfError> {
        let wanted = name.as_bytes();
        for (i, e) in self.entries.iter().enumerate() {
            if e.kind != kind {
                continue;
            }
            // Compare raw bytes first: most of vmlinux's 100 000 names need no UTF-8 check.
            let Some(rest) = self.strings.get(to_usize(e.name_off)..) else {
                continue;
            };
            if rest.len() > wanted.len() && rest.starts_with(wanted) && rest[wanted.len()] == 0 {
                return Ok(i as u32 + 1);
            }
        }
        Err(BtfError::NotFound {
            kind,
            name: name.to_string(),
        })
    }

    /// The struct called `name`, with its members.
    ///
    /// # Errors
    /// `NotFound`, or a malformed member.
    pub fn find_struct(&self, name: &str) -> Result<BtfStruct, BtfError> {
        self.composite(self.find_by_name(name, BtfKind::Struct)?)
    }

    /// Struct or union `id` with its members.
    ///
    /// # Errors
    /// `NotComposite` for any other kind; `BadTypeId`; a bad member name.
    pub fn composite(&self, id: u32) -> Result<BtfStruct, BtfError> {
        let e = self.entry(id)?;
        if !matches!(e.kind, BtfKind::Struct | BtfKind::Union) {
            return Err(BtfError::NotComposite { id, kind: e.kind });
        }
        let mut members = Vec::with_capacity(usize::from(e.vlen));
        for i in 0..usize::from(e.vlen) {
            let at = e.offset + TYPE_HEADER_LEN + 12 * i;
            let (name_off, type_id, offset) =
                (self.word(at)?, self.word(at + 4)?, self.word(at + 8)?);
            let (bit_offset, bitfield_bits) = if e.kind_flag {
                (offset & MEMBER_BIT_OFFSET_MASK, offset >> 24)
            } else {
                (offset, 0)
            };
            members.push(BtfMember {
                name: self.string(name_off)?.to_string(),
                type_id,
                bit_offset,
                bitfield_bits,
            });
        }
        Ok(BtfStruct {
            id,
            name: self.string(e.name_off)?.to_string(),
            kind: e.kind,
            size_bytes: e.size_or_type,
            members,
        })
    }

    /// Follows typedefs, `const`, `volatile`, `restrict` and type tags from `id` to the type
    /// they qualify.
    ///
    /// # Errors
    /// `BadTypeId`; `TooDeep` for a chain longer than [`MAX_RESOLVE_DEPTH`] (a loop).
    pub fn skip_qualifiers(&self, id: u32) -> Result<u32, BtfError> {
        let mut cur = id;
        for _ in 0..MAX_RESOLVE_DEPTH {
            match self.kind(cur)? {
                BtfKind::Typedef
                | BtfKind::Const
                | BtfKind::Volatile
                | BtfKind::Restrict
                | BtfKind::TypeTag => cur = self.entry(cur)?.size_or_type,
                _ => return Ok(cur),
            }
        }
        Err(BtfError::TooDeep(id))
    }

    /// The size in bytes of an object of type `id`, through typedefs, qualifiers and arrays.
    ///
    /// # Errors
    /// `NoSize` for void, functions, forward declarations and the like; `TooDeep`; `Overflow`.
    pub fn type_size(&self, id: u32) -> Result<u32, BtfError> {
        let mut cur = id;
        let mut count: u32 = 1;
        for _ in 0..MAX_RESOLVE_DEPTH {
            cur = self.skip_qualifiers(cur)?;
            let kind = self.kind(cur)?;
            let size = match kind {
                BtfKind::Int
                | BtfKind::Struct
                | BtfKind::Union
                | BtfKind::Enum
                | BtfKind::Enum64
                | BtfKind::Float
                | BtfKind::Datasec => self.entry(cur)?.size_or_type,
                BtfKind::Ptr => self.ptr_size,
                BtfKind::Array => {
                    let e = self.entry(cur)?;
                    let at = e.offset + TYPE_HEADER_LEN;
                    let (elem, nelems) = (self.word(at)?, self.word(at + 8)?);
                    count = count.checked_mul(nelems).ok_or(BtfError::Overflow(id))?;
                    cur = elem;
                    continue;
                }
                _ => return Err(BtfError::NoSize { id: cur, kind }),
            };
            return size.checked_mul(count).ok_or(BtfError::Overflow(id));
        }
        Err(BtfError::TooDeep(id))
    }

    /// The byte offset and size of the member at `path` (member names joined by `.`, such as
    /// `data.name`) in struct or union `id`. Members of anonymous structs and unions are found
    /// as if they were the container's own, as in C.
    ///
    /// # Errors
    /// `NoMember`, `NotComposite` when the path goes through a member that is no struct,
    /// `BitField` for a bit field, and the errors of [`Btf::type_size`].
    pub fn member_layout(&self, id: u32, path: &str) -> Result<FieldLayout, BtfError> {
        let mut container = id;
        let mut base_bits: u32 = 0;
        let mut found: Option<(BtfMember, String)> = None;
        for part in path.split('.') {
            if let Some((m, _)) = &found {
                container = m.type_id;
            }
            let outer = self.skip_qualifiers(container)?;
            let (m, nested_bits) =
                self.find_member(outer, part, 0)?
                    .ok_or_else(|| BtfError::NoMember {
                        type_name: self.name(outer).unwrap_or("?").to_string(),
                        member: part.to_string(),
                    })?;
            base_bits = base_bits
                .checked_add(nested_bits)
                .and_then(|b| b.checked_add(m.bit_offset))
                .ok_or(BtfError::Overflow(id))?;
            found = Some((m, part.to_string()));
        }
        let (m, name) = found.ok_or_else(|| BtfError::NoMember {
            type_name: self.name(id).unwrap_or("?").to_string(),
            member: path.to_string(),
        })?;
        if m.bitfield_bits != 0 || base_bits % 8 != 0 {
            return Err(BtfError::BitField {
                member: name,
                bits: m.bitfield_bits,
                bit_offset: base_bits,
            });
        }
        Ok(FieldLayout {
            byte_offset: base_bits / 8,
            size_bytes: self.type_size(m.type_id)?,
            type_id: m.type_id,
        })
    }

    /// Finds `name` among the members of composite `id`, descending into anonymous members;
    /// returns the member and the bit offset of the anonymous container it was found in.
    fn find_member(
        &self,
        id: u32,
        name: &str,
        depth: usize,
    ) -> Result<Option<(BtfMember, u32)>, BtfError> {
        if depth >= MAX_RESOLVE_DEPTH {
            return Err(BtfError::TooDeep(id));
        }
        let s = self.composite(id)?;
        if let Some(m) = s.member(name) {
            return Ok(Some((m.clone(), 0)));
        }
        for m in s.members.iter().filter(|m| m.name.is_empty()) {
            let inner = self.skip_qualifiers(m.type_id)?;
            if !matches!(self.kind(inner)?, BtfKind::Struct | BtfKind::Union) {
                continue;
            }
            if let Some((found, off)) = self.find_member(inner, name, depth + 1)? {
                let off = off
                    .checked_add(m.bit_offset)
                    .ok_or(BtfError::Overflow(id))?;
                return Ok(Some((found, off)));
            }
        }
        Ok(None)
    }
}

/// Writes a BTF blob in this machine's byte order: the few small blobs this crate gives the
/// kernel (a struct_ops map needs a program BTF object), and hand-built blobs in tests.
#[derive(Clone, Debug)]
pub struct BtfBuilder {
    types: Vec<u8>,
    strings: Vec<u8>,
    count: u32,
}

impl Default for BtfBuilder {
    fn default() -> Self {
        BtfBuilder::new()
    }
}

impl BtfBuilder {
    #[must_use]
    pub fn new() -> BtfBuilder {
        // The string section starts with the empty string: name offset 0 means anonymous.
        BtfBuilder {
            types: Vec::new(),
            strings: vec![0],
            count: 0,
        }
    }

    /// Adds `s` to the string section (once) and returns its offset; "" is offset 0.
    pub fn string(&mut self, s: &str) -> u32 {
        if s.is_empty() {
            return 0;
        }
        let needle: Vec<u8> = s.bytes().chain([0]).collect();
        // A string already there, as a whole NUL-terminated entry, is shared.
        let mut start = 0;
        for (i, &b) in self.strings.iter().enumerate() {
            if b == 0 {
                if self.strings[start..=i] == needle[..] {
                    return start as u32;
                }
                start = i + 1;
            }
        }
        let off = self.strings.len() as u32;
        self.strings.extend_from_slice(&needle);
        off
    }

    /// Adds one type with its trailing words and returns its id. Nothing is checked: tests use
    /// this to write malformed blobs too.
    pub fn raw(
        &mut self,
        kind: u32,
        name: &str,
        vlen: u16,
        kind_flag: bool,
        size_or_type: u32,
        trailing: &[u32],
    ) -> u32 {
        let name_off = self.string(name);
        let info = (u32::from(kind_flag) << 31) | ((kind & 0x1f) << 24) | u32::from(vlen);
        for w in [name_off, info, size_or_type].iter().chain(trailing) {
            self.types.extend_from_slice(&w.to_ne_bytes());
        }
        self.count += 1;
        self.count
    }

    /// An INT of `size_bytes`, all bits used.
    pub fn int(&mut self, name: &str, size_bytes: u32, signed: bool) -> u32 {
        let encoding = if signed { BTF_INT_SIGNED } else { 0 } | (size_bytes * 8);
        self.raw(BtfKind::Int.raw(), name, 0, false, size_bytes, &[encoding])
    }

    pub fn ptr(&mut self, target: u32) -> u32 {
        self.raw(BtfKind::Ptr.raw(), "", 0, false, target, &[])
    }

    pub fn array(&mut self, elem: u32, index: u32, nelems: u32) -> u32 {
        self.raw(
            BtfKind::Array.raw(),
            "",
            0,
            false,
            0,
            &[elem, index, nelems],
        )
    }

    /// A typedef, `const`, `volatile`, `restrict` or type tag (`kind`) of `target`.
    pub fn qualifier(&mut self, kind: BtfKind, name: &str, target: u32) -> u32 {
        self.raw(kind.raw(), name, 0, false, target, &[])
    }

    /// A struct (or union, with `kind` Union) whose members are `(name, type, bit offset)`.
    pub fn composite(
        &mut self,
        kind: BtfKind,
        name: &str,
        size_bytes: u32,
        members: &[(&str, u32, u32)],
    ) -> u32 {
        let mut words = Vec::with_capacity(members.len() * 3);
        for &(n, ty, bits) in members {
            words.extend([self.string(n), ty, bits]);
        }
        let vlen = u16::try_from(members.len()).unwrap_or(u16::MAX);
        self.raw(kind.raw(), name, vlen, false, size_bytes, &words)
    }

    /// The blob: header, type section, string section.
    #[must_use]
    pub fn build(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.types.len() + self.strings.len());
        out.extend_from_slice(&BTF_MAGIC.to_ne_bytes());
        out.extend_from_slice(&[BTF_VERSION, 0]);
        let (tl, sl) = (self.types.len() as u32, self.strings.len() as u32);
        for w in [HEADER_LEN as u32, 0, tl, tl, sl] {
            out.extend_from_slice(&w.to_ne_bytes());
        }
        out.extend_from_slice(&self.types);
        out.extend_from_slice(&self.strings);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A blob shaped like the struct_ops value the sched_ext scheduler fills:
    /// `struct outer { struct common c; struct inner data; }` where `inner` holds an
    /// anonymous union, a typedef'd array and a bit field.
    struct Sample {
        blob: Vec<u8>,
        int: u32,
        outer: u32,
    }

    fn sample() -> Sample {
        let mut b = BtfBuilder::new();
        let int = b.int("int", 4, true);
        let long = b.int("long", 8, true);
        let ch = b.int("char", 1, true);
        let name_arr = b.array(ch, int, 128);
        let name_t = b.qualifier(BtfKind::Typedef, "name_t", name_arr);
        let cname = b.qualifier(BtfKind::Const, "", name_t);
        let ptr = b.ptr(int);
        let anon = b.composite(
            BtfKind::Union,
            "",
            8,
            &[("u_int", int, 0), ("u_ptr", ptr, 0)],
        );
        let inner = b.composite(
            BtfKind::Struct,
            "inner",
            152,
            &[
                ("fn", ptr, 0),
                ("", anon, 64),
                ("name", cname, 128),
                ("tail", long, 1152),
            ],
        );
        let common = b.composite(
            BtfKind::Struct,
            "common",
            8,
            &[("refcnt", int, 0), ("state", int, 32)],
        );
        let outer = b.composite(
            BtfKind::Struct,
            "outer",
            216,
            &[("c", common, 0), ("data", inner, 512)],
        );
        // An empty anonymous struct, then a bit field: kind_flag set, 3 bits at bit 5.
        let f = b.string("f");
        b.raw(BtfKind::Struct.raw(), "", 0, false, 0, &[]);
        let bits_id = b.raw(
            BtfKind::Struct.raw(),
            "bits",
            1,
            true,
            4,
            &[f, int, (3 << 24) | 5],
        );
        assert_eq!(bits_id, 13);
        Sample {
            blob: b.build(),
            int,
            outer,
        }
    }

    #[test]
    fn finds_structs_and_members() {
        let s = sample();
        let btf = Btf::parse(&s.blob).unwrap();
        assert_eq!(btf.type_count(), 13);
        assert_eq!(btf.kind(0).unwrap(), BtfKind::Void);
        assert_eq!(btf.name(s.int).unwrap(), "int");
        let outer = btf.find_struct("outer").unwrap();
        assert_eq!(
            (outer.id, outer.size_bytes, outer.kind),
            (s.outer, 216, BtfKind::Struct)
        );
        assert_eq!(outer.members.len(), 2);
        assert_eq!(outer.member("data").unwrap().bit_offset, 512);
        let inner = btf
            .composite(outer.member("data").unwrap().type_id)
            .unwrap();
        assert_eq!(inner.name, "inner");
        assert_eq!(inner.members[1].name, "");
    }

    #[test]
    fn resolves_nested_member_layouts() {
        let btf = Btf::parse(&sample().blob).unwrap();
        let outer = btf.find_by_name("outer", BtfKind::Struct).unwrap();
        let at = |p: &str| {
            let l = btf.member_layout(outer, p).unwrap();
            (l.byte_offset, l.size_bytes)
        };
        // data at byte 64; name behind a const typedef of char[128].
        assert_eq!(at("data"), (64, 152));
        assert_eq!(at("data.name"), (64 + 16, 128));
        assert_eq!(at("data.tail"), (64 + 144, 8));
        // A member of the anonymous union, found as if it were inner's own.
        assert_eq!(at("data.u_ptr"), (64 + 8, 8));
        assert_eq!(at("c.state"), (4, 4));
        assert!(matches!(
            btf.member_layout(outer, "data.nope"),
            Err(BtfError::NoMember { .. })
        ));
        assert!(matches!(
            btf.member_layout(outer, "c.state.x"),
            Err(BtfError::NotComposite { .. })
        ));
        let bits = btf.find_struct("bits").unwrap();
        assert_eq!(bits.members[0].bitfield_bits, 3);
        assert_eq!(bits.members[0].bit_offset, 5);
        assert!(matches!(
            btf.member_layout(bits.id, "f"),
            Err(BtfError::BitField { bits: 3, .. })
        ));
    }

    #[test]
    fn sizes_follow_typedefs_and_arrays() {
        let mut b = BtfBuilder::new();
        let int = b.int("int", 4, true);
        let arr = b.array(int, int, 10);
        let arr2 = b.array(arr, int, 3);
        let td = b.qualifier(BtfKind::Typedef, "grid", arr2);
        let vol = b.qualifier(BtfKind::Volatile, "", td);
        let fwd = b.raw(BtfKind::Fwd.raw(), "later", 0, false, 0, &[]);
        let huge = b.array(int, int, u32::MAX);
        let btf = Btf::parse(&b.build()).unwrap();
        assert_eq!(btf.type_size(vol).unwrap(), 120);
        assert_eq!(btf.skip_qualifiers(vol).unwrap(), arr2);
        assert!(matches!(btf.type_size(fwd), Err(BtfError::NoSize { .. })));
        assert!(matches!(btf.type_size(0), Err(BtfError::NoSize { .. })));
        assert!(matches!(btf.type_size(huge), Err(BtfError::Overflow(_))));
        assert!(matches!(btf.type_size(99), Err(BtfError::BadTypeId { .. })));
    }

    #[test]
    fn a_typedef_loop_is_an_error() {
        let mut b = BtfBuilder::new();
        b.qualifier(BtfKind::Typedef, "a", 2);
        b.qualifier(BtfKind::Typedef, "b", 1);
        let btf = Btf::parse(&b.build()).unwrap();
        assert!(matches!(btf.type_size(1), Err(BtfError::TooDeep(1))));
    }

    #[test]
    fn every_kind_has_its_trailing_data() {
        let mut b = BtfBuilder::new();
        let int = b.int("int", 4, true);
        let e = b.string("E");
        let en = b.raw(BtfKind::Enum.raw(), "en", 2, false, 4, &[e, 1, e, 2]);
        let proto = b.raw(BtfKind::FuncProto.raw(), "", 1, false, int, &[0, int]);
        let func = b.raw(BtfKind::Func.raw(), "f", 0, false, proto, &[]);
        let var = b.raw(BtfKind::Var.raw(), "v", 0, false, int, &[1]);
        let sec = b.raw(BtfKind::Datasec.raw(), ".data", 1, false, 4, &[var, 0, 4]);
        let flt = b.raw(BtfKind::Float.raw(), "double", 0, false, 8, &[]);
        let tag = b.raw(BtfKind::DeclTag.raw(), "tag", 0, false, func, &[u32::MAX]);
        let ttag = b.raw(BtfKind::TypeTag.raw(), "user", 0, false, int, &[]);
        let e64 = b.raw(BtfKind::Enum64.raw(), "e64", 1, false, 8, &[e, 1, 2]);
        let rst = b.qualifier(BtfKind::Restrict, "", int);
        let last = b.int("last", 2, false);
        let btf = Btf::parse(&b.build()).unwrap();
        // Had any kind's trailing size been wrong, the types after it would be misread.
        assert_eq!(btf.name(last).unwrap(), "last");
        assert_eq!(btf.type_size(last).unwrap(), 2);
        assert_eq!(btf.type_size(en).unwrap(), 4);
        assert_eq!(btf.type_size(e64).unwrap(), 8);
        assert_eq!(btf.type_size(flt).unwrap(), 8);
        assert_eq!(btf.type_size(sec).unwrap(), 4);
        assert_eq!(btf.type_size(ttag).unwrap(), 4);
        assert_eq!(btf.type_size(rst).unwrap(), 4);
        assert_eq!(btf.kind(tag).unwrap(), BtfKind::DeclTag);
        assert!(matches!(btf.type_size(func), Err(BtfError::NoSize { .. })));
        assert_eq!(btf.find_by_name("v", BtfKind::Var).unwrap(), var);
        assert!(matches!(
            btf.find_by_name("v", BtfKind::Func),
            Err(BtfError::NotFound { .. })
        ));
    }

    #[test]
    fn garbage_is_a_typed_error() {
        let blob = sample().blob;
        assert!(matches!(Btf::parse(&[]), Err(BtfError::Truncated { .. })));
        assert!(matches!(
            Btf::parse(&[1, 2, 3, 4]),
            Err(BtfError::BadMagic(0x0201))
        ));
        assert!(matches!(
            Btf::parse(&blob[..10]),
            Err(BtfError::Truncated { what: "header", .. })
        ));
        assert!(matches!(
            Btf::parse(&blob[..blob.len() - 1]),
            Err(BtfError::Truncated {
                what: "string section",
                ..
            })
        ));
        let mut v2 = blob.clone();
        v2[2] = 2;
        assert!(matches!(
            Btf::parse(&v2),
            Err(BtfError::UnsupportedVersion(2))
        ));
        let mut short_hdr = blob.clone();
        short_hdr[4..8].copy_from_slice(&8u32.to_ne_bytes());
        assert!(matches!(
            Btf::parse(&short_hdr),
            Err(BtfError::BadHeader(_))
        ));
        // Type section cut in the middle of a type: the string section shifted to follow it.
        let mut cut = blob.clone();
        let tl = u32::from_ne_bytes(cut[12..16].try_into().unwrap());
        cut[12..16].copy_from_slice(&(tl - 4).to_ne_bytes());
        assert!(matches!(Btf::parse(&cut), Err(BtfError::Truncated { .. })));
        // Kind 0 and kinds past ENUM64 are unknown.
        let mut b = BtfBuilder::new();
        b.raw(25, "x", 0, false, 0, &[]);
        assert!(matches!(
            Btf::parse(&b.build()),
            Err(BtfError::UnknownKind {
                id: 1,
                kind: 25,
                ..
            })
        ));
        // A name offset past the strings reads as an error, not a panic.
        let mut b = BtfBuilder::new();
        let id = b.raw(BtfKind::Int.raw(), "", 0, false, 4, &[32]);
        let mut blob = b.build();
        let name_at = HEADER_LEN;
        blob[name_at..name_at + 4].copy_from_slice(&1000u32.to_ne_bytes());
        let btf = Btf::parse(&blob).unwrap();
        assert!(matches!(
            btf.name(id),
            Err(BtfError::BadStringOffset { offset: 1000, .. })
        ));
    }

    #[test]
    fn reads_a_big_endian_blob() {
        // The sample blob with every 32-bit word and the magic byte-swapped.
        let mut b = BtfBuilder::new();
        let int = b.int("int", 4, true);
        b.composite(BtfKind::Struct, "s", 8, &[("a", int, 0), ("b", int, 32)]);
        let le = b.build();
        if cfg!(target_endian = "big") {
            return;
        }
        let mut be = Vec::new();
        be.extend_from_slice(&BTF_MAGIC.to_be_bytes());
        be.extend_from_slice(&le[2..4]);
        let strings_at = le.len() - b.strings.len();
        for w in le[4..strings_at].chunks(4) {
            be.extend(w.iter().rev());
        }
        be.extend_from_slice(&le[strings_at..]);
        let btf = Btf::parse(&be).unwrap();
        let s = btf.find_struct("s").unwrap();
        assert_eq!(btf.member_layout(s.id, "b").unwrap().byte_offset, 4);
    }

    #[test]
    fn strings_are_shared_in_the_builder() {
        let mut b = BtfBuilder::new();
        let a = b.string("name");
        assert_eq!(b.string("name"), a);
        assert_eq!(b.string(""), 0);
        assert_ne!(b.string("nam"), a);
    }

    /// The running host kernel's own BTF, when it has one: a real, 5 MB blob.
    #[test]
    fn parses_the_host_kernel_btf() {
        if !Path::new(VMLINUX_BTF_PATH).exists() {
            return;
        }
        let btf = Btf::vmlinux().unwrap();
        assert!(btf.type_count() > 1000);
        let task = btf.find_struct("task_struct").unwrap();
        assert!(task.size_bytes > 1000);
        let pid = btf.member_layout(task.id, "pid").unwrap();
        assert_eq!(pid.size_bytes, 4);
        let list = btf.find_struct("list_head").unwrap();
        assert_eq!(list.size_bytes, 16);
        assert_eq!(
            btf.member_layout(list.id, "prev").unwrap(),
            FieldLayout {
                byte_offset: 8,
                size_bytes: 8,
                type_id: list.members[1].type_id,
            }
        );
    }

    /// Every member of every named struct in the host's BTF has a byte layout, except bit
    /// fields: the kinds, sizes and offsets of a real 5 MB blob all resolve. `LULL_TEST_BTF`
    /// names another kernel's blob to check instead (a copy of the lab guest's, say).
    #[test]
    fn every_member_of_the_host_kernel_resolves() {
        let path = std::env::var("LULL_TEST_BTF").unwrap_or_else(|_| VMLINUX_BTF_PATH.into());
        let Ok(btf) = Btf::from_file(Path::new(&path)) else {
            return;
        };
        let (mut members, mut bitfields) = (0, 0);
        for id in 1..=btf.type_count() {
            if btf.kind(id).unwrap() != BtfKind::Struct || btf.name(id).unwrap().is_empty() {
                continue;
            }
            let s = btf.composite(id).unwrap();
            for m in s.members.iter().filter(|m| !m.name.is_empty()) {
                members += 1;
                match btf.member_layout(id, &m.name) {
                    Ok(l) => assert!(
                        l.byte_offset + l.size_bytes <= s.size_bytes,
                        "{}.{}: {l:?} past {} bytes",
                        s.name,
                        m.name,
                        s.size_bytes
                    ),
                    Err(BtfError::BitField { .. }) => bitfields += 1,
                    Err(e) => panic!("{}.{}: {e}", s.name, m.name),
                }
            }
        }
        assert!(
            members > 10_000 && bitfields > 0,
            "{members} members, {bitfields} bit fields"
        );
    }

    /// Runs every query on whatever parsed, so a malformed blob that parses still cannot panic.
    fn exercise(btf: &Btf) {
        for id in 0..=btf.type_count() + 1 {
            let _ = btf.name(id);
            let _ = btf.type_size(id);
            if let Ok(s) = btf.composite(id) {
                for m in &s.members {
                    let _ = btf.member_layout(id, &m.name);
                    let _ = btf.member_layout(id, &format!("{}.x", m.name));
                }
            }
        }
        let _ = btf.find_struct("outer");
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            if let Ok(btf) = Btf::parse(&bytes) {
                exercise(&btf);
            }
        }

        #[test]
        fn random_bytes_behind_a_valid_header_never_panic(
            body in proptest::collection::vec(any::<u8>(), 0..512),
            type_len in 0u32..600,
        ) {
            let mut blob = Vec::new();
            blob.extend_from_slice(&BTF_MAGIC.to_ne_bytes());
            blob.extend_from_slice(&[BTF_VERSION, 0]);
            let str_len = (body.len() as u32).saturating_sub(type_len);
            for w in [HEADER_LEN as u32, 0, type_len, type_len, str_len] {
                blob.extend_from_slice(&w.to_ne_bytes());
            }
            blob.extend_from_slice(&body);
            if let Ok(btf) = Btf::parse(&blob) {
                exercise(&btf);
            }
        }

        #[test]
        fn truncated_or_corrupted_blobs_never_panic(
            cut in 0usize..2000,
            flips in proptest::collection::vec((0usize..2000, any::<u8>()), 0..8),
        ) {
            let mut blob = sample().blob;
            for (at, v) in flips {
                let n = blob.len();
                blob[at % n] = v;
            }
            blob.truncate(cut.min(blob.len()));
            if let Ok(btf) = Btf::parse(&blob) {
                exercise(&btf);
            }
        }
    }
}
