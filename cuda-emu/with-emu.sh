#!/usr/bin/env bash
# Run a command with the CUDA driver emulator as its libcuda.so.1:
#
#   bash cuda-emu/with-emu.sh cargo test --release        # this repository
#   bash /path/to/ptxsmith/cuda-emu/with-emu.sh cargo run  # any program
#
# Builds the emulator (release) in this repository, makes
# <target dir>/cuda-emu/libcuda.so.1 and libcuda.so (symlinks to it), puts
# that directory first on LD_LIBRARY_PATH, and runs the command in the
# current directory. Every program that dlopens libcuda.so.1 / libcuda.so
# (oxicuda-driver, cudarc, ...) then runs its GPU code on the simulator.
# Configuration: PTXSMITH_EMU_* variables (cuda-emu/README.md).
# With no command, it only builds and prints the directory.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
(cd "$repo" && cargo build --release --quiet -p ptxsmith-cuda-emu)
target="$(cd "$repo" && cargo metadata --no-deps --format-version 1 |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
lib="$target/release/libptxsmith_cuda_emu.so"
[[ -f "$lib" ]] || {
    echo "with-emu.sh: $lib was not built" >&2
    exit 1
}
dir="$target/cuda-emu"
mkdir -p "$dir"
ln -sf "$lib" "$dir/libcuda.so.1"
ln -sf "$lib" "$dir/libcuda.so"
export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [[ $# -eq 0 ]]; then
    echo "$dir"
    exit 0
fi
exec "$@"
