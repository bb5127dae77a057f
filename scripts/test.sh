#!/usr/bin/env bash
# ptxsmith's test command: `bash scripts/test.sh`.
#
# 1. Installs the pinned NVIDIA tools (scripts/install-nvidia-tools.sh).
#    Locally a failure only skips the assembler checks, with a warning;
#    with CI=true it is fatal, and PTXSMITH_REQUIRE_NVIDIA_TOOLS=1 makes any
#    test that finds no tools fail instead of skipping.
# 2. cargo test --release: lib, bins, integration tests, examples and
#    benches (built and run in test mode), then the doc tests. With CI=true
#    the #[ignore]d tests (long exhaustive sweeps) run too.
#
# Every cargo invocation builds with --all-features (the tuning report and
# the interop features are tested too); extra arguments are passed to every
# `cargo test` invocation before `--`.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo" || exit 1

ci=false
tools_missing=false
[[ "${CI:-}" == "true" ]] && ci=true

section() { printf '\n==== %s ====\n' "$*"; }

section "NVIDIA tools (ptxas, nvdisasm)"
if bash "$repo/scripts/install-nvidia-tools.sh"; then
    :
elif $ci; then
    echo "ERROR: CI=true and the pinned NVIDIA tools could not be installed; failing." >&2
    exit 1
else
    tools_missing=true
    cat >&2 <<'BANNER'

########################################################################
##  WARNING: NVIDIA tools missing, assembler checks will be SKIPPED
##  The pinned ptxas 12.9.86 / nvdisasm 13.5.37 could not be installed,
##  so every ptxas/nvdisasm test returns early ("SKIP: ..."). CI runs
##  them; fix the install (network to PyPI, python3 -m pip) before
##  trusting a green run.
########################################################################

BANNER
fi

harness_args=()
if $ci; then
    export PTXSMITH_REQUIRE_NVIDIA_TOOLS=1
    harness_args+=(--include-ignored)
fi

status=0
logs="$(mktemp -d "${TMPDIR:-/tmp}/ptxsmith-test.XXXXXX")"
trap 'rm -rf "$logs"' EXIT
run() {
    section "$*"
    "$@" || status=1
}
# run_logged NAME CMD...: run, keeping a copy of the output in $logs/NAME
# for the counts in the summary.
run_logged() {
    local name="$1"
    shift
    section "$*"
    "$@" 2>&1 | tee "$logs/$name"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
}
# counts NAME: "P passed, F failed, I ignored" summed over the libtest
# `test result:` lines of $logs/NAME.
counts() {
    awk '/^test result:/ { for (i = 1; i <= NF; i++) {
            if ($(i) ~ /^passed/) p += $(i-1); if ($(i) ~ /^failed/) f += $(i-1);
            if ($(i) ~ /^ignored/) g += $(i-1) } }
         END { printf "%d passed, %d failed, %d ignored\n", p, f, g }' "$logs/$1" 2>/dev/null
}

# libtest targets (lib, bins, tests, examples) take the harness arguments;
# criterion benches (harness = false) reject --include-ignored, so they run
# separately, in criterion's quick test mode.
set -- --all-features "$@"
run_logged tests cargo test --release "$@" --lib --bins --tests --examples -- "${harness_args[@]}"
metadata="$(cargo metadata --no-deps --format-version 1 2>/dev/null)"
if [[ "$metadata" == *'"kind":["bench"]'* ]]; then
    run cargo test --release "$@" --bench '*'
fi
run_logged doctests cargo test --release "$@" --doc -- "${harness_args[@]}"

# Lints: what a published crate is held to (rustfmt, clippy with warnings
# as errors, rustdoc without warnings).
run cargo fmt --all --check
run cargo clippy --release "$@" --all-targets -- -D warnings
section "cargo doc --no-deps (RUSTDOCFLAGS=-D warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --release "$@" --no-deps --quiet || status=1

# Packaging: the file list, and a dry-run publish that builds the packaged
# sources on their own (what crates.io would receive).
run_logged package cargo package --list --allow-dirty
if ! grep -qx 'LICENSE-MIT' "$logs/package" || grep -q '^\.nvidia-tools\|^target/' "$logs/package"; then
    echo "package list: licences missing or build/tool folders included" >&2
    status=1
fi
run cargo publish --dry-run --allow-dirty

# The files `dump_ptx --sm all` writes are what users inspect: each one
# must assemble with the pinned ptxas for the target in its name.
if ! $tools_missing; then
    section "dump_ptx --sm all: every file assembles with ptxas"
    dump="$(mktemp -d "${TMPDIR:-/tmp}/ptxsmith-dump.XXXXXX")"
    ptxas="$(bash "$repo/scripts/install-nvidia-tools.sh" --print-dir)/nvidia/cuda_nvcc/bin/ptxas"
    if cargo run --release --quiet "$@" --example dump_ptx -- --sm all --out "$dump" >/dev/null; then
        files=0
        for f in "$dump"/*.ptx; do
            sm="sm_${f##*.sm_}"
            sm="${sm%.ptx}"
            if ! "$ptxas" -arch="$sm" "$f" -o /dev/null; then
                echo "ptxas rejected $f" >&2
                status=1
            fi
            files=$((files + 1))
        done
        echo "$files files assembled"
        [[ $files -gt 0 ]] || status=1
    else
        status=1
    fi
    rm -rf "$dump"
fi

section "summary"
echo "tests:    $(counts tests)"
echo "doctests: $(counts doctests)"
if $tools_missing; then
    echo "WARNING: NVIDIA tools missing, assembler checks were SKIPPED" >&2
fi
if [[ $status -eq 0 ]]; then
    echo "all tests passed (CI=$ci)"
else
    echo "TESTS FAILED (CI=$ci)" >&2
fi
exit $status
