//! The README's layout and `docs/architecture.md`'s crate table and dependency graph name
//! exactly the workspace's crates: a crate added or removed without its docs fails here.

use std::collections::BTreeSet;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The directories under `crates/` that hold a package.
fn members() -> BTreeSet<String> {
    std::fs::read_dir(root().join("crates"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap()
}

/// The fenced block that follows the line `after`.
fn block_after<'a>(text: &'a str, after: &str) -> &'a str {
    let start = text
        .find(after)
        .unwrap_or_else(|| panic!("{after:?} not found"));
    let rest = &text[start..];
    let open = rest.find("```").unwrap() + 3;
    let close = open + rest[open..].find("```").unwrap();
    &rest[open..close]
}

#[test]
fn the_readme_layout_names_every_crate() {
    let readme = read("README.md");
    let layout = block_after(&readme, "## Layout");
    let named: BTreeSet<String> = layout
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("crates/"))
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .collect();
    assert_eq!(named, members());
}

#[test]
fn the_architecture_table_and_graph_name_every_crate() {
    let arch = read("docs/architecture.md");
    let table: BTreeSet<String> = arch
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(name, _)| name.to_owned())
        .filter(|n| n.starts_with("lull"))
        .collect();
    assert_eq!(table, members(), "the crate table");
    let graph = block_after(&arch, "Dependency graph");
    let mut in_graph = BTreeSet::new();
    for line in graph.lines() {
        let Some((left, right)) = line.split_once("->") else {
            continue;
        };
        for name in left.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            in_graph.insert(name.to_owned());
        }
        for name in right.split(',').map(str::trim) {
            if name.starts_with("lull") && !name.contains(' ') {
                in_graph.insert(name.to_owned());
            }
        }
    }
    assert_eq!(in_graph, members(), "the dependency graph");
}
