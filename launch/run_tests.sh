#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs the whole ctest suite, then the
# unit tests and the readers' fuzzer under AddressSanitizer + UBSan
# (tests/runners/sanitize_tests.sh; NMTRAIN_SANITIZE=0 skips that part).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export NMTRAIN_WITH_SLURM=1  # setup.sh installs Slurm and munge for the slurm.* tests
eval "$(bash "$root/launch/build.sh")"
cd "$NMTRAIN_BUILD"
rc=0
ctest --output-on-failure -j "$(nproc)" "$@" || rc=$?
if [ "${NMTRAIN_SANITIZE:-1}" != 0 ]; then
  bash "$root/tests/runners/sanitize_tests.sh" || rc=1
fi
exit $rc
