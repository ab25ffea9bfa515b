#!/usr/bin/env bash
# Two 1-thread trainers at once, one per CPU (as `JOBS=2 SEEDS="1 2" launch/quickstart.sh` trains
# a pair of ensemble members), against one trainer with 2 threads on the same 2 CPUs, side by
# side: `train --benchmark N --warmup W` each, alternating, for each precision in each round.
# Prints one markdown row per round and precision: updates a second of the 2-thread run, of each
# member (seeds 1 and 2), and the members' sum over the 2-thread run's.
#   bash bench/members_at_once.sh [--config C] [--rounds R] [--updates N] [--warmup W]
#                                 [--precisions "fp32 bf16"]
# Defaults: the 60-minute De->En recipe (configs/multi30k_de_en.yaml), 2 rounds, 120 updates
# after 5. Needs NMTRAIN_BUILD (launch/build.sh's environment), the config's shards, and 2 CPUs
# in this script's affinity (the first two are used).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
config=$root/configs/multi30k_de_en.yaml rounds=2 updates=120 warmup=5 precisions="fp32 bf16"
die() { echo "members_at_once.sh: error: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --config | --rounds | --updates | --warmup | --precisions)
      [ $# -ge 2 ] || die "$1 needs a value"
      declare "${1#--}=$2"; shift 2 ;;
    *) die "unknown argument '$1'" ;;
  esac
done
for name in rounds updates warmup; do
  [[ ${!name} =~ ^[1-9][0-9]*$ ]] || die "--$name '${!name}': not a positive integer"
done
for p in $precisions; do
  [[ $p == fp32 || $p == bf16 ]] || die "--precisions '$precisions': '$p' is not fp32 or bf16"
done
[ -f "$config" ] || die "--config '$config' is not a file"
read -r -a cpus <<< "$(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2])')"
[ ${#cpus[@]} = 2 ] || die "this script may use only ${#cpus[@]} CPU, and the pair needs 2"
train=${NMTRAIN_BUILD:-$root/build}/trainer/train
[ -x "$train" ] || die "no $train (run launch/build.sh, or set NMTRAIN_BUILD)"
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT

# bench NAME CPUS OVERRIDE...: one `train --benchmark` pinned to CPUS, its JSON in scratch/NAME.json.
bench() {
  local name=$1 cpus=$2; shift 2
  taskset -c "$cpus" "$train" --config "$config" train.save_dir="$scratch/$name" "$@" \
    --benchmark "$updates" --warmup "$warmup" > "$scratch/$name.out" 2>&1 ||
    { tail -5 "$scratch/$name.out" >&2; die "train --benchmark ($name) failed"; }
  tail -n 1 "$scratch/$name.out" > "$scratch/$name.json"
}
rate() { python3 -c 'import json, sys; print("%.3f" % json.load(open(sys.argv[1]))["updates_per_s"])' "$1"; }

echo "| round | precision | 2 threads, updates/s | member 1 (1 thread) | member 2 (1 thread) | members' sum / 2 threads |"
echo "|---|---|---|---|---|---|"
for round in $(seq "$rounds"); do
  for p in $precisions; do
    bench two "${cpus[0]},${cpus[1]}" train.precision="$p" train.threads=2
    bench m1 "${cpus[0]}" train.precision="$p" train.threads=1 train.seed=1 &
    first=$!
    bench m2 "${cpus[1]}" train.precision="$p" train.threads=1 train.seed=2
    wait "$first"
    two=$(rate "$scratch/two.json")
    m1=$(rate "$scratch/m1.json")
    m2=$(rate "$scratch/m2.json")
    echo "| $round | $p | $two | $m1 | $m2 | $(python3 -c "print(f'{($m1 + $m2) / $two:.2f}x')") |"
  done
done
