#!/usr/bin/env bash
# The unit tests (every GoogleTest, the shard/manifest/config/checkpoint readers among them)
# and the readers' fuzzer, built with AddressSanitizer + UndefinedBehaviorSanitizer in
# build-asan/ and run once: any memory error or undefined behaviour fails. Part of the
# test command (launch/run_tests.sh); NMTRAIN_SANITIZE=0 there skips it.
#   tests/runners/sanitize_tests.sh [FUZZ_ROUNDS]     (default 1000 rounds per reader, seed 1)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
rounds=${1:-1000}
env_lines=$(bash "$root/launch/setup.sh")
eval "$env_lines"
export CCACHE_DIR
build=${SANITIZE_BUILD_DIR:-$root/build-asan}
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DNMTRAIN_VENV="$NMTRAIN_VENV" -DNMTRAIN_SANITIZE=ON > /dev/null
fi
# Leaks are not checked: MPI and LibTorch keep process-lifetime allocations by design.
# Set before building: the build lists the gtests by running the sanitized binary.
# allocator_may_return_null: a failed allocation returns null as glibc's malloc does, so
# the test that LibTorch then throws (tests/out_of_memory_test.cpp) runs under ASan too.
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=0:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
start=$(date +%s)
cmake --build "$build" -j "$(nproc)" --target nmt_tests fuzz_readers
echo "[sanitize] built in $(( $(date +%s) - start )) s"
cd "$build"
start=$(date +%s)
rc=0
./tests/nmt_tests --gtest_brief=1 || rc=1
echo "[sanitize] unit tests under ASan+UBSan: $( [ $rc = 0 ] && echo clean || echo FAILED ) in $(( $(date +%s) - start )) s"
start=$(date +%s)
./tests/fuzz_readers --rounds "$rounds" --seed 1 --save "$build" || rc=1
echo "[sanitize] fuzz, $rounds rounds per reader under ASan+UBSan: $( [ $rc = 0 ] && echo clean || echo FAILED ) in $(( $(date +%s) - start )) s"
exit $rc
