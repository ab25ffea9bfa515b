#!/usr/bin/env bash
# Installs dependencies (launch/setup.sh) and builds the project into BUILD_DIR (default
# ./build) with Ninja and ccache. Prints the environment exports on stdout, like setup.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
env_lines=$(bash "$root/launch/setup.sh")
eval "$env_lines"
export CCACHE_DIR
mkdir -p "$CCACHE_DIR"
ccache --max-size=5G >/dev/null
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DNMTRAIN_VENV="$NMTRAIN_VENV" >&2
fi
start=$(date +%s)
cmake --build "$build" -j "$(nproc)" >&2
echo "[build] built $build in $(( $(date +%s) - start )) s" >&2
echo "$env_lines"
echo "export NMTRAIN_BUILD=$build"
