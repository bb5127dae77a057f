#!/usr/bin/env bash
# Run Numba kernels (numba_check.py: cuda.grid, a shared-memory
# reduction, an atomic add, print) on the emulator with numba-cuda 0.30
# from its wheel, and print the counts and each failure's cause.
#
#   bash cuda-emu/scripts/numba-check.sh        # counts, failures
#   bash cuda-emu/scripts/numba-check.sh -v     # with tracebacks
#
# A virtual environment in $PTXSMITH_CLIENTS_DIR (default
# ~/.cache/ptxsmith/clients)/numba-venv gets numba-cuda 0.30,
# cuda-bindings 12.9, the CUDA runtime and NVRTC 12.9 wheels (numba-cuda
# loads both) and numpy from the package registry (once). NVVM and
# libdevice come from the pinned nvidia-cuda-nvcc-cu12==12.9.86 wheel that
# scripts/install-nvidia-tools.sh installs (its nvvm/ folder, given to
# Numba as CUDA_HOME). When something cannot be fetched the script says
# so loudly and exits 2. Exit status otherwise: 0 when every kernel
# passed, 1 otherwise. CI runs it (scripts/test.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
emu="$(dirname "$here")"
repo="$(dirname "$emu")"
cache="${PTXSMITH_CLIENTS_DIR:-$HOME/.cache/ptxsmith/clients}"
venv="$cache/numba-venv"
loud() {
    echo "##############################################################" >&2
    echo "numba-check.sh: $1: the Numba check did NOT run." >&2
    echo "##############################################################" >&2
    exit 2
}
if ! "$venv/bin/python" -c "import numba_cuda, cuda.bindings, numpy, nvidia.cuda_runtime, nvidia.cuda_nvrtc" 2>/dev/null; then
    mkdir -p "$cache"
    echo "numba-check.sh: installing numba-cuda 0.30, cuda-bindings 12.9, CUDA runtime, NVRTC, numpy into $venv"
    python3 -m venv "$venv" || loud "python3 -m venv failed"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        "numba-cuda==0.30.*" "cuda-bindings==12.9.*" "cuda-python==12.9.*" \
        "nvidia-cuda-runtime-cu12==12.9.*" "nvidia-cuda-nvrtc-cu12==12.9.86" numpy ||
        loud "numba-cuda, cuda-bindings or numpy could not be installed from the package registry"
fi
tools="$(bash "$repo/scripts/install-nvidia-tools.sh" --print-dir)"
if [[ ! -f "$tools/nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so" ]]; then
    bash "$repo/scripts/install-nvidia-tools.sh" >&2 || true
fi
nvcc_dir="$tools/nvidia/cuda_nvcc"
[[ -f "$nvcc_dir/nvvm/lib64/libnvvm.so" ]] ||
    loud "libnvvm.so is not in $nvcc_dir/nvvm/lib64 (scripts/install-nvidia-tools.sh)"
echo "numba-check.sh: numba-cuda $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("numba-cuda"))'), NVVM from $nvcc_dir/nvvm"
# The emulator as libcuda.so.1 (with-emu.sh), NVVM through CUDA_HOME.
exec bash "$emu/with-emu.sh" env CUDA_HOME="$nvcc_dir" NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0 \
    "$venv/bin/python" "$here/numba_check.py" "$@"
