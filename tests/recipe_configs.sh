#!/usr/bin/env bash
# The 3-hour recipes' configs are their 60-minute recipes' with the overrides their runs used
# (README's results table was made so), and the multilingual recipes are the multilingual search's
# base with its chosen points' overrides: each resolves (train --print-config) to the same
# configuration as the other config with those overrides, train.save_dir aside.
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
# The multilingual recipes are the multilingual search's frozen base with the overrides of the
# points they were chosen by (configs/sweeps/multilingual.sweep; docs/RESULTS.md), their shards aside.
same_as multi30k_multilingual_en_centric.yaml sweeps/base_multilingual_4505e55.yaml data.lang_tag=decoder \
  data.vocab_size=16000 train.max_updates=44000
same_as multi30k_multilingual_many_to_one.yaml sweeps/base_multilingual_4505e55.yaml 'data.directions=[de-en,fr-en,cs-en]' \
  data.lang_tag=none data.shard_dir=data-bin/multi30k_multilingual_many_to_one
same_as multi30k_multilingual_one_to_many.yaml sweeps/base_multilingual_4505e55.yaml data.lang_tag=decoder \
  'data.directions=[en-de,en-fr,en-cs]' data.src_lang=en data.tgt_lang=de data.vocab_size=16000 train.max_updates=22000 \
  data.shard_dir=data-bin/multi30k_multilingual_one_to_many
