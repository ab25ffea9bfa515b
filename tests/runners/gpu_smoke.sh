#!/usr/bin/env bash
# On a machine with GPUs: build, run the NCCL backend tests on every local GPU, and a few
# CUDA training updates on 1 and on all GPUs.   bash tests/runners/gpu_smoke.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=launch/common.sh
source "$root/launch/common.sh"
load_build_env gpu_smoke.sh "$root"
b=$NMTRAIN_BUILD
gpus=$(nvidia-smi -L | wc -l)
[ "$gpus" -ge 1 ] || { echo "gpu_smoke: no GPU found" >&2; exit 1; }
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
"${mpi[@]}" -np "$gpus" "$b/tests/nmt_tests" --gtest_filter='NcclBackend.*:Communicator.*'
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$NMTRAIN_VENV/bin/python" "$root/tests/make_toy_corpus.py" "$tmp/raw" 400
common=(data.raw_dir="$tmp/raw" data.shard_dir="$tmp/shards" data.vocab_size=40 train.device=cuda
        train.max_updates=20 train.log_interval=5 dist.backend=nccl)
"$b/data/preprocess" --config "$root/configs/debug.yaml" "${common[@]}"
"$b/trainer/train" --config "$root/configs/debug.yaml" "${common[@]}" train.save_dir="$tmp/one"
"${mpi[@]}" -np "$gpus" "$b/trainer/train" --config "$root/configs/debug.yaml" "${common[@]}" train.save_dir="$tmp/all"
echo "gpu_smoke: NCCL tests and CUDA training on 1 and $gpus GPU(s) passed"
