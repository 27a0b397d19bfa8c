#!/usr/bin/env bash
# Installs what building and testing Lull needs on a fresh Debian machine, and nothing when it is
# all there already. Called by ./lull and ./test.sh; safe to run by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the build or the tests need, one per line in scripts/debian-packages.txt.
mapfile -t wanted < <(grep -v '^\s*\(#\|$\)' scripts/debian-packages.txt || true)
missing=()
for pkg in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "setup: installing Debian packages: ${missing[*]}" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
        sudo="sudo"
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null; then
    echo "setup: cargo not found; install a stable Rust toolchain (rustup.rs) and run again" >&2
    exit 1
fi
if command -v rustup >/dev/null; then
    for comp in rustfmt clippy; do
        rustup component list --installed 2>/dev/null | grep -q "^$comp" || rustup component add "$comp" >&2
    done
fi

# The Python package's build and test tools (python/, docs/python.md), for the interpreter on
# PATH; installed with pip only when missing.
if command -v python3 >/dev/null; then
    py_missing=()
    for mod_pkg in maturin:maturin pandas:pandas pyarrow:pyarrow distributed:"dask[distributed]" pytest:pytest; do
        mod="${mod_pkg%%:*}"
        python3 -c "import $mod" 2>/dev/null || py_missing+=("${mod_pkg#*:}")
    done
    if ((${#py_missing[@]})); then
        echo "setup: installing Python packages: ${py_missing[*]}" >&2
        # A Debian-managed interpreter refuses pip outside a virtualenv (PEP 668); pyenv's does not.
        if python3 -m pip install -q --root-user-action=ignore "${py_missing[@]}" 2>/dev/null; then :
        else python3 -m pip install -q --root-user-action=ignore --break-system-packages "${py_missing[@]}"; fi
    fi
else
    echo "setup: python3 not found; the Python package (python/) will not be built" >&2
fi
