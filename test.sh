#!/usr/bin/env bash
# The whole test suite: installs what is missing, then formatting, lints (warnings are errors),
# every test of the workspace, the lab guest's tests and the Python package's. Every step runs
# even when an earlier one fails; the end lists what failed and how many tests skipped and why,
# and the script exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")"
./scripts/setup.sh || exit 1
mkdir -p target
# Each test that cannot run here appends "FILE:LINE TEST<TAB>REASON" to this file
# (lull_testkit::skip); LULL_REQUIRE_ALL=1 makes such a test fail instead.
export LULL_SKIP_LOG="$PWD/target/test-skips.log"
: >"$LULL_SKIP_LOG"
failed=()
step() {
    local name="$1"
    shift
    echo "== $name" >&2
    "$@" || failed+=("$name")
}
step "cargo fmt --check" cargo fmt --all --check
step "cargo clippy -D warnings" cargo clippy --workspace --all-targets --locked -- -D warnings
# --no-fail-fast: every test binary runs; cargo names the ones that failed at the end.
echo "== cargo test" >&2
cargo test --workspace --locked --no-fail-fast 2>&1 | tee target/test-output.log
if [ "${PIPESTATUS[0]}" -ne 0 ]; then
    mapfile -t bins < <(sed -n 's/^    `\(.*\)`$/\1/p' target/test-output.log)
    failed+=("cargo test: ${bins[*]:-see target/test-output.log}")
fi
# Tests that need what this host's kernel may lack (uinput, evdev, sched_ext, BPF on the input
# path) are tests/guest_*.rs, ignored above; they run here in the lab guest (docs/lab-vm.md),
# which prints how many ran there, or why none could.
step "lab guest tests (lull lab vm --tests)" cargo run -q --locked -p lull-cli --bin lull -- lab vm --tests
echo "== Python package (pip install ./python, pytest)" >&2
if CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}" python3 -m pip install -q --root-user-action=ignore --no-build-isolation ./python; then
    step "pytest" python3 -m pytest python/tests -q
else
    failed+=("pip install ./python")
fi

skips=$(wc -l <"$LULL_SKIP_LOG")
echo "== skipped: $skips tests (each passed without testing anything; details in $LULL_SKIP_LOG)" >&2
if [ "$skips" -gt 0 ]; then
    cut -f2- "$LULL_SKIP_LOG" | sort | uniq -c | sort -rn >&2
    echo "   (\`lull doctor\` says what this machine lacks; LULL_REQUIRE_ALL=1 makes a skip fail)" >&2
fi
if ((${#failed[@]})); then
    echo "== FAILED: ${#failed[@]} step(s)" >&2
    printf '   %s\n' "${failed[@]}" >&2
    exit 1
fi
echo "== all passed" >&2
