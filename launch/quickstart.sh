#!/usr/bin/env bash
# The main job on a fresh machine: install, build, preprocess Multi30k De->En, train,
# average the last checkpoints, and evaluate BLEU on test_2016_flickr with beam search.
#
#   bash launch/quickstart.sh [RAW_DIR]        # RAW_DIR defaults to ../shared/data/multi30k
#   MINUTES=58 bash launch/quickstart.sh       # the full recipe budget (README results)
#
# Other config overrides can be appended via EXTRA="key=value ...".
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
raw=${1:-$root/../shared/data/multi30k}
minutes=${MINUTES:-10}
config=$root/configs/multi30k_de_en.yaml
run=${RUN_DIR:-$root/runs/quickstart}
shards=${SHARD_DIR:-$root/data-bin/multi30k_de_en}
eval "$(bash "$root/launch/build.sh")"
b=$NMTRAIN_BUILD
cd "$root"
common=(data.raw_dir="$raw" data.shard_dir="$shards" train.save_dir="$run")
# shellcheck disable=SC2206
extra=(${EXTRA:-})

echo "== preprocess $raw -> $shards"
"$b/data/preprocess" --config "$config" "${common[@]}" "${extra[@]}"
echo "== train for $minutes minutes -> $run (log: $run/train.log, metrics: $run/metrics.jsonl)"
"$b/trainer/train" --config "$config" "${common[@]}" train.max_minutes="$minutes" "${extra[@]}"
echo "== average the last checkpoints"
n=$(find "$run" -maxdepth 1 -name 'update_*.pt' | wc -l)
n=$(( n > 5 ? 5 : n ))
ckpt=$run/last.pt
if [ "$n" -ge 2 ]; then
  "$b/trainer/average" --output "$run/averaged.pt" --last "$n" "$run"
  ckpt=$run/averaged.pt
fi
echo "== evaluate $ckpt on test_2016_flickr (beam 5)"
"$b/eval/evaluate" --config "$config" "${common[@]}" "${extra[@]}" --checkpoint "$ckpt" --split test \
  --output "$run/test_2016_flickr.hyp.en"
