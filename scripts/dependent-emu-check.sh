#!/usr/bin/env bash
# The emulator for dependents, checked as a user would use it (issue 32):
#
# 1. a scratch crate in a temporary folder OUTSIDE this repository, that
#    depends on ptxsmith by path, with one GPU test (device 0, a launch of
#    dot::dot_rows_dev, the result asserted and the device asserted to be
#    the emulator);
# 2. the runner installed as the README says:
#    cargo install --path cuda-emu --root <tmp>/bin-root --locked;
# 3. `ptxsmith-emu cargo test --release` in the scratch crate with
#    PTXSMITH_REQUIRE_GPU=1 (no skip allowed);
# 4. a control: the same test without the runner must fail (no driver, or
#    a real GPU that is not the emulator), so the pass came from the runner.
#
# The scratch crate, the runner's root and the emulator cache lie in the
# temporary folder, removed at the end; the builds (the install, the
# runner's emulator library and the scratch crate) share this repository's
# target folder, so what the emulator pass of scripts/test.sh compiled
# (ptxsmith and the emulator, release) is reused rather than compiled
# again from nothing (about 80 s on 2 cores); cargo's fingerprints rebuild
# whatever differs, so the result is the same as a separate folder's. Prints one PASS
# or FAIL line; exit status 0 on PASS. Offline when the cargo registry
# cache holds every crate (the scratch crate starts from this repository's
# Cargo.lock).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/ptxsmith-dependent.XXXXXX")"
tmp="$(cd "$tmp" && pwd -P)"
trap 'rm -rf "$tmp"' EXIT
t0=$(date +%s)

fail() {
    echo "FAIL: dependent-emu-check: $*" >&2
    exit 1
}

case "$tmp/" in
"$(cd "$repo" && pwd -P)"/*) fail "the temporary folder $tmp lies inside the repository" ;;
esac

# cargo's offline mode when the registry cache is enough (it is when this
# repository's tests have been built); else let cargo use the network.
offline=()
if cargo metadata --offline --locked --format-version 1 --manifest-path "$repo/Cargo.toml" \
    >/dev/null 2>&1; then
    offline=(--offline)
fi

target="$(cd "$repo" && cargo metadata --no-deps --format-version 1 |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"

crate="$tmp/scratch"
mkdir -p "$crate/src" "$crate/tests"
cat >"$crate/Cargo.toml" <<EOF
[package]
name = "ptxsmith-dependent-check"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
ptxsmith = { path = "$repo" }

# a workspace of its own, whatever folder the temporary one lies in
[workspace]
EOF
# the same dependency versions as this repository's (cargo drops what the
# scratch crate does not use)
cp "$repo/Cargo.lock" "$crate/Cargo.lock"
echo '//! A crate that depends on ptxsmith, for scripts/dependent-emu-check.sh.' >"$crate/src/lib.rs"
cat >"$crate/tests/gpu.rs" <<'EOF'
use ptxsmith::kernels::dot;
use ptxsmith::testing::{cuda_for_tests, on_emulator};

#[test]
fn gpu_dot_rows_on_device_zero() {
    // Context::cuda(0); under PTXSMITH_REQUIRE_GPU=1 a missing device panics
    let Some(ctx) = cuda_for_tests() else { return };
    assert!(on_emulator(&ctx), "device 0 is not the emulator: {:?}", ctx.info());
    let st = ctx.default_stream();
    let x = st.upload(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let y = st.upload(&[0.5f32, -1.0, 2.0]).unwrap();
    let mut out = ctx.alloc::<f32>(2).unwrap();
    dot::dot_rows_dev(&st, dot::Shape { rows: 2, n: 3 }, &x, &y, &mut out).unwrap();
    let got = st.to_vec(&out).unwrap();
    // 1·0.5 − 2 + 6 = 4.5 and 4·0.5 − 5 + 12 = 9, exact in f32
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&[4.5, 9.0]), "{got:?}");
    println!("DEPENDENT-EMU-CHECK: ran on {}", ctx.info().unwrap());
}
EOF

echo "dependent-emu-check: installing the runner (cargo install --path cuda-emu --locked)"
if ! CARGO_TARGET_DIR="$target" cargo install --quiet --locked "${offline[@]}" \
    --path "$repo/cuda-emu" --root "$tmp/bin-root"; then
    fail "cargo install --path cuda-emu failed"
fi
runner="$tmp/bin-root/bin/ptxsmith-emu"
[[ -x "$runner" ]] || fail "cargo install did not write $runner"

echo "dependent-emu-check: runner installed ($(($(date +%s) - t0)) s); ptxsmith-emu cargo test --release in $crate"
log="$tmp/test.log"
if ! (cd "$crate" &&
    CARGO_TARGET_DIR="$target" XDG_CACHE_HOME="$tmp/cache" \
        PTXSMITH_EMU_CACHE="$tmp/emu-cache" PTXSMITH_EMU_TARGET_DIR="$target" \
        PTXSMITH_REQUIRE_GPU=1 \
        "$runner" cargo test --release --quiet "${offline[@]}" -- --nocapture) >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    fail "the scratch crate's GPU test failed under ptxsmith-emu"
fi
grep -q '^DEPENDENT-EMU-CHECK: ran on .*ptxsmith-emu' "$log" || {
    tail -n 40 "$log" >&2
    fail "the GPU test did not report a run on the emulator"
}
grep -q 'test result: ok. 1 passed' "$log" || {
    tail -n 40 "$log" >&2
    fail "expected exactly one passing test"
}

# control: without the runner the same test must fail
if (cd "$crate" && CARGO_TARGET_DIR="$target" PTXSMITH_REQUIRE_GPU=1 \
    cargo test --release --quiet "${offline[@]}") >"$tmp/control.log" 2>&1; then
    fail "the GPU test also passed without ptxsmith-emu: the check proves nothing"
fi

echo "PASS: dependent-emu-check: a crate outside the repository ran its GPU test on the" \
    "emulator with ptxsmith-emu ($(grep -m1 '^DEPENDENT-EMU-CHECK' "$log" | sed 's/.*ran on //'));" \
    "$(($(date +%s) - t0)) s"
