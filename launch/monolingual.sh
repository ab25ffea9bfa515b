#!/usr/bin/env bash
# Back-translation and self-training with monolingual text (README.md, "Monolingual data"): a
# model translates the text (translate --output, a resumable job), the pairs that pass
# fairseq's length filters become a synthetic corpus beside the parallel one, the forward
# recipe trains on both (the synthetic sources tagged), is optionally fine-tuned on the
# parallel data alone (optimizer and schedule reset), and each stage is scored.
#
#   MODE=bt CONFIG=configs/multi30k_de_en.yaml MODEL_CONFIG=configs/multi30k_en_de.yaml \
#     MODEL=runs/multi30k_en_de/averaged.pt MONO=../shared/data/multi30k_captions/captions.en.gz \
#     bash launch/monolingual.sh [RAW_DIR]
#
# MODE: bt, back-translation (MONO is in CONFIG's target language; MODEL, of the reverse
#   direction, translates it into the source language), or st, self-training (MONO is in the
#   source language; MODEL, a forward model, translates it into the target language).
# MODEL: the translating checkpoint(s), space-separated for an ensemble; MODEL_CONFIG, its config.
# MONO: the monolingual text (plain or .gz). It is cleaned first (tools/prepare_mono.py clean):
#   empty, broken, overlong and repeated lines and lines of the parallel data's files go.
# DECODE: translate's decoding flags (default "--sampling topk 10"; "--beam 5" for beam search).
# TAG: the source tag of the synthetic corpus (default "<BT>"; TAG= for none).
# WEIGHTS: "REAL SYNTHETIC", the corpora's weights in training (default "1 1").
# FINETUNE_UPDATES: updates of a last pass on the parallel data alone, from the mixture's
#   averaged checkpoint (default 0: none); FINETUNE_EXTRA: its overrides (learning rate, ...).
# NP: ranks that translate, under mpirun (default 1); THREADS: threads each (default: 2 / NP, at least 1).
# SPLIT: val (default) or test, the split each stage is scored on (tune on val).
# EXTRA: overrides of the mixture's training, "key=value ..." (as quickstart.sh's).
# WORK: where everything goes (default runs/mono_<config name>_<MODE>): mono.<lang>,
#   synthetic.<lang> (the translations), raw/ (links to RAW_DIR's files and the synthetic pair),
#   mixed.yaml and mixed/ (the mixture's config and run), finetune.yaml and finetune/.
# Run again, it skips the steps whose outputs are there and resumes the translation and the
# training where they stopped. Each skipped step's output records what made it (OUTPUT.made-of:
# its input files by content, the models, the decoding flags, RAW_DIR's files): run again with
# another MONO, MODEL, MODEL_CONFIG, DECODE or RAW_DIR on the same WORK and the script stops
# (exit 2) naming what changed, instead of training on the earlier run's text. Relative paths
# inside the configs are taken from the checkout, as quickstart.sh takes them; those given here,
# from where it is run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=launch/common.sh
source "$root/launch/common.sh"
help_requested_then_exit "${BASH_SOURCE[0]}" "$@"
me=monolingual.sh
die() { echo "$me: error: $*" >&2; exit 2; }
raw=${1:-$root/../shared/data/multi30k}
mode=${MODE:-}
[ "$mode" = bt ] || [ "$mode" = st ] || die "MODE '$mode': expected bt (back-translation) or st (self-training)"
for var in CONFIG MODEL_CONFIG MONO; do
  [ -n "${!var:-}" ] || die "$var is not set ($me --help says what each variable is)"
  [ -f "${!var}" ] || die "$var '${!var}' is not a file"
done
read -r -a model <<< "${MODEL:-}"
[ ${#model[@]} -gt 0 ] || die "MODEL is not set: the checkpoint(s) that translate MONO"
for m in "${model[@]}"; do [ -f "$m" ] || die "MODEL '$m' is not a file"; done
[ -d "$raw" ] || die "raw data directory '$raw' does not exist"
read -r -a weights <<< "${WEIGHTS:-1 1}"
number='^([0-9]+\.?[0-9]*|\.[0-9]+)$'
[ ${#weights[@]} = 2 ] && [[ ${weights[0]} =~ $number ]] && [[ ${weights[1]} =~ $number ]] ||
  die "WEIGHTS '${WEIGHTS:-}': expected two positive numbers, REAL SYNTHETIC"
finetune_updates=${FINETUNE_UPDATES:-0}
[[ $finetune_updates =~ ^[0-9]+$ ]] || die "FINETUNE_UPDATES '$finetune_updates': not a non-negative integer"
np=${NP:-1}
[[ $np =~ ^[1-9][0-9]*$ ]] || die "NP '$np': not a positive integer"
threads=${THREADS:-$(( np >= 2 ? 1 : 2 ))}
[[ $threads =~ ^[1-9][0-9]*$ ]] || die "THREADS '$threads': not a positive integer"
split=${SPLIT:-val}
[ "$split" = val ] || [ "$split" = test ] || die "SPLIT '$split': expected val or test"
tag=${TAG-<BT>}
[[ $tag =~ ^[^[:space:]]{0,32}$ ]] || die "TAG '$tag': at most 32 characters, no spaces"
read -r -a decode <<< "${DECODE:---sampling topk 10}"
read -r -a extra <<< "${EXTRA:-}"
read -r -a finetune_extra <<< "${FINETUNE_EXTRA:-}"
config=$(realpath -ms -- "$CONFIG") model_config=$(realpath -ms -- "$MODEL_CONFIG") mono=$(realpath -ms -- "$MONO")
raw=$(realpath -ms -- "$raw")
for i in "${!model[@]}"; do model[$i]=$(realpath -ms -- "${model[$i]}"); done
work=$(realpath -ms -- "${WORK:-$root/runs/mono_$(basename "$config" .yaml)_$mode}")

load_build_env "$me" "$root" "preprocess train average evaluate translate"
b=$NMTRAIN_BUILD py=$NMTRAIN_VENV/bin/python
cd "$root"
mkdir -p "$work"
resolved=$("$b/trainer/train" --config "$config" data.raw_dir="$raw" --print-config)
src=$(sed -n 's/^  src_lang: "\(.*\)"$/\1/p' <<< "$resolved") tgt=$(sed -n 's/^  tgt_lang: "\(.*\)"$/\1/p' <<< "$resolved")
if [ "$mode" = bt ]; then mono_lang=$tgt synth_lang=$src; else mono_lang=$src synth_lang=$tgt; fi

# Each step is skipped when its output is there and was made from the same inputs (by content)
# and settings (common.sh: step_done); made from others, the script stops naming what changed.
clean=$work/mono.$mono_lang
excludes=() record="mono $(file_digest "$mono")"
for f in "$raw"/*."$mono_lang" "$raw"/*."$mono_lang".gz; do
  [ -f "$f" ] && excludes+=(--exclude "$f") && record+=$'\n'"exclude $(file_digest "$f") $(basename "$f")"
done
if ! step_done "$me" "$clean" "$record"; then
  echo "== clean $mono -> $clean (without the lines of $raw/*.$mono_lang)"
  "$py" "$root/tools/prepare_mono.py" clean "$mono" --output "$clean" "${excludes[@]}"
  step_made "$clean" "$record"
fi

synthetic=$work/synthetic.$synth_lang
record="input $(file_digest "$clean")"$'\n'"model_config $(file_digest "$model_config")"$'\n'"decode ${decode[*]}"
for m in "${model[@]}"; do record+=$'\n'"model $(file_digest "$m")"; done
if ! step_done "$me" "$synthetic" "$record"; then
  echo "== translate $clean -> $synthetic with ${model[*]} (${decode[*]}; $np rank(s) of $threads thread(s))"
  run=("$b/eval/translate" --config "$model_config" data.raw_dir="$raw" train.threads="$threads")
  for m in "${model[@]}"; do run+=(--checkpoint "$m"); done
  run+=(--input "$clean" --output "$synthetic" "${decode[@]}")
  [ "$np" = 1 ] || run=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" "${run[@]}")
  "${run[@]}"
  step_made "$synthetic" "$record"
fi

mixed_raw=$work/raw
record="mode $mode"$'\n'"input $(file_digest "$clean")"$'\n'"translation $(file_digest "$synthetic")"
# The links to RAW_DIR's files are made in this step too: another RAW_DIR (other parallel text
# beside the same monolingual-side files) must not leave them pointing at the old one.
for f in "$raw"/*; do [ -f "$f" ] && record+=$'\n'"parallel $(file_digest "$f") $(basename "$f")"; done
if ! step_done "$me" "$mixed_raw/synthetic.$src" "$record"; then
  echo "== the synthetic corpus: $mixed_raw/synthetic.{$src,$tgt}, beside links to $raw's files"
  mkdir -p "$mixed_raw"
  for f in "$raw"/*; do ln -sfn "$f" "$mixed_raw/$(basename "$f")"; done
  if [ "$mode" = bt ]; then pair=(--src "$synthetic" --tgt "$clean"); else pair=(--src "$clean" --tgt "$synthetic"); fi
  "$py" "$root/tools/prepare_mono.py" pairs "${pair[@]}" --out-prefix "$mixed_raw/synthetic" --src-lang "$src" --tgt-lang "$tgt"
  step_made "$mixed_raw/synthetic.$src" "$record"
fi

# The stages' configs are the recipe's, resolved with their overrides (train --print-config),
# kept in WORK: what each stage trained with, whole. quickstart.sh runs each with nothing of this
# script's environment on top (EXTRA, SHARD_DIR, SEEDS, JOBS): EXTRA is the mixture's alone, and
# the fine-tuning pass inherited its train.max_updates.
stage() {  # stage NAME: trains and scores WORK/NAME.yaml into WORK/NAME
  EXTRA= SHARD_DIR= SEEDS= JOBS= RUN_DIR=$work/$1 SPLIT=$split CONFIG=$work/$1.yaml \
    bash "$root/launch/quickstart.sh" "$mixed_raw"
}
mixed=("data.raw_dir=$mixed_raw" "data.shard_dir=$work/shards"
       "data.train_corpora={train: ${weights[0]}, synthetic: ${weights[1]}}")
[ -z "$tag" ] || mixed+=("data.source_tags={synthetic: \"$tag\"}")
"$b/trainer/train" --config "$config" "${mixed[@]}" "${extra[@]}" --print-config > "$work/mixed.yaml.tmp"
mv "$work/mixed.yaml.tmp" "$work/mixed.yaml"
echo "== train the recipe on the parallel and synthetic corpora ($work/mixed.yaml)"
stage mixed

[ "$finetune_updates" -gt 0 ] || { echo "$me: done: $work/mixed"; exit 0; }
start=$work/mixed/averaged.pt
[ -f "$start" ] || start=$work/mixed/last.pt
tuned=("data.raw_dir=$mixed_raw" "data.shard_dir=$work/shards_real" "data.spm_model=$work/shards/spm.model"
       "train.finetune_from=$start" "train.max_updates=$finetune_updates")
"$b/trainer/train" --config "$config" "${tuned[@]}" "${finetune_extra[@]}" --print-config > "$work/finetune.yaml.tmp"
mv "$work/finetune.yaml.tmp" "$work/finetune.yaml"
echo "== fine-tune $start on the parallel corpus alone for $finetune_updates updates ($work/finetune.yaml)"
stage finetune
echo "$me: done: $work/mixed, fine-tuned in $work/finetune"
