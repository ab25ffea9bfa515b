#!/usr/bin/env bash
# Training across nodes listed in an Open MPI hostfile; ranks are placed by slot, and
# each rank takes the GPU of its node-local rank.
#   launch/multinode_train.sh [--dry-run] --hostfile FILE NP CONFIG [key=value ...]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dry=0
[ "${1:-}" = "--dry-run" ] && { dry=1; shift; }
[ "${1:-}" = "--hostfile" ] && [ $# -ge 4 ] || { echo "usage: $0 [--dry-run] --hostfile FILE NP CONFIG [key=value ...]" >&2; exit 2; }
hostfile=$2 np=$3 config=$4; shift 4
[ -f "$hostfile" ] || { echo "$0: hostfile $hostfile does not exist" >&2; exit 2; }
train=${NMTRAIN_BUILD:-$root/build}/trainer/train
cmd=(mpirun --hostfile "$hostfile" -np "$np" --map-by slot --bind-to none
     -x LD_LIBRARY_PATH -x NCCL_DEBUG=WARN "$train" --config "$config" "$@")
if [ $dry -eq 1 ]; then printf '%q ' "${cmd[@]}"; echo; exit 0; fi
exec "${cmd[@]}"
