#!/usr/bin/env bash
# Fine-tuning from a transformers model directory (issue 84): train.finetune_from: DIR.
#   - a Marian-layout model built here from OPUS-MT's config.json (tests/make_marian_model.py:
#     random weights, SiLU, final_logits_bias, key biases), the shards preprocessed with its
#     source.spm: imported, its logits equal transformers' within 1e-4 (the imported weights
#     through the PyTorch reference forward, tests/hf_parity.py), and a few hundred updates of
#     fine-tuning lower the val loss;
#   - our own export (tools/export_hf.py) imported again gives our tensors back bit for bit;
#   - the refusals: not a transformers model, another architecture or activation, a config
#     model section that disagrees, a vocabulary size or vocab.json that is not the shards'.
#   hf_import.sh BUILD_DIR PYTHON
set -uo pipefail
build=$1 python=$2
here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/../tools" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"
"$python" -c "import transformers, safetensors, sentencepiece" 2> /dev/null \
  || fail "$python lacks transformers, safetensors or sentencepiece (launch/setup.sh installs them)"
export HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error

"$python" "$here/make_toy_corpus.py" raw 2000
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 1, max_tokens: 400}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 2, decoder_layers: 2, dropout: 0.0, activation: silu, output_bias: true}
optim: {label_smoothing: 0.0}
schedule: {type: inverse_sqrt, lr: 0.003, warmup_updates: 50}
train: {max_updates: 300, threads: 1, log_interval: 100, validate_interval_updates: 300, save_interval_updates: 300, save_dir: run}
YAML
# A SentencePiece model trained on the toy corpus's 2,000 lines: the "pretrained" tokenizer.
"$PRE" --config c.yaml data.shard_dir=spm_src > /dev/null 2>&1 || fail "preprocess (the tokenizer)"
"$python" "$here/make_marian_model.py" spm_src/spm.model spm_src/manifest.json marian || fail "make_marian_model.py"
# The user's step: preprocess with the imported tokenizer, so that the shards' ids are the model's.
"$PRE" --config c.yaml data.spm_model=marian/source.spm > /dev/null 2>&1 || fail "preprocess with marian/source.spm"

# refused NAME EXPECTED-TEXT COMMAND...: exit 2 and one line on stderr holding the text.
refused() {
  local name=$1 want=$2; shift 2
  "$@" > out.txt 2> err.txt
  local rc=$?
  [ $rc = 2 ] || { cat err.txt; fail "$name: exit $rc, expected 2"; }
  grep -qF -- "$want" err.txt || { cat err.txt; fail "$name: message lacks '$want'"; }
  [ "$(grep -c . err.txt)" = 1 ] || { cat err.txt; fail "$name: not one line"; }
  echo "ok: refused $name: $(cut -c1-170 err.txt)"
}
# bad_copy NAME PYTHON-EDIT: marian copied to NAME, config.json or vocab.json edited (`c`, `v`).
bad_copy() {
  cp -r marian "$1"
  "$python" - "$1" "$2" <<'PY' || fail "editing $1"
import json, sys
d, edit = sys.argv[1], sys.argv[2]
c, v = json.load(open(f"{d}/config.json")), json.load(open(f"{d}/vocab.json"))
exec(edit)
json.dump(c, open(f"{d}/config.json", "w")), json.dump(v, open(f"{d}/vocab.json", "w"))
PY
}
T=("$TRAIN" --config c.yaml train.max_updates=1 schedule.lr=0)
mkdir notamodel && echo x > notamodel/weights.bin
refused "a directory that is not a transformers model" "'notamodel' (command line 'train.finetune_from=notamodel'): is a directory without config.json" \
  "${T[@]}" train.finetune_from=notamodel train.save_dir=r1
bad_copy bart 'c["model_type"] = "bart"'
refused "another architecture" "model_type 'bart' is not supported" "${T[@]}" train.finetune_from=bart train.save_dir=r2
bad_copy gelu_new 'c["activation_function"] = "gelu_new"'
refused "an activation we do not compute" "activation_function 'gelu_new' is not supported" \
  "${T[@]}" train.finetune_from=gelu_new train.save_dir=r3
refused "a config whose model section disagrees" "the model there has model.activation=silu, but the configured model has relu" \
  "${T[@]}" train.finetune_from=marian model.activation=relu train.save_dir=r4
refused "a config with other layers" "the model there has model.encoder_layers=2, but the configured model has 3" \
  "${T[@]}" train.finetune_from=marian model.encoder_layers=3 train.save_dir=r5
bad_copy bigvocab 'c["vocab_size"] = c["decoder_vocab_size"] = 41'
refused "a vocabulary size that differs from the weights" "the embedding is not [vocab_size, d_model] = [41, 32]" \
  "${T[@]}" train.finetune_from=bigvocab train.save_dir=r6
bad_copy swapped 'a, b = sorted(v)[5:7]; v[a], v[b] = v[b], v[a]'
refused "a vocab.json that does not match the SentencePiece model" "vocab.json does not match the SentencePiece model" \
  "${T[@]}" train.finetune_from=swapped train.save_dir=r7
"$PRE" --config c.yaml data.vocab_size=36 data.shard_dir=shards36 > /dev/null 2>&1 || fail "preprocess with 36 pieces"
refused "shards made with another tokenizer" "its vocabulary has 40 pieces, the shards' 36" \
  "${T[@]}" train.finetune_from=marian data.shard_dir=shards36 train.save_dir=r8
for r in r1 r2 r3 r4 r5 r6 r7 r8; do [ ! -e "$r/last.pt" ] || fail "a refused import wrote $r/last.pt"; done

# The import itself: one update at learning rate 0 writes the imported weights as our checkpoint.
"${T[@]}" train.finetune_from=marian train.save_dir=imported > import.log 2>&1 || { tail -5 import.log; fail "import"; }
grep -q "fine-tuning from the transformers model marian" import.log || { tail -3 import.log; fail "no import line"; }
cat raw/val.de raw/test_2016_flickr.de > src.txt && cat raw/val.en raw/test_2016_flickr.en > ref.txt
"$python" "$here/hf_parity.py" logits imported/last.pt marian shards src.txt ref.txt \
  || fail "the imported model's logits are not transformers'"
loss_at_import=$(grep -o 'best validation loss [0-9.]*' import.log | grep -o '[0-9.]*$')

# Fine-tuning: 300 updates from the import lower the val loss.
"$TRAIN" --config c.yaml train.finetune_from=marian train.save_dir=tuned > tuned.log 2>&1 || { tail -5 tuned.log; fail "fine-tune"; }
loss_tuned=$(grep -o 'best validation loss [0-9.]*' tuned.log | grep -o '[0-9.]*$')
"$python" -c "import sys; sys.exit(0 if float('$loss_tuned') < float('$loss_at_import') else 1)" \
  || fail "fine-tuning did not lower the val loss: $loss_at_import -> $loss_tuned"
echo "ok: 300 updates of fine-tuning from the Marian model: val loss $loss_at_import -> $loss_tuned"

# Round trip: our fine-tuned model exported (Marian's classes: post-norm) and imported again.
"$python" "$tools/export_hf.py" --checkpoint tuned/last.pt --config c.yaml --output exported > export.log 2>&1 \
  || { cat export.log; fail "export the fine-tuned model"; }
"${T[@]}" train.finetune_from=exported train.save_dir=again > again.log 2>&1 || { tail -5 again.log; fail "import our export"; }
"$python" - <<'PY' || fail "export then import does not give our tensors back"
import torch
a, b = (torch.load(p, weights_only=True)["model"] for p in ("tuned/last.pt", "again/last.pt"))
assert set(a) == set(b), set(a) ^ set(b)
bad = [k for k in a if not torch.equal(a[k], b[k])]
assert not bad, bad[:5]
print(f"ok: export then import gives all {len(a)} tensors back bit for bit")
PY
echo "hf import: Marian-layout model imported, fine-tuned and round-tripped"
