#!/bin/bash
# Simulator throughput of several builds of examples/sim_throughput, interleaved
# (so that each build sees the same machine conditions), on several worker-thread
# counts. One line per run: BUILD THREADS CASE M-instr/s-wall [M-instr/s-per-CPU-second].
#
#   ROUNDS=3 THREADS="1 2 4 8 16" bash scripts/sim-scaling.sh name=path/to/sim_throughput ...
#
# Build each binary with `cargo build --release --example sim_throughput` at the
# commit to compare (it needs no Rust where it runs: copy the binaries and this
# script to the machine to measure). Builds older than the per-CPU-second column
# print only the wall-time figure.
set -u
rounds=${ROUNDS:-5}
threads=${THREADS:-"1 2"}
cases=${CASES:-"dot saxpy block_sum library_dot library_fp8 library_score"}
reps() {
    case $1 in
    dot) echo 40 ;; saxpy) echo 20 ;; block_sum) echo 6 ;;
    library_dot) echo 400 ;; library_fp8) echo 200 ;; library_score) echo 30 ;;
    esac
}
echo "host: $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$rounds"); do
    for c in $cases; do
        for b in "$@"; do
            name=${b%%=*} bin=${b#*=}
            for th in $threads; do
                out=$(PTXSMITH_SIM_THREADS=$th timeout 120 "$bin" --case "$c" --reps "$(reps "$c")" 2>&1 | tail -1)
                wall=$(echo "$out" | grep -oP '[0-9.]+(?= M/s)' | head -1)
                cpu=$(echo "$out" | grep -oP '[0-9.]+(?= M/s per CPU)')
                echo "$name $th $c ${wall:-?} ${cpu:-}"
            done
        done
    done
done
