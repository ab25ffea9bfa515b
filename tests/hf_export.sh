#!/usr/bin/env bash
# Export to Hugging Face transformers (issue 84): tiny models trained here, pre-norm (exported
# as Pegasus's classes) and post-norm with FixNorm (Marian's), are exported with
# tools/export_hf.py and loaded by stock transformers; tests/hf_parity.py checks the tokenizer
# against the shards, the logits against the PyTorch reference forward within 1e-4, greedy
# generate against our translate --beam 1 (>= 99% of lines), beam search with the export's
# generation config against ours (BLEU within 0.1) and pipeline("translation"). Also the
# exporter's refusals (a ScaleNorm model among them): one line, exit 2, nothing written or
# deleted. Multilingual models in both tag placements, each in one direction, the same way.
#   hf_export.sh BUILD_DIR PYTHON
set -uo pipefail
build=$1 python=$2
here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/../tools" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"
TRANS=$build/eval/translate
EXPORT=("$python" "$tools/export_hf.py")
"$python" -c "import transformers, safetensors, sentencepiece, sacrebleu" 2> /dev/null \
  || fail "$python lacks transformers, safetensors, sentencepiece or sacrebleu (launch/setup.sh installs them)"
export HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error  # nothing is downloaded: the export is all it needs

# The word-for-word toy task of tests/ctranslate2_export.sh (no label smoothing: see there).
"$python" "$here/make_toy_corpus.py" raw 2000
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 1, max_tokens: 400}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0, pre_norm: true}
optim: {label_smoothing: 0.0}
schedule: {type: inverse_sqrt, lr: 0.003, warmup_updates: 50}
train: {max_updates: 1500, threads: 1, log_interval: 500, validate_interval_updates: 1500, save_interval_updates: 1500, save_dir: run}
eval: {beam: 4, lenpen: 1.2}
YAML
"$PRE" --config c.yaml > /dev/null 2>&1 || fail preprocess
SECONDS=0
"$TRAIN" --config c.yaml > train.log 2>&1 || { tail -5 train.log; fail train; }
echo "ok: trained the pre-norm toy model in ${SECONDS}s: $(grep -o 'best validation loss .*' train.log)"

mkdir full && echo keep > full/keep
refused "a missing checkpoint" "run/nope.pt: checkpoint does not exist" \
  "${EXPORT[@]}" --checkpoint run/nope.pt --config c.yaml --output out
refused "a missing config" "nope.yaml: config file does not exist" \
  "${EXPORT[@]}" --checkpoint run/last.pt --config nope.yaml --output out
refused "an override without a section" "override 'beam=4': not of the form section.key=value" \
  "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output out beam=4
refused "a config whose model section disagrees" "trained with model.d_model=32, but c.yaml and its overrides say 64" \
  "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output out model.d_model=64
refused "a non-empty output directory" "full: output directory exists and holds 'keep', which export_hf does not write" \
  "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output full
refused "--force on a directory it did not write" "--force replaces only a directory export_hf wrote" \
  "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output full --force
refused "the run directory as output" "--output run: contains the checkpoint run/last.pt, an input" \
  "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output run --force
[ ! -e out ] && [ "$(ls -A full)" = keep ] || fail "a refused export wrote something"

"${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output hf > export.log 2>&1 || { cat export.log; fail export; }
grep -q "pegasus (pre-norm)" export.log || { cat export.log; fail "a pre-norm model was not exported as pegasus"; }
refused "an earlier export without --force" "hf: output directory exists and is not empty (use --force to replace it)" \
  "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output hf
touch -d @0 hf/model.safetensors
"${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output hf --force > /dev/null 2>&1 || fail "export --force"
[ "$(stat -c %Y hf/model.safetensors)" != 0 ] || fail "--force did not replace the earlier export hf/"
ls -a . | grep -q '\.tmp-\|\.old-' && fail "the export left a temporary"
echo "ok: $(cat export.log)"

# Sources: the validation and test sets and the first 460 training sentences, 500 lines.
cat raw/val.de raw/test_2016_flickr.de > src.txt && head -460 raw/train.de >> src.txt
cat raw/val.en raw/test_2016_flickr.en > ref.txt && head -460 raw/train.en >> ref.txt

# same_as_ours CHECKPOINT EXPORT [KEY=VALUE...]: our translate greedy and at the config's beam,
# then tests/hf_parity.py.
same_as_ours() {
  local ckpt=$1 hf=$2
  shift 2
  "$TRANS" --config c.yaml --checkpoint "$ckpt" --beam 1 --input src.txt "$@" > ours.greedy 2> err.txt \
    || { cat err.txt; fail "translate $ckpt --beam 1"; }
  "$TRANS" --config c.yaml --checkpoint "$ckpt" --input src.txt "$@" > ours.beam 2> err.txt \
    || { cat err.txt; fail "translate $ckpt"; }
  "$python" "$here/hf_parity.py" "$ckpt" "$hf" shards val raw/val src.txt ref.txt ours.greedy ours.beam \
    || fail "transformers does not run $hf as our model"
}
same_as_ours run/last.pt hf

# The README's snippet, as printed there, on this export and these sources: our beam's lines.
sed -n '/^## Use your model in transformers/,/^## /p' "$here/../README.md" | sed -n '/^```python/,/^```/p' | sed '1d;$d' \
  | sed -e 's#runs/quickstart_de_en/hf#hf#g' -e 's#../shared/data/multi30k/test_2016_flickr.de.gz#src.txt.gz#' > snippet.py
[ "$(grep -c . snippet.py)" = 5 ] && grep -q '"hf"' snippet.py && grep -q src.txt.gz snippet.py \
  || { cat snippet.py; fail "README.md's transformers snippet is not the five lines this test expects"; }
gzip -k src.txt
"$python" snippet.py > snippet.out 2> err.txt || { cat err.txt; fail "README.md's transformers snippet"; }
cmp -s snippet.out ours.beam || { diff snippet.out ours.beam | head; fail "README.md's snippet does not give our translate's lines"; }
echo "ok: README.md's transformers snippet gives our translate's $(wc -l < snippet.out) lines"

# Post-norm (Marian's classes) with FixNorm (unit rows in the exported matrix), and OPUS-MT's
# SiLU and logits bias (final_logits_bias).
PN=(model.pre_norm=false model.fix_norm=true model.activation=silu model.output_bias=true)
"$TRAIN" --config c.yaml "${PN[@]}" train.save_dir=run_pn > train_pn.log 2>&1 \
  || { tail -5 train_pn.log; fail "train post-norm with FixNorm"; }
echo "ok: trained the post-norm FixNorm SiLU toy model with a logits bias: $(grep -o 'best validation loss .*' train_pn.log)"
"${EXPORT[@]}" --checkpoint run_pn/last.pt --config c.yaml --output hf_pn "${PN[@]}" > export.log 2>&1 \
  || { cat export.log; fail "export post-norm"; }
grep -q "marian (post-norm, FixNorm as unit rows)" export.log || { cat export.log; fail "the post-norm export's line"; }
same_as_ours run_pn/last.pt hf_pn "${PN[@]}"

# ScaleNorm has no stock equivalent: refused by name, before anything is written.
"$TRAIN" --config c.yaml model.norm=scale train.max_updates=5 train.save_dir=run_sn > train_sn.log 2>&1 \
  || { tail -5 train_sn.log; fail "train with ScaleNorm"; }
refused "a ScaleNorm model" "run_sn/last.pt: model.norm=scale (ScaleNorm) has no equivalent in transformers" \
  "${EXPORT[@]}" --checkpoint run_sn/last.pt --config c.yaml --output out_sn model.norm=scale
[ ! -e out_sn ] || fail "a refused export wrote out_sn"

# Multilingual models (de-en and en-de in one model): the tags go out as OPUS-MT's >>xx<<
# codes. Under lang_tag source, en-de's sources are ">>de<< ..." text; under decoder, de-en
# decodes from decoder_start_token_id = >>en<<. Each is compared in that direction, and an
# export in the other direction's default is refused when data.tgt_lang is no target.
for place in source decoder; do
  cat > ml_$place.yaml <<YAML
data: {raw_dir: raw, shard_dir: shards_$place, vocab_size: 40, num_shards: 1, max_tokens: 400,
       directions: [de-en, en-de], lang_tag: $place}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0, pre_norm: true}
optim: {label_smoothing: 0.0}
schedule: {type: inverse_sqrt, lr: 0.003, warmup_updates: 50}
train: {max_updates: 1500, threads: 1, log_interval: 500, validate_interval_updates: 1500, save_interval_updates: 1500, save_dir: run_$place}
eval: {beam: 4, lenpen: 1.2}
YAML
  "$PRE" --config ml_$place.yaml > /dev/null 2>&1 || fail "preprocess the multilingual toy corpus ($place tags)"
  "$TRAIN" --config ml_$place.yaml > train_$place.log 2>&1 || { tail -5 train_$place.log; fail "train the multilingual toy model ($place tags)"; }
  echo "ok: trained the multilingual toy model with $place tags: $(grep -o 'best validation loss .*' train_$place.log)"
done
# same_direction_as_ours CONFIG EXPORT DIRECTION: tests/hf_parity.py on the direction's 500 lines.
same_direction_as_ours() {
  local config=$1 hf=$2 direction=$3 src=${3%-*} tgt=${3#*-} place=${1#ml_}
  place=${place%.yaml}
  cat "raw/val.$src" "raw/test_2016_flickr.$src" > "src.$direction" && head -460 "raw/train.$src" >> "src.$direction"
  cat "raw/val.$tgt" "raw/test_2016_flickr.$tgt" > "ref.$direction" && head -460 "raw/train.$tgt" >> "ref.$direction"
  local ckpt=run_$place/last.pt
  "$TRANS" --config "$config" --checkpoint "$ckpt" --direction "$direction" --beam 1 --input "src.$direction" \
    > ours.greedy 2> err.txt || { cat err.txt; fail "translate $ckpt --direction $direction --beam 1"; }
  "$TRANS" --config "$config" --checkpoint "$ckpt" --direction "$direction" --input "src.$direction" \
    > ours.beam 2> err.txt || { cat err.txt; fail "translate $ckpt --direction $direction"; }
  "$python" "$here/hf_parity.py" "$ckpt" "$hf" "shards_$place" val raw/val "src.$direction" "ref.$direction" \
    ours.greedy ours.beam "$direction" | sed "s/^/$direction: /" || fail "transformers does not run $hf as our model in $direction"
}
"${EXPORT[@]}" --checkpoint run_source/last.pt --config ml_source.yaml --output hf_source > export.log 2>&1 \
  || { cat export.log; fail "export the multilingual model (source tags)"; }
grep -q "directions de-en, en-de (language codes >>xx<< before the source text)" export.log \
  || { cat export.log; fail "the multilingual export's line"; }
same_direction_as_ours ml_source.yaml hf_source en-de
"${EXPORT[@]}" --checkpoint run_decoder/last.pt --config ml_decoder.yaml --output hf_decoder > export.log 2>&1 \
  || { cat export.log; fail "export the multilingual model (decoder tags)"; }
grep -q "directions de-en, en-de (language codes >>xx<< as decoder_start_token_id)" export.log \
  || { cat export.log; fail "the multilingual export's line"; }
"$python" - <<'PY' || fail "the decoder-tag export's generation config and tokenizer"
import json, transformers
tok = transformers.AutoTokenizer.from_pretrained("hf_decoder")
gen = json.load(open("hf_decoder/generation_config.json"))
codes = [tok.convert_tokens_to_ids(c) for c in (">>de<<", ">>en<<")]
assert gen["decoder_start_token_id"] == codes[1], (gen, codes)  # data.tgt_lang: en, the config's default
assert set(codes) <= set(gen["suppress_tokens"]), gen  # never emitted
line, last = open("raw/val.en").readline().strip(), max(tok.get_vocab().values())
assert tok.tokenize(">>de<< " + line) == [">>de<<"] + tok.tokenize(line), tok.tokenize(">>de<< " + line)
assert tok.decode(codes + [last], skip_special_tokens=True) == tok.decode([last]) != "", tok.decode(codes + [last])
print(f"ok: the decoder-tag export starts from >>en<< ({codes[1]}) by default; >>de<< and >>en<< are one token each, "
      f"never generated, and dropped by skip_special_tokens")
PY
same_direction_as_ours ml_decoder.yaml hf_decoder de-en
refused "a decoder-tag export whose data.tgt_lang is no target" "data.tgt_lang 'fr' is not a target language of this model" \
  "${EXPORT[@]}" --checkpoint run_decoder/last.pt --config ml_decoder.yaml --output out_ml data.tgt_lang=fr
[ ! -e out_ml ] || fail "a refused export wrote out_ml"
echo "hf export: pre-norm, post-norm and two multilingual models compared on $(wc -l < src.txt) sentences each"
