#!/usr/bin/env bash
# Run cudarc 0.19's own tests with its `nvrtc` feature (its driver-only
# tests plus the NVRTC ones, which compile CUDA C++ with NVRTC 12.9 and
# launch the PTX) on the emulator, and print the counts and the failing
# tests (cudarc-suite.sh --nvrtc does the running and counting).
#
#   bash cuda-emu/scripts/nvrtc-suite.sh            # counts, failures
#   bash cuda-emu/scripts/nvrtc-suite.sh -- FILTER  # only tests matching
#
# NVRTC comes from the pip wheel nvidia-cuda-nvrtc-cu12==12.9.86,
# installed once into $PTXSMITH_CLIENTS_DIR (default
# ~/.cache/ptxsmith/clients)/nvrtc and put on LD_LIBRARY_PATH. When it
# cannot be fetched, the script says so loudly and exits 2, as when
# cudarc's source is missing. Exit status otherwise: 0 when every test
# passed, 1 otherwise. Not part of CI.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${PTXSMITH_CLIENTS_DIR:-$HOME/.cache/ptxsmith/clients}"
wheel="nvidia-cuda-nvrtc-cu12==12.9.86"
dir="$cache/nvrtc"
lib="$dir/nvidia/cuda_nvrtc/lib"
if [[ ! -f "$lib/libnvrtc.so.12" ]]; then
    mkdir -p "$cache"
    echo "nvrtc-suite.sh: installing $wheel into $dir"
    if ! python3 -m pip install --quiet --disable-pip-version-check --target "$dir" "$wheel" ||
        [[ ! -f "$lib/libnvrtc.so.12" ]]; then
        echo "##############################################################" >&2
        echo "nvrtc-suite.sh: $wheel could not be installed from the package" >&2
        echo "registry: NVRTC is missing and the suite did NOT run." >&2
        echo "##############################################################" >&2
        exit 2
    fi
fi
# cudarc's dynamic loading asks for libnvrtc.so among other names.
ln -sf libnvrtc.so.12 "$lib/libnvrtc.so"
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# A target folder of its own: the driver-only suite's (other features)
# is not rebuilt each time one runs after the other.
repo="$(dirname "$(dirname "$here")")"
export CUDARC_SUITE_TARGET="${CUDARC_SUITE_TARGET:-$repo/target/cudarc-nvrtc-suite}"
exec bash "$here/cudarc-suite.sh" --nvrtc "$@"
