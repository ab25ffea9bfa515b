#!/usr/bin/env bash
# launch/monolingual.sh end to end on the toy corpus: back-translation of a monolingual file
# (with empty, repeated and CRLF lines, and lines of the parallel data) by an en->de model on two
# ranks, a tagged synthetic corpus of the pairs that pass the filters, training on the mixture
# and a fine-tuning pass on the parallel data alone, each scored on val; run again, every step is
# skipped or resumed, nothing redone; self-training (MODE=st) with the forward model; bad
# settings refused with exit 2 before anything is built or written.
#   monolingual_pipeline_job.sh BUILD_DIR PYTHON
set -uo pipefail
build=$(cd "$1" && pwd) python=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"  # PRE, TRAIN, a scratch working directory, fail
"$python" "$here/make_toy_corpus.py" raw 300
"$python" "$here/make_toy_corpus.py" other 400
# English monolingual text: 400 toy sentences (many repeat, and the first 300 are raw/train.en's),
# an empty line and a CRLF line.
{ cat other/train.en; echo; printf 'a dog runs .\r\n'; } > mono.en
cat > recipe.yaml <<'YAML'
data: {shard_dir: fwd_shards, vocab_size: 38, num_shards: 1, max_tokens: 200}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0}
schedule: {type: inverse_sqrt, lr: 0.004, warmup_updates: 10}
train: {max_updates: 30, threads: 1, log_interval: 10, validate_interval_updates: 30, save_interval_updates: 10}
eval: {beam: 2, average_last: 2}
YAML
# Paths inside configs are taken from the checkout (as quickstart.sh takes them): absolute here.
rev=(data.raw_dir="$tmp/raw" data.src_lang=en data.tgt_lang=de data.shard_dir="$tmp/rev_shards" train.save_dir=rev_run)
"$PRE" --config recipe.yaml "${rev[@]}" > /dev/null 2>&1 || fail "preprocess en->de"
"$TRAIN" --config recipe.yaml "${rev[@]}" > rev.log 2>&1 || { tail rev.log; fail "train en->de"; }
"$TRAIN" --config recipe.yaml "${rev[@]}" --print-config > rev.yaml

pipeline() {  # pipeline LOG VAR=VALUE...: launch/monolingual.sh on raw/, output in LOG
  local log=$1; shift
  env BUILD_DIR="$build" CONFIG=recipe.yaml MONO=mono.en WORK=work "$@" bash "$here/../launch/monolingual.sh" raw > "$log" 2>&1
}
# EXTRA is the mixture's (20 updates instead of the recipe's 30), and the fine-tuning pass runs
# its own 10: EXTRA once leaked into it.
bt=(MODE=bt MODEL_CONFIG=rev.yaml MODEL=rev_run/last.pt NP=2 FINETUNE_UPDATES=10 "FINETUNE_EXTRA=schedule.lr=0.001"
    "EXTRA=train.max_updates=20")
pipeline bt.log "${bt[@]}" || { tail -30 bt.log; fail "the back-translation pipeline"; }
# What cleaning should keep, worked out here: the distinct non-empty lines (CR stripped) of no raw/*.en file.
want=$("$python" -c '
import glob
seen = {l.rstrip("\n") for f in glob.glob("raw/*.en") for l in open(f)}
kept = []
for l in open("mono.en", newline="\n"):
    l = l.rstrip("\n").rstrip("\r").strip()
    if l and l not in seen:
        seen.add(l)
        kept.append(l)
print(len(kept))')
grep -q "kept $want of 402 lines" bt.log || { grep prepare_mono bt.log; fail "the cleaning did not keep the $want lines"; }
[ "$(wc -l < work/synthetic.de)" = "$want" ] || fail "synthetic.de does not have one line per cleaned line"
[ "$(wc -l < work/raw/synthetic.de)" = "$(wc -l < work/raw/synthetic.en)" ] || fail "the synthetic pair is not aligned"
grep -q '  train_corpora: {synthetic: 1.0, train: 1.0}' work/mixed.yaml || fail "mixed.yaml's corpora"
grep -q '  source_tags: {synthetic: "<BT>"}' work/mixed.yaml || fail "mixed.yaml's tag"
grep -q "  finetune_from: \"$tmp/work/mixed/averaged.pt\"" work/finetune.yaml || fail "finetune.yaml does not start from the mixture"
[ "$(grep -c '^BLEU = ' bt.log)" = 4 ] || { grep BLEU bt.log; fail "expected two stages scored both ways"; }
grep -q "fine-tuning from $tmp/work/mixed/averaged.pt" work/finetune/train.log ||
  { grep -i finetun work/finetune/train.log | head -3; fail "the last pass did not start from the mixture's weights"; }
grep -q "done: 20 updates" work/mixed/train.log || { grep done: work/mixed/train.log; fail "the mixture did not run EXTRA's 20 updates"; }
grep -q "done: 10 updates" work/finetune/train.log || { grep done: work/finetune/train.log; fail "the fine-tuning did not run its 10 updates"; }
echo "ok: bt pipeline: $want of 402 lines kept, translated on 2 ranks, tagged, trained, fine-tuned, both scored on val"

synth_sum=$(sha256sum < work/synthetic.de)
pipeline again.log "${bt[@]}" || { tail -30 again.log; fail "the pipeline run again"; }
grep -q "== clean\|== translate\|== the synthetic corpus" again.log && fail "a finished step ran again"
[ "$(grep -c 'resumed from' again.log)" = 2 ] || { grep -i resum again.log; fail "the trainings did not resume"; }
[ "$(sha256sum < work/synthetic.de)" = "$synth_sum" ] || fail "the synthetic corpus changed"
echo "ok: run again, the finished steps were skipped and both trainings resumed"

# Run again with another MONO, decoding, MODEL, MODEL_CONFIG or RAW_DIR on the same WORK: the
# finished steps were made from something else, so the script stops naming what changed (never
# trains on the earlier text).
head -300 mono.en > mono_other.en
clean_sum=$(sha256sum < work/mono.en)
# Another RAW_DIR with the same English files but other German text changes only the parallel
# corpus the synthetic step links beside the synthetic pair.
cp -r raw raw_other && sed -i '1s/^/noch /' raw_other/train.de
{ cat rev.yaml; echo "# the same settings in another file"; } > rev_other.yaml  # other bytes: the record is by content
for change in "MONO=mono_other.en:mono" "DECODE=--beam 3:decode" "MODEL=rev_run/update_20.pt:model" \
              "MODEL_CONFIG=rev_other.yaml:model_config" "RAW_DIR=raw_other:parallel"; do
  rc=0
  if [ "${change%%=*}" = RAW_DIR ]; then  # the positional argument
    env BUILD_DIR="$build" CONFIG=recipe.yaml MONO=mono.en WORK=work "${bt[@]}" bash "$here/../launch/monolingual.sh" \
      raw_other > changed.log 2>&1 || rc=$?
  else
    pipeline changed.log "${bt[@]}" "${change%%:*}" || rc=$?
  fi
  [ $rc = 2 ] && grep -q "work/.*was made from other inputs or settings (changed: ${change##*:};" changed.log ||
    { tail -5 changed.log; fail "a rerun with ${change%%:*} was not refused naming ${change##*:}: exit $rc"; }
  echo "ok: refused a rerun with ${change%%:*}: $(grep -o 'error: .*' changed.log | cut -c1-150)"
done
[ "$(sha256sum < work/mono.en)" = "$clean_sum" ] && [ "$(sha256sum < work/synthetic.de)" = "$synth_sum" ] ||
  fail "a refused rerun changed the earlier outputs"

fwd=(data.raw_dir="$tmp/raw" data.shard_dir="$tmp/fwd_shards")
"$PRE" --config recipe.yaml "${fwd[@]}" > /dev/null 2>&1 || fail "preprocess de->en"
"$TRAIN" --config recipe.yaml "${fwd[@]}" train.max_updates=200 > fwd.log 2>&1 || { tail fwd.log; fail "train de->en"; }
"$TRAIN" --config recipe.yaml "${fwd[@]}" --print-config > fwd.yaml
sed -n 301,400p other/train.de > mono.de
pipeline st.log MODE=st MODEL_CONFIG=fwd.yaml MODEL=runs/default/last.pt MONO=mono.de WORK=st TAG= \
  "DECODE=--beam 2" || { tail -30 st.log; fail "the self-training pipeline"; }
[ -f st/synthetic.en ] && [ -f st/raw/synthetic.de ] || fail "self-training wrote no synthetic corpus"
grep -q "source_tags: {}" st/mixed.yaml || fail "TAG= still tagged"
echo "ok: st pipeline: the forward model's translations of German text, untagged"

refused() {  # refused PATTERN VAR=VALUE...
  local pattern=$1 rc=0; shift
  pipeline refused.log "$@" || rc=$?
  [ $rc = 2 ] && grep -q -- "$pattern" refused.log && [ ! -e nothing ] || { cat refused.log; fail "$pattern: exit $rc"; }
  echo "ok: refused: $(head -c 160 refused.log)"
}
refused "MODE 'xx': expected bt" MODE=xx WORK=nothing
refused "MODEL 'none.pt' is not a file" MODE=bt MODEL_CONFIG=rev.yaml MODEL=none.pt WORK=nothing
refused "MODEL_CONFIG is not set" MODE=bt MODEL=rev_run/last.pt WORK=nothing
refused "WEIGHTS '1': expected two positive numbers" MODE=bt MODEL_CONFIG=rev.yaml MODEL=rev_run/last.pt WEIGHTS=1 WORK=nothing
refused "TAG '<B T>'" MODE=bt MODEL_CONFIG=rev.yaml MODEL=rev_run/last.pt "TAG=<B T>" WORK=nothing
echo "PASS monolingual pipeline"
