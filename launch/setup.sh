#!/usr/bin/env bash
# Installs every dependency of the project, idempotently:
#   - Debian packages (Open MPI, HDF5, yaml-cpp, GoogleTest, SentencePiece, oneDNN, CLI11,
#     spdlog/fmt, nlohmann-json, OpenSSL, zlib, ninja, ccache, cmake, iproute2; Slurm and
#     munge with NMTRAIN_WITH_SLURM=1, as the test command sets);
#   - one pinned torch wheel from PyPI in a virtual environment that carries LibTorch
#     (headers, libraries, CMake config) and the NCCL it loads, plus the Python
#     reference tools the tests use (h5py, sacreBLEU, TensorBoard, CTranslate2, SentencePiece,
#     matplotlib, sacremoses, transformers and safetensors).
# The virtual environment lives in a per-user cache keyed by the pins, outside the clone,
# so every fresh clone (CI builds one per run) shares it. A second run with everything
# present only checks and prints the environment to use.
#
# Prints nothing on stdout but `export` lines, so callers can `eval "$(launch/setup.sh)"`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
# shellcheck source=launch/common.sh
source "$here/common.sh"
help_requested_then_exit "${BASH_SOURCE[0]}" "$@"

PYTHON=${PYTHON:-python3}
command -v "$PYTHON" > /dev/null || { echo "setup.sh: error: PYTHON '$PYTHON' is not a program on PATH (set PYTHON to a Python 3)" >&2; exit 2; }
require_switch setup.sh NMTRAIN_WITH_SLURM "${NMTRAIN_WITH_SLURM:-0}"
py_tag=$("$PYTHON" -c 'import sys; print(f"py{sys.version_info[0]}.{sys.version_info[1]}")')
CACHE_ROOT=${NMTRAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nmtrain}
VENV=$CACHE_ROOT/venv-torch$TORCH_VERSION-$py_tag
STAMP=$VENV/.complete-sacrebleu$SACREBLEU_VERSION-h5py$H5PY_VERSION-numpy$NUMPY_VERSION-tb$TENSORBOARD_VERSION-ct2$CTRANSLATE2_VERSION-spm$SENTENCEPIECE_PY_VERSION-mpl$MATPLOTLIB_VERSION-sacremoses$SACREMOSES_VERSION-tf$TRANSFORMERS_VERSION-st$SAFETENSORS_VERSION

log() { echo "[setup] $*" >&2; }

DEBIAN_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  openmpi-bin libopenmpi-dev
  libhdf5-dev
  libyaml-cpp-dev
  libgtest-dev libgmock-dev googletest
  libsentencepiece-dev sentencepiece
  libdnnl-dev  # oneDNN's dnnl_sgemm: the faster GEMM where MKL is slow (model/kernels/gemm.h)
  libcli11-dev
  libspdlog-dev libfmt-dev
  nlohmann-json3-dev
  libssl-dev zlib1g-dev
  iproute2 util-linux  # ip netns, tc, unshare: the multi-host tests' namespace cluster
)
# The Slurm tests' cluster (tests/cluster/slurm_cluster.sh) needs Slurm's daemons and munge,
# which a machine that trains should not get as a side effect (on a systemd host they would
# start, and a site's own Slurm may be shadowed): only the test command (run_tests.sh) asks
# for them.
if [ "${NMTRAIN_WITH_SLURM:-0}" = 1 ]; then
  DEBIAN_PACKAGES+=(slurmctld slurmd slurm-client munge)
fi

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if [ ! -f "$STAMP" ]; then
  log "creating $VENV (torch==$TORCH_VERSION; a large download the first time)"
  mkdir -p "$CACHE_ROOT"
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV" >&2
  "$VENV/bin/pip" install -q --upgrade pip >&2
  "$VENV/bin/pip" install -q "torch==$TORCH_VERSION" "sacrebleu==$SACREBLEU_VERSION" \
      "h5py==$H5PY_VERSION" "numpy==$NUMPY_VERSION" "tensorboard==$TENSORBOARD_VERSION" \
      "ctranslate2==$CTRANSLATE2_VERSION" "sentencepiece==$SENTENCEPIECE_PY_VERSION" \
      "matplotlib==$MATPLOTLIB_VERSION" "sacremoses==$SACREMOSES_VERSION" \
      "transformers==$TRANSFORMERS_VERSION" "safetensors==$SAFETENSORS_VERSION" >&2
  touch "$STAMP"
fi

TORCH_DIR=$("$VENV/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
printf 'export NMTRAIN_VENV=%q\n' "$VENV"
printf 'export Torch_DIR=%q\n' "$TORCH_DIR/share/cmake/Torch"
printf 'export CCACHE_DIR=%q\n' "${CCACHE_DIR:-$CACHE_ROOT/ccache}"
log "ready: torch $TORCH_VERSION in $VENV"
