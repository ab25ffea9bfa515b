# Sourced by the multi-process job scripts after `build` is set: the executables of
# BUILD_DIR, the mpirun flags this machine needs (root, more ranks than cores, no pinning),
# a scratch directory that is the working directory and is removed on exit, and fail().
TRAIN=$build/trainer/train PRE=$build/data/preprocess EVAL=$build/eval/evaluate
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
