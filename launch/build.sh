#!/usr/bin/env bash
# Installs dependencies (launch/setup.sh) and builds the project into BUILD_DIR (default
# ./build, relative paths from where it is run) with Ninja and ccache; BUILD_TARGETS limits it
# to some executables. Prints the environment
# exports on stdout, like setup.sh.   eval "$(bash launch/build.sh)"
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=launch/common.sh
source "$root/launch/common.sh"
help_requested_then_exit "${BASH_SOURCE[0]}" "$@"
[ $# = 0 ] || { echo "build.sh: error: takes no arguments, got '$1' (BUILD_DIR=... sets the build directory)" >&2; exit 2; }
build=$(realpath -ms -- "${BUILD_DIR:-$root/build}")
env_lines=$(bash "$root/launch/setup.sh")
eval "$env_lines"
export CCACHE_DIR
mkdir -p "$CCACHE_DIR"
ccache --max-size=5G >/dev/null
# Configured again when the build tree was made with another virtual environment (a pin in
# versions.env changed): it would otherwise go on linking the old one's LibTorch.
# From an empty cache: Python, Torch_DIR and NCCL are cached from the old one, and a configure
# that keeps them would too.
if [ ! -f "$build/build.ninja" ] || ! grep -sqxF "NMTRAIN_VENV:PATH=$(realpath -ms -- "$NMTRAIN_VENV")" "$build/CMakeCache.txt"; then
  rm -f "$build/CMakeCache.txt"
  cmake -S "$root" -B "$build" -G Ninja -DNMTRAIN_VENV="$NMTRAIN_VENV" >&2
fi
start=$(date +%s)
# BUILD_TARGETS="train evaluate ...": only those executables (and what they link), as the
# quickstart asks; default: everything (the tests, the benchmarks).
read -r -a targets <<< "${BUILD_TARGETS:-}"
if [ ${#targets[@]} -gt 0 ]; then
  known=$(cmake --build "$build" --target help | sed -n 's/^\([A-Za-z0-9_.+-]*\): phony$/\1/p')
  for t in "${targets[@]}"; do
    grep -qxF -- "$t" <<< "$known" ||
      { echo "build.sh: error: BUILD_TARGETS '$t' is not a target of this project (e.g. train evaluate translate preprocess average nmt_tests)" >&2; exit 2; }
  done
fi
cmake --build "$build" -j "$(nproc)" ${targets[@]:+--target "${targets[@]}"} >&2
echo "[build] built $build in $(( $(date +%s) - start )) s" >&2
echo "$env_lines"
printf 'export NMTRAIN_BUILD=%q\n' "$build"
