#!/usr/bin/env bash
# ptxsmith's device suite: prove the GPU path with one prepared command on
# each side, for GPU machines that have a driver but no Rust toolchain.
#
#   bash scripts/device-suite.sh pack [DIR]   # here, with cargo (default DIR: .device-pack)
#   bash DIR/run.sh                            # there, on the GPU machine
#   bash scripts/device-suite.sh run [DIR]     # the same as `bash DIR/run.sh`
#
# pack: builds every test binary, the benches and the examples in release
#   mode, and copies into DIR, stripped, what the GPU run needs:
#     bin/tests/<name>     each test binary holding a device test (a test
#                          whose name contains `gpu_` or `device`, per
#                          `<bin> --list`); the lib's unit tests are
#                          bin/tests/unit_ptxsmith
#     bin/benches/<name>   fp8_kernels, score_kernels, resident, logcumsumexp,
#                          hmm, block_ell, block_scaled
#     bin/examples/<name>  demo, interop, device_info, calibrate
#     run.sh               this script
#     torch_baselines.py   PyTorch on the same shapes (scripts/torch_baselines.py)
#     MANIFEST.txt         what was built from what, sizes, sha256, and the
#                          device tests of every packed binary
#   If DIR would not fit, next to the working tree, in the 64 MiB the device
#   tool carries, bin/ is packed as bin.tar.xz instead (run.sh unpacks it).
#   DIR must be an ignored path (.device-pack is listed in .git/info/exclude)
#   so the tool carries it: `carry: [".device-pack"]`.
#
# run: with PTXSMITH_REQUIRE_GPU=1 (a missing device fails every device
#   test instead of skipping it), from the repository root, one step after
#   another, continuing after failures:
#     1. pack integrity (sha256), glibc, `device_info cuda`, nvidia-smi
#     2. every packed test binary: `<bin> --include-ignored gpu_ device`
#     3. the examples demo and interop (must report that they ran on the GPU)
#        and calibrate (its table of latencies shown in the report)
#     4. the benches: fp8_kernels `--bench`; score_kernels and resident
#        `--bench --quick --noplot --measurement-time 3` (criterion's quick
#        mode: each benchmark stops once its estimate is stable, at most
#        the measurement time)
#     5. compute-sanitizer --tool memcheck|racecheck|synccheck|initcheck
#        over the device tests of dot_end_to_end, fp8_kernels,
#        score_kernels, device_resident, viterbi, logcumsumexp, hmm,
#        block_ell_kernels, block_scaled_kernels and runtime_no_device
#        (device_fault poisons its process: not under a sanitizer), skipping
#        the two sweeps over 2^32 inputs / 2^31 elements and the two tests
#        whose driver call fails on purpose; the device tests use their
#        small shapes (PTXSMITH_DEVICE_TESTS_SMALL=1); the 40 runs go
#        DEVICE_SUITE_SANITIZER_JOBS at a time and are judged in order
#   It writes one Markdown report, device-suite-report.md, into $OUT when
#   set, else into DIR (appended step by step, so a killed run leaves the
#   steps it finished), and every step's full log as
#   device-suite-logs.tar.gz next to it, prints a summary and exits
#   non-zero if any step failed, timed out or was not run.
#
# Environment (run):
#   DEVICE_SUITE_BUDGET_S    wall-clock budget for the whole run (default
#                            540); a step never runs past it, steps left
#                            when it is spent are reported NOT RUN (failure)
#   DEVICE_SUITE_STEPS       only run steps whose id matches this ERE (for
#                            trying the script out; the default runs all)
#   DEVICE_SUITE_TEST_THREADS  --test-threads for the test steps (default:
#                            libtest's, one per core)
#   DEVICE_SUITE_SANITIZER_SKIP  space-separated `--skip` filters under
#                            compute-sanitizer (default: the two sweeps and
#                            the out-of-memory and broken-PTX tests)
#   DEVICE_SUITE_SANITIZER_JOBS  sanitizer runs at a time (default 8)
#   DEVICE_SUITE_TAIL        output lines kept per step in the report
#                            (default 40; 150 for a failed step)
# Environment (pack):
#   DEVICE_SUITE_LIMIT_MIB   the carry limit (default 64)
#   DEVICE_SUITE_COMPRESS=1  compress bin/ even when it fits (about 27 MiB
#                            becomes about 3 MiB)
set -uo pipefail

# The test-name filters that select device tests (libtest substring
# filters; a test matching any one is a device test).
DEVICE_FILTERS=(gpu_ device)
GPU_BENCHES=(fp8_kernels score_kernels resident logcumsumexp hmm viterbi block_ell block_scaled)
GPU_EXAMPLES=(demo interop device_info calibrate)
# Test binaries run under compute-sanitizer: one per kernel family.
SANITIZED_TESTS=(dot_end_to_end fp8_kernels score_kernels device_resident viterbi viterbi_cluster logcumsumexp hmm block_ell_kernels block_scaled_kernels runtime_no_device)
SANITIZER_TOOLS=(memcheck racecheck synccheck initcheck)
REPORT_NAME=device-suite-report.md

die() {
    echo "device-suite: $*" >&2
    exit 2
}

# ---------------------------------------------------------------------------
# pack
# ---------------------------------------------------------------------------

# "kind name executable" for each artifact with an executable in cargo's
# JSON messages on stdin.
artifacts() {
    sed -n 's/^{"reason":"compiler-artifact".*"target":{"kind":\["\([a-z-]*\)"\][^}]*"name":"\([^"]*\)".*"executable":"\([^"]*\)".*/\1 \2 \3/p'
}

# The device tests of a libtest binary, one per line.
device_tests_of() {
    local regex
    regex="$(
        IFS='|'
        echo "${DEVICE_FILTERS[*]}"
    )"
    "$1" --list 2>/dev/null | sed -n 's/: test$//p' | grep -E -- "$regex"
}

human() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

pack() {
    local repo dir
    repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    [[ -f "$repo/Cargo.toml" ]] || die "pack runs from the repository's scripts/ (no Cargo.toml in $repo)"
    cd "$repo" || die "cannot cd to $repo"
    dir="${1:-.device-pack}"
    [[ "$dir" == /* ]] || dir="$repo/$dir"
    case "$dir" in
    / | "$repo" | "$repo/" | "$repo/src"* | "$repo/tests"* | "$repo/scripts"*)
        die "refusing to use $dir as the pack directory"
        ;;
    esac
    if [[ "$dir" == "$repo"/* ]] && ! git -C "$repo" check-ignore -q "$dir/x" 2>/dev/null; then
        echo "WARNING: $dir is not ignored by git: the device tool carries only ignored paths" \
            "you name; add it to .git/info/exclude" >&2
    fi
    for tool in cargo strip sha256sum; do
        command -v "$tool" >/dev/null || die "$tool not found"
    done

    local json
    json="$(mktemp -d "${TMPDIR:-/tmp}/device-pack.XXXXXX")"
    # shellcheck disable=SC2064 # expand now: the local is gone at exit
    trap "rm -rf '$json'" EXIT
    echo "== building (release): tests, benches, examples"
    cargo test --release --no-run --message-format=json >"$json/tests.json" ||
        die "cargo test --release --no-run failed"
    cargo bench --no-run --message-format=json >"$json/benches.json" ||
        die "cargo bench --no-run failed"
    cargo build --release --examples --message-format=json >"$json/examples.json" ||
        die "cargo build --release --examples failed"

    rm -rf "$dir"
    mkdir -p "$dir/bin/tests" "$dir/bin/benches" "$dir/bin/examples" || die "cannot create $dir"

    local manifest_files="$json/files" manifest_tests="$json/tests"
    : >"$manifest_files"
    : >"$manifest_tests"
    local kind name exe dest n skipped=()
    add() { # kind name exe dest [device-test count]
        cp "$3" "$dir/$4" || die "cp $3"
        strip "$dir/$4" || die "strip $4"
        chmod 755 "$dir/$4"
        printf 'file %s %s %s %s %s\n' "$1" "$4" "$(stat -c %s "$dir/$4")" \
            "$(sha256sum "$dir/$4" | cut -d' ' -f1)" "${5:--}" >>"$manifest_files"
    }

    echo "== test binaries with device tests (${DEVICE_FILTERS[*]})"
    while read -r kind name exe; do
        case "$kind" in
        lib) dest="bin/tests/unit_$name" ;;
        test | bin) dest="bin/tests/$name" ;;
        *) continue ;;
        esac
        local tests
        tests="$(device_tests_of "$exe")"
        if [[ -z "$tests" ]]; then
            skipped+=("$name")
            continue
        fi
        n="$(grep -c . <<<"$tests")"
        add test "$name" "$exe" "$dest" "$n"
        printf '  %-22s %3d device tests\n' "${dest##*/}" "$n"
        {
            echo "${dest##*/}:"
            # shellcheck disable=SC2001 # indent every line
            sed 's/^/    /' <<<"$tests"
        } >>"$manifest_tests"
    done < <(artifacts <"$json/tests.json" | sort -u)
    echo "  (no device tests, not packed: ${skipped[*]:-none})"

    local want found
    for want in "${GPU_BENCHES[@]}"; do
        found="$(artifacts <"$json/benches.json" | awk -v n="$want" '$1 == "bench" && $2 == n { print $3 }' | tail -n 1)"
        [[ -n "$found" ]] || die "bench $want was not built"
        add bench "$want" "$found" "bin/benches/$want"
    done
    for want in "${GPU_EXAMPLES[@]}"; do
        found="$(artifacts <"$json/examples.json" | awk -v n="$want" '$1 == "example" && $2 == n { print $3 }' | tail -n 1)"
        [[ -n "$found" ]] || die "example $want was not built"
        add example "$want" "$found" "bin/examples/$want"
    done
    cp "${BASH_SOURCE[0]}" "$dir/run.sh" || die "cannot copy run.sh"
    chmod 755 "$dir/run.sh"
    cp "$repo/scripts/torch_baselines.py" "$dir/torch_baselines.py" || die "cannot copy torch_baselines.py"

    local glibc rev
    glibc="$(find "$dir/bin" -type f -exec objdump -T {} + 2>/dev/null |
        grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)"
    rev="$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    if [[ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
        rev="$rev + uncommitted changes"
    fi

    # Does it fit next to the working tree?
    local limit_mib="${DEVICE_SUITE_LIMIT_MIB:-64}" tree bytes limit archive=""
    tree="$(git -C "$repo" ls-files -z -co --exclude-standard 2>/dev/null |
        du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)"
    tree="${tree:-0}"
    limit=$((limit_mib * 1048576 - tree - 1048576)) # 1 MiB to spare
    bytes="$(du -sb "$dir" | cut -f1)"
    echo "== pack: $(human "$bytes") uncompressed; working tree $(human "$tree"); carry limit ${limit_mib} MiB"
    if ((bytes > limit)) || [[ "${DEVICE_SUITE_COMPRESS:-0}" == 1 ]]; then
        echo "   $( ((bytes > limit)) && echo "too large" || echo "DEVICE_SUITE_COMPRESS=1"): compressing bin/ with xz"
        XZ_OPT=-9 tar -C "$dir" -cJf "$dir/bin.tar.xz" bin || die "tar/xz failed"
        rm -rf "${dir:?}/bin"
        archive="bin.tar.xz (xz -9; run.sh unpacks it)"
    fi

    {
        echo "# ptxsmith device pack (scripts/device-suite.sh pack)"
        echo "built: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -srm)"
        echo "source: git $rev"
        echo "toolchain: $(rustc --version 2>/dev/null)"
        echo "needs: x86-64 Linux, glibc >= ${glibc:-?}, an NVIDIA driver (libcuda.so.1)"
        echo "device-test filters: ${DEVICE_FILTERS[*]}"
        echo "archive: ${archive:-none (bin/ uncompressed)}"
        echo
        echo "# file KIND PATH BYTES SHA256 DEVICE_TESTS (uncompressed, stripped)"
        cat "$manifest_files"
        echo
        echo "# device tests per packed test binary"
        cat "$manifest_tests"
    } >"$dir/MANIFEST.txt"

    bytes="$(du -sb "$dir" | cut -f1)"
    if ((bytes > limit)); then
        die "the pack is $(human "$bytes") even compressed, over the $(human "$limit") left of ${limit_mib} MiB"
    fi
    echo "== packed into $dir: $(human "$bytes")${archive:+ (compressed: $archive)}"
    ls -l "$dir"
    echo "On the GPU machine (carry ${dir#"$repo"/}): bash ${dir#"$repo"/}/run.sh"
}

# ---------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# Quote a command for the report.
quoted() {
    local out="" a
    for a in "$@"; do
        a="${a#"$PACK_ROOT"/}"
        if [[ "$a" =~ ^[A-Za-z0-9_./=:,+-]+$ ]]; then out+="$a "; else out+="'$a' "; fi
    done
    echo "${out% }"
}

STEP_N=0
SHOW=false
FAILED=0
NOT_RUN=0
FILTERED=0
SUMMARY=()

# record ID STATUS DURATION NOTE COMMAND LOG
record() {
    local id="$1" status="$2" dur="$3" note="$4" cmd="$5" log="$6" lines
    lines="${DEVICE_SUITE_TAIL:-40}"
    [[ "$status" == PASS || "$status" == INFO ]] || lines=150
    SUMMARY+=("$(printf '| %d | %s | %s | %s s | %s |' "$STEP_N" "$id" "$status" "$dur" "$note")")
    {
        echo
        echo "### $STEP_N. $id: $status ($dur s)"
        echo
        echo '~~~~sh'
        echo "$cmd"
        echo '~~~~'
        echo
        [[ -n "$note" ]] && echo "$note" && echo
        if [[ -n "$log" && -s "$log" ]]; then
            echo "output ($(wc -l <"$log") lines; the last $lines):"
            echo
            echo '~~~~text'
            tail -n "$lines" "$log"
            echo '~~~~'
        fi
    } >>"$REPORT"
    printf '[%s] %s (%s s)%s\n' "$status" "$id" "$dur" "${note:+: $note}"
    if [[ -n "$log" && -s "$log" ]]; then
        if $SHOW; then
            sed 's/^/    | /' "$log"
        elif [[ "$status" != PASS && "$status" != INFO ]]; then
            tail -n 8 "$log" | sed 's/^/    | /'
        fi
    fi
    return 0
}

# step [--info] [--show] [--note TEXT] [--expect ERE] [--sanitizer] ID TIMEOUT_S -- COMMAND...
# Runs COMMAND (stdout and stderr to a log) under `timeout`, from the
# current directory. PASS: exit 0, the output matches ERE if given, and for
# a sanitizer run an ERROR SUMMARY of 0 errors. --info: a failure is
# reported, not counted. --show: print all of the output here too.
# --note: start the step's note with TEXT. --replay DIR: do not run
# COMMAND; judge the run that start_job left in DIR instead.
step() {
    local info=false expect="" sanitizer=false note="" replay=""
    SHOW=false
    while [[ "$1" == --* ]]; do
        case "$1" in
        --info) info=true ;;
        --show) SHOW=true ;;
        --note)
            note="$2"
            shift
            ;;
        --expect)
            expect="$2"
            shift
            ;;
        --sanitizer) sanitizer=true ;;
        --replay)
            replay="$2"
            shift
            ;;
        esac
        shift
    done
    local id="$1" limit="$2"
    shift 3 # id, timeout, --
    if [[ -n "${DEVICE_SUITE_STEPS:-}" ]] && ! [[ "$id" =~ ${DEVICE_SUITE_STEPS} ]]; then
        FILTERED=$((FILTERED + 1))
        return 0
    fi
    STEP_N=$((STEP_N + 1))
    local cmd log remaining t0 rc dur status
    cmd="$(quoted "$@")"
    log="$LOGS/$STEP_N.log"
    remaining=$((DEADLINE - $(date +%s)))
    if [[ -n "$replay" && ! -f "$replay/notrun" ]]; then
        cp "$replay/log" "$log" 2>/dev/null || : >"$log"
        rc="$(cat "$replay/rc" 2>/dev/null || echo 125)"
        dur="$(cat "$replay/dur" 2>/dev/null || echo 0)"
        limit="$(cat "$replay/limit" 2>/dev/null || echo "$limit")"
    else
        if [[ -n "$replay" ]] || ((remaining < 15)); then
            NOT_RUN=$((NOT_RUN + 1))
            FAILED=$((FAILED + 1))
            record "$id" "NOT RUN" 0 "${note:+$note; }the ${BUDGET}s budget (DEVICE_SUITE_BUDGET_S) is spent" "$cmd" ""
            return 0
        fi
        ((limit > remaining - 5)) && limit=$((remaining - 5))
        t0="$(now)"
        timeout -k 10 "$limit" "$@" >"$log" 2>&1 </dev/null
        rc=$?
        dur="$(secs "$t0" "$(now)")"
    fi
    if ((rc == 0)); then status=PASS; else status=FAIL; fi
    if ((rc == 124 || rc == 137)); then
        status=TIMEOUT
        note="${note:+$note; }killed after ${limit}s"
    elif ((rc == 126 || rc == 127)); then
        note="${note:+$note; }could not execute (exit $rc)"
    elif ((rc != 0)); then
        note="${note:+$note; }exit $rc"
    fi
    local results
    results="$(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 passed, \2 failed/p' "$log" |
        paste -sd ' ' -)"
    [[ -n "$results" ]] && note="${note:+$note; }$results"
    if grep -q 'PTXSMITH_REQUIRE_GPU is set but there is no usable CUDA device' "$log"; then
        note="${note:+$note; }no usable CUDA device (PTXSMITH_REQUIRE_GPU)"
    fi
    if grep -q '^SKIP: no CUDA device' "$log"; then
        # PTXSMITH_REQUIRE_GPU should have made this impossible.
        [[ "$status" == PASS ]] && status=FAIL
        note="${note:+$note; }printed SKIP: no CUDA device"
    fi
    if [[ -n "$expect" && "$status" == PASS ]] && ! grep -qE -- "$expect" "$log"; then
        status=FAIL
        note="${note:+$note; }output lacks /$expect/ (did not run on the GPU)"
    fi
    if $sanitizer; then
        local summaries errors hazards
        # memcheck, synccheck and initcheck close with `ERROR SUMMARY: N
        # errors`; racecheck with `RACECHECK SUMMARY: N hazards displayed
        # (E errors, W warnings)`.
        summaries="$(grep -cE 'ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazard' "$log")"
        errors="$(
            {
                grep -oE 'ERROR SUMMARY: [0-9]+ error' "$log" | awk '{ print $3 }'
                grep -oE 'RACECHECK SUMMARY: [0-9]+ hazard[^(]*\([0-9]+ error' "$log" |
                    sed 's/.*(\([0-9]*\) error/\1/'
            } | awk '{ s += $1 } END { print s + 0 }'
        )"
        hazards="$(grep -oE 'RACECHECK SUMMARY: [0-9]+ hazard[^)]*\)' "$log" | paste -sd ';' -)"
        SAN_ERRORS=$((SAN_ERRORS + errors))
        note="${note:+$note; }sanitizer errors: $errors${hazards:+ ($hazards)}"
        if ((summaries == 0)); then
            [[ "$status" == PASS ]] && status=FAIL
            note="$note; no ERROR SUMMARY / RACECHECK SUMMARY line (the sanitizer did not finish)"
        elif ((errors > 0)); then
            status=FAIL
        fi
    fi
    if $info && [[ "$status" != PASS ]]; then
        status=INFO
        note="${note:+$note; }(informational, not counted)"
    fi
    [[ "$status" == PASS || "$status" == INFO ]] || FAILED=$((FAILED + 1))
    record "$id" "$status" "$dur" "$note" "$cmd" "$log"
}

finish() {
    local verdict
    if ((FAILED == 0 && STEP_N > 0)); then verdict="ALL PASSED"; else verdict="FAILED: $FAILED of $STEP_N steps"; fi
    ((FILTERED > 0)) && verdict="$verdict (PARTIAL: $FILTERED steps filtered out by DEVICE_SUITE_STEPS=$DEVICE_SUITE_STEPS)"
    {
        echo
        echo "## Summary: $verdict"
        echo
        echo "Total $(secs "$START" "$(now)") s; sanitizer errors: $SAN_ERRORS; not run (budget): $NOT_RUN."
        echo
        echo "| # | step | result | time | notes |"
        echo "|---|---|---|---|---|"
        printf '%s\n' "${SUMMARY[@]}"
    } >>"$REPORT"
    echo
    echo "== summary: $verdict; sanitizer errors: $SAN_ERRORS; total $(secs "$START" "$(now)") s"
    printf '%s\n' "${SUMMARY[@]}"
    echo "report: $REPORT"
    # Every step's full log, in one file (the device tool brings back a
    # limited number of files).
    tar -C "$(dirname "$LOGS")" -czf "$(dirname "$REPORT")/device-suite-logs.tar.gz" "$(basename "$LOGS")" 2>/dev/null &&
        echo "logs: $(dirname "$REPORT")/device-suite-logs.tar.gz"
    if ((FAILED == 0 && STEP_N > 0)); then exit 0; else exit 1; fi
}

# Whether DEVICE_SUITE_STEPS (if set) selects step ID.
wanted() {
    [[ -z "${DEVICE_SUITE_STEPS:-}" || "$1" =~ ${DEVICE_SUITE_STEPS} ]]
}

# start_job DIR LIMIT -- COMMAND...: run COMMAND in the background as step
# would (under `timeout`, output to DIR/log), leaving DIR/{rc,dur,limit},
# or DIR/notrun when the budget is spent; at most $JOBS at a time. `step
# --replay DIR` judges it afterwards, in order.
start_job() {
    local dir="$1" limit="$2" remaining
    shift 3
    mkdir -p "$dir"
    while (($(jobs -rp | wc -l) >= JOBS)); do wait -n; done
    remaining=$((DEADLINE - $(date +%s)))
    if ((remaining < 15)); then
        touch "$dir/notrun"
        return 0
    fi
    ((limit > remaining - 5)) && limit=$((remaining - 5))
    echo "$limit" >"$dir/limit"
    (
        t0="$(now)"
        timeout -k 10 "$limit" "$@" >"$dir/log" 2>&1 </dev/null
        echo $? >"$dir/rc"
        secs "$t0" "$(now)" >"$dir/dur"
    ) &
}

find_sanitizer() {
    local c
    for c in "$(command -v compute-sanitizer 2>/dev/null)" \
        /usr/local/cuda/bin/compute-sanitizer \
        /usr/local/cuda/compute-sanitizer/compute-sanitizer \
        /usr/local/cuda-*/bin/compute-sanitizer \
        /opt/nvidia/*/compute-sanitizer/compute-sanitizer; do
        [[ -n "$c" && -x "$c" ]] && echo "$c" && return 0
    done
    # pip's nvidia-cuda-sanitizer-api wheels put it under site-packages
    c="$(timeout 30 find /usr /opt -maxdepth 9 -name compute-sanitizer -type f -perm -u+x 2>/dev/null | head -n 1)"
    [[ -n "$c" ]] && echo "$c"
}

run_suite() {
    local pack="$1"
    [[ -d "$pack" ]] || die "no pack at $pack (build it with: bash scripts/device-suite.sh pack)"
    PACK_ROOT="$(cd "$pack" && pwd)"
    [[ -f "$PACK_ROOT/MANIFEST.txt" ]] || die "$PACK_ROOT has no MANIFEST.txt: not a pack"
    local root
    root="$(dirname "$PACK_ROOT")"
    # Tests open paths like tests/ptx/... relative to the repository root.
    if [[ -f "$root/Cargo.toml" ]]; then cd "$root" || die "cd $root"; fi

    START="$(now)"
    BUDGET="${DEVICE_SUITE_BUDGET_S:-540}"
    DEADLINE=$(($(date +%s) + BUDGET))
    SAN_ERRORS=0
    local out_dir="${OUT:-$PACK_ROOT}" work
    mkdir -p "$out_dir" || die "cannot create $out_dir"
    REPORT="$out_dir/$REPORT_NAME"
    work="$(mktemp -d "${TMPDIR:-/tmp}/device-suite.XXXXXX")" || die "mktemp failed"
    LOGS="$work/logs"
    mkdir -p "$LOGS"
    trap 'echo "interrupted" >>"$REPORT"; finish' INT TERM

    export PTXSMITH_REQUIRE_GPU=1
    export CRITERION_HOME="$work/criterion"
    export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

    # Unpack a compressed pack (into the pack, else a temporary directory).
    local bin="$PACK_ROOT/bin"
    if [[ ! -d "$bin" && -f "$PACK_ROOT/bin.tar.xz" ]]; then
        if ! tar -C "$PACK_ROOT" -xJf "$PACK_ROOT/bin.tar.xz" 2>/dev/null; then
            tar -C "$work" -xJf "$PACK_ROOT/bin.tar.xz" || die "cannot unpack bin.tar.xz"
            bin="$work/bin"
        fi
    fi
    [[ -d "$bin" ]] || die "no bin/ in $PACK_ROOT"
    chmod -R u+rwX,go+rX "$bin" 2>/dev/null
    find "$bin" -type f -exec chmod 755 {} + 2>/dev/null

    {
        echo "# ptxsmith device suite report"
        echo
        echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'); host: $(uname -nrm)"
        echo "- pack: $PACK_ROOT ($(grep -E '^(source|built|toolchain):' "$PACK_ROOT/MANIFEST.txt" | paste -sd ';' - | sed 's/;/; /g'))"
        echo "- PTXSMITH_REQUIRE_GPU=1; budget ${BUDGET}s; cwd $(pwd)"
        echo "- GPU (nvidia-smi): $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
            paste -sd ';' - | grep . || echo none)"
        echo
        echo "Each step: the command, PASS/FAIL/TIMEOUT/NOT RUN, its duration and"
        echo "the tail of its output; a summary table closes the report."
    } >"$REPORT"
    echo "== ptxsmith device suite: pack $PACK_ROOT, report $REPORT"

    # 1. The machine.
    step pack_integrity 60 -- bash -c "awk '\$1 == \"file\" { print \$5 \"  \" \$3 }' '$PACK_ROOT/MANIFEST.txt' |
        (cd '$(dirname "$bin")' && sha256sum -c --quiet -) && echo ok"
    local need have
    need="$(sed -n 's/^needs:.*glibc >= \([0-9.]*\).*/\1/p' "$PACK_ROOT/MANIFEST.txt")"
    have="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')"
    step glibc 10 -- bash -c "echo 'pack needs glibc >= ${need:-?}, this machine has ${have:-?}';
        [ -z '$need' ] || [ -z '$have' ] || [ \"\$(printf '%s\n' '$need' '$have' | sort -V | head -n 1)\" = '$need' ]"
    step --show device_info 60 -- "$bin/examples/device_info" cuda
    if command -v nvidia-smi >/dev/null; then
        step --info --show nvidia-smi 60 -- nvidia-smi
    else
        step --info nvidia-smi 5 -- bash -c 'echo "nvidia-smi: not installed"; exit 1'
    fi

    # 2. Device tests, every packed test binary.
    local t name threads=()
    [[ -n "${DEVICE_SUITE_TEST_THREADS:-}" ]] && threads=(--test-threads "$DEVICE_SUITE_TEST_THREADS")
    for t in "$bin"/tests/*; do
        [[ -f "$t" ]] || continue
        name="${t##*/}"
        step "test $name" 300 -- "$t" --include-ignored "${threads[@]}" "${DEVICE_FILTERS[@]}"
    done

    # 3. Examples: under PTXSMITH_REQUIRE_GPU they fail instead of falling
    # back to the simulator; their output must show the GPU too.
    step --expect 'backend cuda' "example demo" 120 -- "$bin/examples/demo"
    step --expect '^GPU: foreign views' "example interop" 120 -- "$bin/examples/interop"
    # The scoreboard's latencies timed on the GPU beside the simulator's
    # (docs/perf.md, "Calibrating the scoreboard"): the table in the report.
    step --show --expect '^GPU: ' "example calibrate" 120 -- "$bin/examples/calibrate"

    # 4. Benches.
    step --expect '^== device:' "bench fp8_kernels" 180 -- "$bin/benches/fp8_kernels" --bench
    step --expect 'score_block on ' "bench score_kernels" 180 -- \
        "$bin/benches/score_kernels" --bench --quick --noplot --measurement-time 3
    step --expect 'resident bench \[Cuda' "bench resident" 180 -- \
        "$bin/benches/resident" --bench --quick --noplot --measurement-time 3
    step --expect '^logcumsumexp GPU:' "bench logcumsumexp" 180 -- \
        "$bin/benches/logcumsumexp" --bench --quick --noplot --measurement-time 3
    step --expect '^hmm GPU:' "bench hmm" 180 -- \
        "$bin/benches/hmm" --bench --quick --noplot --measurement-time 3
    # Viterbi at S 4096 is seconds a call (modeled 3.4 s) plus a 1 GB upload.
    step --expect '^viterbi GPU:' "bench viterbi" 180 -- \
        "$bin/benches/viterbi" --bench --quick --noplot
    step --expect '^block_ell GPU:' "bench block_ell" 240 -- \
        "$bin/benches/block_ell" --bench --quick --noplot --measurement-time 3
    step --expect '^block_scaled GPU:' "bench block_scaled" 240 -- \
        "$bin/benches/block_scaled" --bench --quick --noplot --measurement-time 3

    # PyTorch on the same device, for the side-by-side figures
    # (informational: a machine without torch does not fail the suite).
    step --info --expect '^\| torch' "torch baselines" 420 -- \
        python3 "$PACK_ROOT/torch_baselines.py"

    # 5. compute-sanitizer over each kernel family's device tests.
    local san tool skips=() s
    # The two sweeps (2^32 inputs, 2^31 elements) and the tests whose driver
    # call fails on purpose (the sanitizer reports every failed API call).
    for s in ${DEVICE_SUITE_SANITIZER_SKIP-device_all_f32_inputs_match_the_host device_more_than_2_pow_31_elements gpu_out_of_memory_is_matched_by_its_driver_code gpu_broken_ptx_is_a_jit_error_with_the_log}; do
        skips+=(--skip "$s")
    done
    san="$(find_sanitizer)"
    if [[ -z "$san" ]]; then
        step --note "MISSING: ${#SANITIZER_TOOLS[@]} tools x ${#SANITIZED_TESTS[@]} binaries not checked" \
            "compute-sanitizer" 5 -- bash -c \
            'echo "compute-sanitizer: MISSING (not on PATH, not under /usr/local/cuda*, not found under /usr or /opt)"; exit 1'
    else
        step --info "compute-sanitizer version" 30 -- "$san" --version
        # The tools' runs are independent processes on one GPU: run them
        # $JOBS at a time, then judge them in order. The device tests use
        # their smaller shapes (PTXSMITH_DEVICE_TESTS_SMALL: the same kernel
        # variants, the emulator's sizes) so that racecheck's and
        # initcheck's instrumentation fits the budget.
        JOBS="${DEVICE_SUITE_SANITIZER_JOBS:-8}"
        local jobs_dir="$work/sanitizer" id san_limit=150 cmd=()
        # san_cmd TOOL NAME: the run of TOOL over test binary NAME, in cmd.
        san_cmd() {
            cmd=(env PTXSMITH_DEVICE_TESTS_SMALL=1 "$san" --tool "$1" --error-exitcode 86 --print-limit 20
                "$bin/tests/$2" --include-ignored --test-threads 1 "${skips[@]}" "${DEVICE_FILTERS[@]}")
        }
        for tool in "${SANITIZER_TOOLS[@]}"; do
            for name in "${SANITIZED_TESTS[@]}"; do
                id="sanitizer $tool $name"
                wanted "$id" && [[ -f "$bin/tests/$name" ]] || continue
                san_cmd "$tool" "$name"
                start_job "$jobs_dir/$tool-$name" "$san_limit" -- "${cmd[@]}"
            done
        done
        wait
        for tool in "${SANITIZER_TOOLS[@]}"; do
            for name in "${SANITIZED_TESTS[@]}"; do
                if [[ ! -f "$bin/tests/$name" ]]; then
                    step "sanitizer $tool $name" 5 -- bash -c "echo 'test binary $name is not in the pack'; exit 1"
                    continue
                fi
                san_cmd "$tool" "$name"
                step --sanitizer --replay "$jobs_dir/$tool-$name" "sanitizer $tool $name" "$san_limit" -- "${cmd[@]}"
            done
        done
    fi

    finish
}

# ---------------------------------------------------------------------------

self="$(basename "${BASH_SOURCE[0]}")"
mode="${1:-}"
if [[ "$self" == run.sh && "$mode" != pack && "$mode" != run ]]; then
    # bash DIR/run.sh: the pack is this script's directory.
    run_suite "$(dirname "${BASH_SOURCE[0]}")"
fi
case "$mode" in
pack)
    shift
    pack "$@"
    ;;
run)
    shift
    if [[ $# -gt 0 ]]; then
        run_suite "$1"
    elif [[ "$self" == run.sh ]]; then
        run_suite "$(dirname "${BASH_SOURCE[0]}")"
    else
        run_suite "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.device-pack"
    fi
    ;;
*)
    sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 2
    ;;
esac
