#!/usr/bin/env bash
# Run cudarc 0.19's own driver-only unit tests (its inline #[cfg(test)]
# modules: the package ships no tests/ directory) on the emulator, and
# print the pass/fail counts and the failing tests.
#
#   bash cuda-emu/scripts/cudarc-suite.sh            # counts, failures
#   bash cuda-emu/scripts/cudarc-suite.sh -- FILTER  # only tests matching
#
# cudarc's source comes from the cargo registry (fetched with
# `cargo fetch` of this workspace, which depends on cudarc 0.19); it is
# copied to a temporary directory and tested there with the features
# `driver`, `std`, `dynamic-loading`, `cuda-12090` only (no NVRTC, no
# libraries; `--nvrtc` adds `nvrtc`: see nvrtc-suite.sh), against the emulator as libcuda.so (cuda-emu/with-emu.sh).
#   bash cuda-emu/scripts/cudarc-suite.sh --ci       # what CI runs: without
#                                                    # the GPU-timing tests
#
# `--ci` leaves out, by name, the tests that measure GPU speed or
# concurrency (a CPU emulation cannot show either; they are listed in
# GPU_TIMING below and printed), and runs the two-device tests cudarc
# marks ignored on an emulator with two devices. Exit status: 0 when every test passed, 1
# otherwise, 2 when cudarc's source cannot be found. CI runs the
# driver-only suite with `--ci` (scripts/test.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
emu="$(dirname "$here")"
repo="$(dirname "$emu")"
filter=()
# Tests that time the GPU: a pinned-memory bandwidth comparison, and two
# NVRTC tests asserting that launches on two streams overlap.
GPU_TIMING=(
    test_default_pinned_host_reads_are_faster_than_write_combined
    test_multi_stream_concurrent_reads
    test_par_launch
)
ci=false
if [[ "${1:-}" == "--ci" ]]; then
    shift
    ci=true
fi
# `--nvrtc` (used by nvrtc-suite.sh, which puts NVRTC on LD_LIBRARY_PATH):
# cudarc's `nvrtc` feature too, so its NVRTC tests compile CUDA C++ and
# launch the PTX on the emulator.
features=driver,std,dynamic-loading,cuda-12090
what="cudarc driver tests"
if [[ "${1:-}" == "--nvrtc" ]]; then
    shift
    features=driver,nvrtc,std,dynamic-loading,cuda-12090
    what="cudarc driver + NVRTC tests"
fi
if [[ "${1:-}" == "--" ]]; then
    shift
    filter=("$@")
fi
if $ci; then
    for t in "${GPU_TIMING[@]}"; do
        filter+=(--skip "$t")
    done
    echo "cudarc-suite.sh --ci: left out (they time the GPU): ${GPU_TIMING[*]}"
    # cudarc ignores the tests that need two devices; the emulator has two
    # when asked.
    filter+=(--include-ignored)
    export PTXSMITH_EMU_DEVICES="${PTXSMITH_EMU_DEVICES:-sm_90,sm_90}"
fi
find_src() {
    ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/cudarc-0.19.* 2>/dev/null | sort -V | tail -1
}
src="$(find_src || true)"
if [[ -z "$src" ]]; then
    (cd "$repo" && cargo fetch --quiet) || true
    src="$(find_src || true)"
fi
if [[ -z "$src" ]]; then
    echo "##############################################################" >&2
    echo "cudarc-suite.sh: cudarc 0.19's source is not in the cargo registry" >&2
    echo "and could not be fetched: the suite did NOT run." >&2
    echo "##############################################################" >&2
    exit 2
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$src" "$work/cudarc"
chmod -R u+w "$work/cudarc"
# Resolved afresh against the local registry (its lock file pins versions
# an offline registry may not hold).
rm -f "$work/cudarc/Cargo.lock"
# A crate of its own, never a member of an enclosing workspace; the
# optional dependencies of features not used here (no-std, f4, f8, f16) removed, so
# that an offline build need not resolve crates the registry lacks.
python3 - "$work/cudarc/Cargo.toml" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
for dep in ("no-std-compat", "float4", "float8", "half"):
    s = re.sub(r"\n\[dependencies\.%s\]\n(?:[^\[\n][^\n]*\n|\n(?!\[))*" % re.escape(dep), "\n", s)
s = re.sub(r'(?m)^no-std = \[[^\]]*\]', "no-std = []", s)
s = re.sub(r'(?m)^f4 = \[[^\]]*\]', "f4 = []", s)
s = re.sub(r"(?m)^(f8|f16) = \[[^\]]*\]", lambda m: m.group(1) + " = []", s)
open(p, "w").write(s + "\n[workspace]\n")
PY
target="${CUDARC_SUITE_TARGET:-$repo/target/cudarc-suite}"
log="$work/log"
echo "cudarc-suite.sh: $(basename "$src") from $src"
set +e
(cd "$work/cudarc" && bash "$emu/with-emu.sh" env CARGO_TARGET_DIR="$target" \
    cargo test --offline --quiet --no-default-features \
    --features "$features" --lib -- "${filter[@]}" \
    >"$log" 2>&1)
set -e
summary="$(grep -E '^test result:' "$log" | tail -1 || true)"
if [[ -z "$summary" ]]; then
    echo "cudarc-suite.sh: the tests did not run to the end; the log's tail:" >&2
    tail -40 "$log" >&2
    exit 1
fi
passed="$(sed -E 's/.* ([0-9]+) passed.*/\1/' <<<"$summary")"
failed="$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$summary")"
ignored="$(sed -E 's/.* ([0-9]+) ignored.*/\1/' <<<"$summary")"
echo "$what on the emulator: $passed passed, $failed failed ($ignored ignored by cudarc itself)"
if [[ "$failed" != 0 ]]; then
    echo "--- failure output ---"
    sed -n '/^failures:$/,/^test result:/p' "$log" | grep -v '^ *[0-9]*: \|^ *at ' | head -200
    echo "failed:"
    # The last "failures:" block lists the failing tests, indented.
    awk '/^failures:$/ { block = "" } /^    [A-Za-z_:0-9]+$/ { block = block "  " $1 "\n" } END { printf "%s", block }' "$log"
    exit 1
fi
