#!/usr/bin/env bash
# Data-parallel training on one machine: one rank per GPU (or per CPU socket/core group).
#   launch/mpirun_train.sh [--dry-run] NP CONFIG [key=value ...] [--resume auto]
# Runs as root when needed (--allow-run-as-root) and allows more ranks than cores
# (--oversubscribe), which CPU tests on small machines need.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=launch/common.sh
source "$root/launch/common.sh"
help_requested_then_exit "${BASH_SOURCE[0]}" "$@"
dry=0
[ "${1:-}" = "--dry-run" ] && { dry=1; shift; }
[ $# -ge 2 ] || { echo "usage: $0 [--dry-run] NP CONFIG [key=value ...] [--resume auto]" >&2; exit 2; }
np=$1 config=$2; shift 2
[[ $np =~ ^[1-9][0-9]*$ ]] || { echo "$0: NP must be a positive integer, got '$np'" >&2; exit 2; }
[ -f "$config" ] && [ -r "$config" ] || { echo "$0: CONFIG '$config' is not a readable file" >&2; exit 2; }
train=${NMTRAIN_BUILD:-$root/build}/trainer/train
[ $dry = 1 ] || [ -x "$train" ] || { echo "$0: no trainer at $train (run launch/build.sh, or set NMTRAIN_BUILD)" >&2; exit 2; }
cmd=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" "$train" --config "$config" "$@")
if [ $dry -eq 1 ]; then printf '%q ' "${cmd[@]}"; echo; exit 0; fi
exec "${cmd[@]}"
