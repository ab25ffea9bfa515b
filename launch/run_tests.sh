#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs the whole ctest suite.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
eval "$(bash "$root/launch/build.sh")"
cd "$NMTRAIN_BUILD"
ctest --output-on-failure -j "$(nproc)" "$@"
