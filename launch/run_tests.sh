#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs the whole ctest suite, then the
# unit tests and the readers' fuzzer under AddressSanitizer + UBSan
# (tests/runners/sanitize_tests.sh; NMTRAIN_SANITIZE=0 skips that part).
#   bash launch/run_tests.sh [ctest arguments, e.g. -R data.]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=launch/common.sh
source "$root/launch/common.sh"
help_requested_then_exit "${BASH_SOURCE[0]}" "$@"
require_switch run_tests.sh NMTRAIN_SANITIZE "${NMTRAIN_SANITIZE:-1}"
export NMTRAIN_WITH_SLURM=1  # setup.sh installs Slurm and munge for the slurm.* tests
load_build_env run_tests.sh "$root"
cd "$NMTRAIN_BUILD"
rc=0
ctest --output-on-failure -j "$(nproc)" "$@" || rc=$?
if [ "${NMTRAIN_SANITIZE:-1}" = 1 ]; then
  bash "$root/tests/runners/sanitize_tests.sh" || rc=1
fi
exit $rc
