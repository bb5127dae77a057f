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
# Extra arguments are passed to every `cargo test` invocation before `--`,
# e.g. `bash scripts/test.sh --features foo`.
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
run() {
    section "$*"
    "$@" || status=1
}

# libtest targets (lib, bins, tests, examples) take the harness arguments;
# criterion benches (harness = false) reject --include-ignored, so they run
# separately, in criterion's quick test mode.
run cargo test --release "$@" --lib --bins --tests --examples -- "${harness_args[@]}"
metadata="$(cargo metadata --no-deps --format-version 1 2>/dev/null)"
if [[ "$metadata" == *'"kind":["bench"]'* ]]; then
    run cargo test --release "$@" --bench '*'
fi
run cargo test --release "$@" --doc -- "${harness_args[@]}"

# The files `dump_ptx --sm all` writes are what users inspect: each one
# must assemble with the pinned ptxas for the target in its name.
if ! $tools_missing; then
    section "dump_ptx --sm all: every file assembles with ptxas"
    dump="$(mktemp -d "${TMPDIR:-/tmp}/ptxsmith-dump.XXXXXX")"
    ptxas="$(bash "$repo/scripts/install-nvidia-tools.sh" --print-dir)/nvidia/cuda_nvcc/bin/ptxas"
    if cargo run --release --quiet --example dump_ptx -- --sm all --out "$dump" >/dev/null; then
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
if $tools_missing; then
    echo "WARNING: NVIDIA tools missing, assembler checks were SKIPPED" >&2
fi
if [[ $status -eq 0 ]]; then
    echo "all tests passed (CI=$ci)"
else
    echo "TESTS FAILED (CI=$ci)" >&2
fi
exit $status
