#!/usr/bin/env bash
# Builds the field's sched_ext schedulers that `lull lab sched` compares lull-scx with
# (docs/scx.md): scx_lavd and scx_bpfland, version pinned below, with `cargo install --locked`
# into the cache ($LULL_CACHE_DIR/scx, else $XDG_CACHE_HOME/lull/scx, else ~/.cache/lull/scx).
# cargo install does nothing when that version is already there, so only the first run pays
# (about 9 minutes each on 2 cores). They need clang (BPF_CLANG; Debian's clang-19), libelf-dev
# and Rust >= 1.91. Called by `lull lab sched`'s users, not by ./test.sh.
set -euo pipefail
SCX_VERSION=1.1.4
base="${LULL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lull}"
root="$base/scx"
mkdir -p "$root"
export BPF_CLANG="${BPF_CLANG:-clang-19}"
command -v "$BPF_CLANG" >/dev/null || { echo "scx-schedulers: $BPF_CLANG not found (scripts/setup.sh installs clang-19)" >&2; exit 1; }
for s in scx_lavd scx_bpfland; do
    if [ -x "$root/bin/$s" ] && "$root/bin/$s" --version 2>/dev/null | grep -q "$SCX_VERSION"; then
        continue
    fi
    echo "scx-schedulers: building $s $SCX_VERSION into $root (once)" >&2
    CARGO_TARGET_DIR="$root/build" cargo install --locked --quiet --root "$root" "$s@$SCX_VERSION"
done
# The installed binaries are the cache; their build tree (over a gigabyte) is not kept.
rm -rf "$root/build"
echo "$root/bin"
