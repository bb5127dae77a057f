#!/usr/bin/env bash
# Installs the pinned NVIDIA command-line tools that ptxsmith's assembler
# checks use (no GPU, no CUDA toolkit needed):
#
#   ptxas    from the PyPI wheel nvidia-cuda-nvcc-cu12==12.9.86
#            (site-packages path nvidia/cuda_nvcc/bin/ptxas)
#   nvdisasm from the PyPI wheel nvidia-cuda-nvdisasm==13.5.37
#            (site-packages path nvidia/cu13/bin/nvdisasm)
#
# into the folder ptxsmith::nvtools::NvTools::default_dir names:
# $PTXSMITH_NVIDIA_TOOLS when set, else $XDG_CACHE_HOME/ptxsmith/nvidia-tools
# (absolute XDG_CACHE_HOME only), else ~/.cache/ptxsmith/nvidia-tools.
# `install-nvidia-tools.sh --print-dir` prints that folder and exits.
# Idempotent: does nothing when both binaries are present and report the
# pinned versions. Exits non-zero with a message on any failure.
#
# pip honours its usual environment (PIP_INDEX_URL, PIP_FIND_LINKS, ...).
set -euo pipefail

NVCC_WHEEL="nvidia-cuda-nvcc-cu12==12.9.86"
NVDISASM_WHEEL="nvidia-cuda-nvdisasm==13.5.37"
PTXAS_VERSION="V12.9.86"
NVDISASM_VERSION="V13.5.37"
PTXAS_REL="nvidia/cuda_nvcc/bin/ptxas"
NVDISASM_REL="nvidia/cu13/bin/nvdisasm"

if [[ -n "${PTXSMITH_NVIDIA_TOOLS:-}" ]]; then
    dest="$PTXSMITH_NVIDIA_TOOLS"
elif [[ "${XDG_CACHE_HOME:-}" == /* ]]; then
    dest="$XDG_CACHE_HOME/ptxsmith/nvidia-tools"
elif [[ -n "${HOME:-}" ]]; then
    dest="$HOME/.cache/ptxsmith/nvidia-tools"
else
    echo "install-nvidia-tools: ERROR: set PTXSMITH_NVIDIA_TOOLS or HOME" >&2
    exit 1
fi
if [[ "${1:-}" == "--print-dir" ]]; then
    echo "$dest"
    exit 0
fi
python="${PYTHON:-python3}"

die() {
    echo "install-nvidia-tools: ERROR: $*" >&2
    exit 1
}

# has_version <binary> <version string>: the binary runs and prints it.
has_version() {
    [[ -f "$1" ]] || return 1
    [[ -x "$1" ]] || chmod +x "$1" 2>/dev/null || return 1
    # Capture first: `cmd | grep -q` under pipefail fails when grep exits
    # early and the tool dies of SIGPIPE.
    local out
    out="$("$1" --version 2>/dev/null)" || return 1
    [[ "$out" == *"$2"* ]]
}

installed() {
    has_version "$dest/$PTXAS_REL" "$PTXAS_VERSION" &&
        has_version "$dest/$NVDISASM_REL" "$NVDISASM_VERSION"
}

if installed; then
    echo "install-nvidia-tools: ptxas $PTXAS_VERSION and nvdisasm $NVDISASM_VERSION already in $dest"
    exit 0
fi

command -v "$python" >/dev/null 2>&1 || die "'$python' not found (set PYTHON=...)"
"$python" -m pip --version >/dev/null 2>&1 || die "'$python -m pip' is not available"

echo "install-nvidia-tools: installing $NVCC_WHEEL and $NVDISASM_WHEEL into $dest"
staging="$(mktemp -d "${TMPDIR:-/tmp}/ptxsmith-nvidia-tools.XXXXXX")" ||
    die "cannot create a staging directory"
trap 'rm -rf "$staging"' EXIT

if ! "$python" -m pip install --no-deps --no-input --disable-pip-version-check --root-user-action=ignore \
    --target "$staging/tools" "$NVCC_WHEEL" "$NVDISASM_WHEEL"; then
    die "pip could not install $NVCC_WHEEL $NVDISASM_WHEEL (network to PyPI needed)"
fi

for rel in "$PTXAS_REL" "$NVDISASM_REL"; do
    [[ -f "$staging/tools/$rel" ]] || die "the wheels did not contain $rel"
    chmod +x "$staging/tools/$rel"
done

# Replace the destination only once the new tree is complete.
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"
mv "$staging/tools" "$dest" || die "cannot move the tools into $dest"

has_version "$dest/$PTXAS_REL" "$PTXAS_VERSION" ||
    die "$dest/$PTXAS_REL does not run or does not report $PTXAS_VERSION"
has_version "$dest/$NVDISASM_REL" "$NVDISASM_VERSION" ||
    die "$dest/$NVDISASM_REL does not run or does not report $NVDISASM_VERSION"

echo "install-nvidia-tools: installed"
echo "  $dest/$PTXAS_REL ($("$dest/$PTXAS_REL" --version | grep -o 'V[0-9][0-9.]*' | head -1))"
echo "  $dest/$NVDISASM_REL ($("$dest/$NVDISASM_REL" --version | grep -o 'V[0-9][0-9.]*' | head -1))"
