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
# Tests that need what this host's kernel may lack (uinput, evdev, sched_ext, BPF on the input
# path) are tests/guest_*.rs, ignored above; they run here in the lab guest (docs/lab-vm.md),
# which prints how many ran there, or why none could.
echo "== lab guest tests (lull lab vm --tests)" >&2
cargo run -q --locked -p lull-cli --bin lull -- lab vm --tests
echo "== Python package (pip install ./python, pytest)" >&2
CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}" python3 -m pip install -q --root-user-action=ignore --no-build-isolation ./python
python3 -m pytest python/tests -q
