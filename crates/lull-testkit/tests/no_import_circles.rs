//! No source file of a crate imports a file that imports it back: each concept has one home,
//! and the dependency between two modules runs one way (`docs/architecture.md`).
//!
//! For every `crates/*/src` tree, each file's paths into its own crate are read — `use` trees
//! and paths in code starting with `crate::`, `super::`, `self::` or a child module's name —
//! with comments, strings and character literals left out. A path is resolved against the
//! module tree (an inline `mod tests { use super::*; }` names its own file, not the parent
//! directory's module), through the re-exports (`pub use`) of the files it passes, to the file
//! that defines what it names. Two files whose paths reach each other fail the test, unless one
//! is a module the other is declared in (`a/mod.rs` and `a/b.rs`, the crate root and any file):
//! a module that defines a trait and builds its children, which implement it, is the module
//! tree's own shape, not two concepts leaning on each other.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).to_path_buf()
}

/// `text` with comments, string literals and character literals blanked (lengths kept).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, s: &[u8]| {
        out.extend(s.iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }));
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0usize, 0);
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if let Some(len) = raw_string_len(rest, i > 0 && is_ident(b[i - 1])) {
            blank(&mut out, &rest[..len]);
            i += len;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let len = (j + 1).min(rest.len());
            blank(&mut out, &rest[..len]);
            i += len;
        } else if rest[0] == b'\'' {
            // A character literal ('x', '\n', '\''), else a lifetime or a label.
            let len = if rest.get(1) == Some(&b'\\') {
                rest[2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + ch) == Some(&b'\'')).then_some(2 + ch)
            };
            let len = len.unwrap_or(1);
            if len == 1 {
                out.push(b'\'');
            } else {
                blank(&mut out, &rest[..len]);
            }
            i += len;
        } else {
            out.push(rest[0]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII was replaced")
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The length of a raw string literal (`r"…"`, `br#"…"#`) at the start of `s`, if one starts
/// there (`after_ident`: the previous character belongs to an identifier, so no literal can).
fn raw_string_len(s: &[u8], after_ident: bool) -> Option<usize> {
    if after_ident {
        return None;
    }
    let start = if s.starts_with(b"br") {
        2
    } else if s.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = s[start..].iter().take_while(|&&c| c == b'#').count();
    if s.get(start + hashes) != Some(&b'"') {
        return None;
    }
    let body = start + hashes + 1;
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    let end = s[body..].windows(close.len()).position(|w| w == close)?;
    Some(body + end + close.len())
}

/// A crate's source files by module path (`[]` is the root; `["a", "b"]` is `a/b.rs` or
/// `a/b/mod.rs`).
struct Tree {
    files: BTreeMap<Vec<String>, PathBuf>,
}

impl Tree {
    fn read(src: &Path) -> Tree {
        let mut files = BTreeMap::new();
        let mut stack = vec![src.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    // A binary's own tree (`src/bin`) is another crate.
                    if p != src.join("bin") {
                        stack.push(p);
                    }
                    continue;
                }
                if p.extension().is_none_or(|x| x != "rs") {
                    continue;
                }
                let rel = p.strip_prefix(src).unwrap().with_extension("");
                let mut segs: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if segs.last().is_some_and(|s| s == "mod") {
                    segs.pop();
                }
                // The root: `lib.rs`, or `main.rs` of a package without one.
                if segs == ["lib"] || (segs == ["main"] && !src.join("lib.rs").exists()) {
                    segs.clear();
                }
                files.insert(segs, p);
            }
        }
        Tree { files }
    }

    /// The file of the longest prefix of `path` that is a file module, and what follows it.
    fn file_of<'a>(&self, path: &'a [String]) -> (&[String], &'a [String]) {
        for k in (0..=path.len()).rev() {
            if let Some((key, _)) = self.files.get_key_value(&path[..k]) {
                return (key, &path[k..]);
            }
        }
        unreachable!("the root is always a file")
    }

    fn is_module(&self, path: &[String]) -> bool {
        self.files.contains_key(path)
    }
}

/// What one file says: the paths it uses (absolute, from the crate root) and its re-exports.
#[derive(Default)]
struct FileUses {
    paths: Vec<Vec<String>>,
    /// `pub use` names: exported name → absolute path.
    reexports: BTreeMap<String, Vec<String>>,
}

/// Expands a `use` tree (`a::{b, c::{d, e as f}, self}`) into (path, name bound) pairs.
fn expand_use(tree: &str) -> Vec<(Vec<String>, String)> {
    fn go(prefix: &[String], tree: &str, out: &mut Vec<(Vec<String>, String)>) {
        let tree = tree.trim();
        if let Some(open) = tree.find('{') {
            let head: Vec<String> = tree[..open]
                .split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            let mut p = prefix.to_vec();
            p.extend(head);
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            let (mut depth, mut start) = (0, 0);
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        go(&p, &inner[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            go(&p, &inner[start..], out);
            return;
        }
        if tree.is_empty() {
            return;
        }
        let (path, alias) = match tree.split_once(" as ") {
            Some((p, a)) => (p.trim(), Some(a.trim())),
            None => (tree, None),
        };
        let mut p = prefix.to_vec();
        p.extend(path.split("::").map(str::trim).map(str::to_owned));
        if p.last().is_some_and(|s| s == "self") {
            p.pop();
        }
        let name = alias
            .map(str::to_owned)
            .or_else(|| p.last().cloned())
            .unwrap_or_default();
        out.push((p, name));
    }
    let mut out = Vec::new();
    go(&[], tree, &mut out);
    out
}

/// `path` (as written in module `module`) from the crate root, or `None` for another crate's.
fn absolute(tree: &Tree, module: &[String], path: &[String]) -> Option<Vec<String>> {
    let first = path.first()?;
    match first.as_str() {
        "crate" => Some(path[1..].to_vec()),
        "self" => Some([module, &path[1..]].concat()),
        "super" => {
            let mut m = module.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                m.pop();
                rest = &rest[1..];
            }
            Some([&m[..], rest].concat())
        }
        _ => {
            let child = [module, &path[..1]].concat();
            tree.is_module(&child).then(|| [module, path].concat())
        }
    }
}

/// The module each byte of `code` is in: the file's own path plus the inline `mod x { … }`
/// blocks around it.
fn inline_modules(code: &str, file_module: &[String]) -> Vec<(usize, Vec<String>)> {
    let b = code.as_bytes();
    let mut spans = vec![(0, file_module.to_vec())];
    let mut stack: Vec<(usize, Vec<String>)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if stack.last().is_some_and(|(d, _)| *d == depth) {
                    stack.pop();
                    let m = stack
                        .last()
                        .map_or_else(|| file_module.to_vec(), |(_, m)| m.clone());
                    spans.push((i + 1, m));
                }
            }
            b'm' if code[i..].starts_with("mod ") && (i == 0 || !is_ident(b[i - 1])) => {
                let name: String = code[i + 4..]
                    .trim_start()
                    .chars()
                    .take_while(|&c| c.is_alphanumeric() || c == '_')
                    .collect();
                let after = code[i + 4..].trim_start()[name.len()..].trim_start();
                if after.starts_with('{') {
                    let mut m = stack
                        .last()
                        .map_or_else(|| file_module.to_vec(), |(_, m)| m.clone());
                    m.push(name);
                    stack.push((depth, m.clone()));
                    let open = i + code[i..].find('{').unwrap();
                    spans.push((open, m));
                }
            }
            _ => {}
        }
        i += 1;
    }
    spans
}

fn module_at(spans: &[(usize, Vec<String>)], at: usize) -> &[String] {
    &spans.iter().rev().find(|(s, _)| *s <= at).unwrap().1
}

fn file_uses(tree: &Tree, file_module: &[String], text: &str) -> FileUses {
    let code = code_only(text);
    let spans = inline_modules(&code, file_module);
    let b = code.as_bytes();
    let mut uses = FileUses::default();
    let mut covered = vec![false; b.len()];
    // `use` trees, with the re-exports among them.
    let mut i = 0;
    while let Some(p) = code[i..].find("use ") {
        let at = i + p;
        i = at + 4;
        if at > 0 && is_ident(b[at - 1]) {
            continue;
        }
        let Some(end) = code[at..].find(';').map(|e| at + e) else {
            break;
        };
        let line_start = code[..at].rfind(['\n', ';', '}', '{']).map_or(0, |s| s + 1);
        let public = code[line_start..at].trim_start().starts_with("pub");
        let module = module_at(&spans, at);
        for (path, name) in expand_use(&code[at + 4..end]) {
            if path.last().is_some_and(|s| s == "*") {
                let glob = &path[..path.len() - 1];
                if let Some(abs) = absolute(tree, module, glob) {
                    uses.paths.push(abs);
                }
                continue;
            }
            if let Some(abs) = absolute(tree, module, &path) {
                if public && module == file_module {
                    uses.reexports.insert(name, abs.clone());
                }
                uses.paths.push(abs);
            }
        }
        covered[at..end].iter_mut().for_each(|c| *c = true);
        i = end;
    }
    // Paths in code: `a::b::c` not preceded by `::`, `$` or an identifier.
    let mut i = 0;
    while i < b.len() {
        let starts = is_ident(b[i])
            && !b[i].is_ascii_digit()
            && (i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b'$' || b[i - 1] == b':'));
        if !starts || covered[i] {
            i += 1;
            continue;
        }
        let mut segs = Vec::new();
        let mut j = i;
        loop {
            let s = j;
            while j < b.len() && is_ident(b[j]) {
                j += 1;
            }
            segs.push(code[s..j].to_owned());
            if code[j..].starts_with("::")
                && code[j + 2..].starts_with(|c: char| c == '_' || c.is_alphabetic())
            {
                j += 2;
            } else {
                break;
            }
        }
        if segs.len() > 1 {
            if let Some(abs) = absolute(tree, module_at(&spans, i), &segs) {
                uses.paths.push(abs);
            }
        }
        i = j.max(i + 1);
    }
    uses
}

/// The files each file of the tree reaches, following re-exports.
fn edges(tree: &Tree) -> BTreeMap<Vec<String>, BTreeMap<Vec<String>, Vec<String>>> {
    let uses: BTreeMap<Vec<String>, FileUses> = tree
        .files
        .iter()
        .map(|(m, p)| {
            (
                m.clone(),
                file_uses(tree, m, &std::fs::read_to_string(p).unwrap()),
            )
        })
        .collect();
    let mut out = BTreeMap::new();
    for (m, u) in &uses {
        let mut to: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
        for path in &u.paths {
            let mut path = path.clone();
            let mut hops = 0;
            // Through re-exports to the file that defines the item (a few hops at most).
            let file = loop {
                hops += 1;
                let (file, rest) = tree.file_of(&path);
                let hop = rest
                    .first()
                    .and_then(|name| uses[file].reexports.get(name))
                    .filter(|target| **target != path[..file.len() + 1]);
                match hop {
                    Some(target) if file != m.as_slice() && hops < 8 => {
                        path = [&target[..], &rest[1..]].concat();
                    }
                    _ => break file.to_vec(),
                }
            };
            if &file != m {
                to.entry(file).or_insert_with(|| path.clone());
            }
        }
        out.insert(m.clone(), to);
    }
    out
}

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate root".to_owned()
    } else {
        m.join("::")
    }
}

/// Every pair of files of `src` that import each other, neither declared inside the other, and
/// every longer loop ([`loops`]), described.
fn circles(src: &Path) -> Vec<String> {
    let tree = Tree::read(src);
    let edges = edges(&tree);
    let mut found = Vec::new();
    for (a, to) in &edges {
        for (b, via) in to {
            let nested = b.starts_with(a) || a.starts_with(b);
            if a < b && !nested {
                if let Some(back) = edges.get(b).and_then(|t| t.get(a)) {
                    found.push(format!(
                        "{} uses {} and {} uses {}",
                        show(a),
                        via.join("::"),
                        show(b),
                        back.join("::")
                    ));
                }
            }
        }
    }
    found.extend(loops(&edges));
    found
}

/// Every loop of three files or more: the strongly connected parts of the import graph without
/// the imports from a module into the modules that enclose it (the `super::` of a child, as
/// above), each described by the imports inside it.
fn loops(edges: &BTreeMap<Vec<String>, BTreeMap<Vec<String>, Vec<String>>>) -> Vec<String> {
    let names: Vec<&Vec<String>> = edges.keys().collect();
    let index: BTreeMap<&Vec<String>, usize> =
        names.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let out: Vec<Vec<usize>> = names
        .iter()
        .map(|a| {
            edges[*a]
                .keys()
                .filter(|b| !a.starts_with(b))
                .filter_map(|b| index.get(b).copied())
                .collect()
        })
        .collect();
    let mut found = Vec::new();
    for part in strongly_connected(&out) {
        if part.len() < 3 {
            continue;
        }
        let mut inside = Vec::new();
        for &a in &part {
            for &b in out[a].iter().filter(|b| part.contains(b)) {
                let via = &edges[names[a]][names[b]];
                inside.push(format!("{} uses {}", show(names[a]), via.join("::")));
            }
        }
        found.push(format!(
            "a loop of {} files: {}",
            part.len(),
            inside.join(", ")
        ));
    }
    found
}

/// Tarjan's strongly connected components of a graph given as adjacency lists, each sorted.
fn strongly_connected(out: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct Walk<'a> {
        out: &'a [Vec<usize>],
        order: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on_stack: Vec<bool>,
        next: usize,
        parts: Vec<Vec<usize>>,
    }
    fn visit(w: &mut Walk<'_>, v: usize) {
        w.order[v] = Some(w.next);
        w.low[v] = w.next;
        w.next += 1;
        w.stack.push(v);
        w.on_stack[v] = true;
        for &u in &w.out[v] {
            match w.order[u] {
                None => {
                    visit(w, u);
                    w.low[v] = w.low[v].min(w.low[u]);
                }
                Some(o) if w.on_stack[u] => w.low[v] = w.low[v].min(o),
                Some(_) => {}
            }
        }
        if Some(w.low[v]) == w.order[v] {
            let mut part = Vec::new();
            while let Some(u) = w.stack.pop() {
                w.on_stack[u] = false;
                part.push(u);
                if u == v {
                    break;
                }
            }
            part.sort_unstable();
            w.parts.push(part);
        }
    }
    let n = out.len();
    let mut w = Walk {
        out,
        order: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on_stack: vec![false; n],
        next: 0,
        parts: Vec::new(),
    };
    for v in 0..n {
        if w.order[v].is_none() {
            visit(&mut w, v);
        }
    }
    w.parts
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let mut all = Vec::new();
    let mut crates = 0;
    for e in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let src = e.path().join("src");
        if src.is_dir() {
            crates += 1;
            let name = e.file_name().to_string_lossy().into_owned();
            all.extend(circles(&src).into_iter().map(|c| format!("{name}: {c}")));
        }
    }
    assert!(crates >= 20, "found only {crates} crates");
    assert!(
        all.is_empty(),
        "files that import each other:\n{}",
        all.join("\n")
    );
}

/// The reader finds a circle through a `use` group and through a re-export, one between
/// cousins in the module tree and a loop of three through a parent and its child; a parent module and its child naming each other are not one;
/// neither an inline test module's `use super::*`, nor a comment or a string, is an import.
#[test]
fn the_reader_sees_circles_and_only_circles() {
    let dir = std::env::temp_dir().join(format!("lull-circles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "lib.rs",
        "pub mod a;\npub mod b;\npub mod c;\npub mod d;\npub mod guest;\npub mod host;\npub use c::C;\n",
    );
    write("a.rs", "use crate::{b::{B, self}, d};\npub struct A;\n");
    write("b.rs", "pub struct B(crate::a::A);\n");
    // Through the root's re-export of `c::C`.
    write("c.rs", "pub struct C;\nfn f() -> crate::d::D { todo!() }\n");
    write("d.rs", "pub struct D(crate::C);\n");
    // A parent that names its child, a child that names its parent: the module tree.
    write(
        "host/mod.rs",
        "mod side;\nfn g() { side::h(); }\npub struct H;\n",
    );
    // Cousins: `host::side` and `guest::inner` (through `super::super`).
    write(
        "host/side.rs",
        "pub struct S;\npub fn h() -> super::H { super::H }\nfn k(_: crate::guest::inner::G) {}\n",
    );
    write("guest/mod.rs", "pub mod inner;\n");
    write(
        "guest/inner.rs",
        "pub struct G(super::super::host::side::S);\n",
    );
    // Neither a test module's glob, nor a comment, nor a string is an import.
    write(
        "e.rs",
        "// crate::a::A\nconst S: &str = \"crate::a::A\";\nconst Q: char = '\"';\n\
         #[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    );
    write(
        "lib.rs",
        &(std::fs::read_to_string(dir.join("lib.rs")).unwrap() + "pub mod e;\n"),
    );
    // A loop of three through a parent naming its child: `k` uses `k::kb`, which uses `p`,
    // which uses `k`.
    write("k/mod.rs", "mod kb;\npub use kb::Kb;\npub struct K;\n");
    write("k/kb.rs", "pub struct Kb(crate::p::P);\n");
    write("p.rs", "pub struct P;\nfn f(_: crate::k::K) {}\n");
    write(
        "lib.rs",
        &(std::fs::read_to_string(dir.join("lib.rs")).unwrap() + "pub mod k;\npub mod p;\n"),
    );
    let mut found = circles(&dir);
    found.sort();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        [
            "a loop of 3 files: k uses k::kb::Kb, k::kb uses p::P, p uses k::K",
            "a uses b::B and b uses a::A",
            "c uses d::D and d uses c::C",
            "guest::inner uses host::side::S and host::side uses guest::inner::G",
        ]
    );
}
