#!/usr/bin/env bash
# The whole test suite: installs what is missing, then formatting, lints (warnings are errors)
# and every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/setup.sh
echo "== cargo fmt --check" >&2
cargo fmt --all --check
echo "== cargo clippy -D warnings" >&2
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test" >&2
cargo test --workspace --locked
echo "== Python package (pip install ./python, pytest)" >&2
CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}" python3 -m pip install -q --root-user-action=ignore --no-build-isolation ./python
python3 -m pytest python/tests -q
