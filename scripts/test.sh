#!/usr/bin/env bash
# ptxsmith's test command: `bash scripts/test.sh`.
#
# 1. Installs the pinned NVIDIA tools (scripts/install-nvidia-tools.sh).
#    Locally a failure only skips the assembler checks, with a warning;
#    with CI=true it is fatal, and PTXSMITH_REQUIRE_NVIDIA_TOOLS=1 makes any
#    test that finds no tools fail instead of skipping.
# 2. cargo test --release: lib, bins, integration tests, examples and
#    benches (built and run in test mode) of the workspace (ptxsmith and the
#    CUDA driver emulator, cuda-emu/), then the doc tests. With CI=true the
#    #[ignore]d tests (long exhaustive sweeps) run too. Without a GPU the
#    device tests print "SKIP: no CUDA device" here.
# 3. The device tests again, on the CUDA driver emulator: every test binary
#    holding a device test (a test whose name contains `gpu_` or `device`,
#    as scripts/device-suite.sh selects them) runs those tests with the
#    emulator as libcuda.so.1 (cuda-emu/with-emu.sh) and
#    PTXSMITH_REQUIRE_GPU=1, so none may skip; then the demo and interop
#    examples, which must report that they ran on the device. The number
#    of device tests that ran is printed. PTXSMITH_SKIP_EMULATOR=1 leaves
#    this pass out.
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
run cargo test --release --workspace "$@" --lib --bins --tests --examples -- "${harness_args[@]}"
metadata="$(cargo metadata --no-deps --format-version 1 2>/dev/null)"
if [[ "$metadata" == *'"kind":["bench"]'* ]]; then
    run cargo test --release "$@" --bench '*'
fi
run cargo test --release --workspace "$@" --doc -- "${harness_args[@]}"

# "kind name executable" of each artifact with an executable in cargo's
# JSON messages in file $1.
artifacts() {
    sed -n 's/^{"reason":"compiler-artifact".*"target":{"kind":\["\([a-z-]*\)"\][^}]*"name":"\([^"]*\)".*"executable":"\([^"]*\)".*/\1 \2 \3/p' "$1" | sort -u
}

# The device tests on the CUDA driver emulator (cuda-emu/): the GPU path of
# the runtime, through the real driver FFI, on any machine.
emulator_pass() {
    local dir json exe kind name tests log n ran=0 binaries=0 early=0 t0 failed=0
    t0=$(date +%s)
    if ! dir="$(bash "$repo/cuda-emu/with-emu.sh")"; then
        echo "the emulator did not build" >&2
        return 1
    fi
    json="$(mktemp "${TMPDIR:-/tmp}/ptxsmith-emu.XXXXXX")"
    log="$json.log"
    if ! cargo test --release "$@" --no-run --lib --tests --message-format=json >"$json" ||
        ! cargo build --release "$@" --example demo --example interop --message-format=json >>"$json"; then
        rm -f "$json"
        return 1
    fi
    while read -r kind name exe; do
        [[ "$kind" == lib || "$kind" == test ]] || continue
        tests="$("$exe" --list 2>/dev/null | sed -n 's/: test$//p' | grep -E 'gpu_|device')"
        [[ -n "$tests" ]] || continue
        binaries=$((binaries + 1))
        if ! LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PTXSMITH_REQUIRE_GPU=1 \
            "$exe" "${harness_args[@]}" --show-output gpu_ device >"$log" 2>&1; then
            echo "FAILED on the emulator: $name" >&2
            tail -n 40 "$log" >&2
            failed=1
        fi
        if grep -q '^SKIP: no CUDA device' "$log"; then
            echo "FAILED: $name printed SKIP under the emulator" >&2
            failed=1
        fi
        n="$(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed.*/\1/p' "$log" | head -n 1)"
        ran=$((ran + ${n:-0}))
        early=$((early + $(grep -c '^EMULATOR: not run' "$log")))
        grep '^EMULATOR: not run' "$log" | sed "s/^/  $name: /"
        printf '  %-24s %3s device tests passed\n' "$name" "${n:-0}"
    done < <(artifacts "$json")
    local ex want exe
    for ex in demo interop; do
        exe="$(artifacts "$json" | awk -v n="$ex" '$1 == "example" && $2 == n { print $3 }' | tail -n 1)"
        case "$ex" in
        demo) want='backend cuda' ;;
        interop) want='^GPU: raw entry points' ;;
        esac
        if LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PTXSMITH_REQUIRE_GPU=1 \
            "$exe" >"$log" 2>&1 && grep -qE "$want" "$log"; then
            echo "  example $ex: ran on the device ($(grep -E "$want" "$log" | head -n 1))"
        else
            echo "FAILED: example $ex on the emulator" >&2
            tail -n 20 "$log" >&2
            failed=1
        fi
    done
    rm -f "$json" "$log"
    echo "emulator pass: $ran device tests ran in $binaries test binaries, 0 skipped" \
        "($early returned early, GPU-only by name), demo and interop on the device; $(($(date +%s) - t0)) s"
    return $failed
}
if [[ "${PTXSMITH_SKIP_EMULATOR:-0}" != 1 ]]; then
    section "device tests on the CUDA driver emulator (cuda-emu: libcuda.so.1 on the simulator)"
    emulator_pass "$@" || status=1
fi

# The files `dump_ptx --sm all` writes are what users inspect: each one
# must assemble with the pinned ptxas for the target in its name.
if ! $tools_missing; then
    section "dump_ptx --sm all: every file assembles with ptxas"
    dump="$(mktemp -d "${TMPDIR:-/tmp}/ptxsmith-dump.XXXXXX")"
    ptxas="${PTXSMITH_NVIDIA_TOOLS:-$repo/.nvidia-tools}/nvidia/cuda_nvcc/bin/ptxas"
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
