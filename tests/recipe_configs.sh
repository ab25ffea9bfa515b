#!/usr/bin/env bash
# The 3-hour recipes' configs are their 60-minute recipes' with the overrides their runs used
# (README's results table was made so): each resolves (train --print-config) to the same
# configuration as the 60-minute config with those overrides, train.save_dir aside.
#   recipe_configs.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
train=$1/trainer/train src=$2
fail() { echo "FAIL: $*"; exit 1; }
same_as() {  # same_as THREE_HOUR SIXTY_MINUTE OVERRIDE...
  local a=$1 b=$2; shift 2
  diff <("$train" --config "$src/configs/$a" --print-config | grep -v '^  save_dir:') \
       <("$train" --config "$src/configs/$b" "$@" --print-config | grep -v '^  save_dir:') ||
    fail "configs/$a is not configs/$b with $*"
  echo "ok: configs/$a == configs/$b $*"
}
same_as multi30k_de_en_3h.yaml multi30k_de_en.yaml eval.beam=10
same_as multi30k_en_de_3h.yaml multi30k_en_de.yaml data.concat_weight=0 data.shard_dir=data-bin/multi30k_en_de \
  eval.beam=5 eval.lenpen=1.4 eval.average_last=10
