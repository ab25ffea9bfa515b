#!/usr/bin/env bash
# Fine-tuning from a transformers model directory (issue 84): train.finetune_from: DIR.
#   - an OPUS-MT-layout model built here from OPUS-MT's config.json (tests/make_marian_model.py:
#     random weights, SiLU, final_logits_bias, key biases; source.spm and target.spm with one
#     joint vocab.json, pad as the decoder's start), the shards preprocessed with its tokenizer
#     (data.hf_tokenizer: MarianTokenizer's ids, checked with h5py): imported, its logits equal
#     transformers' within 1e-4 (the imported weights through the PyTorch reference forward,
#     tests/hf_parity.py), and 300 updates of fine-tuning lower the val loss;
#   - fine-tuning from it under mpirun -np 2 equals -np 1 with update_freq 2, bit for bit;
#   - the fine-tuned model exported (tools/export_hf.py): transformers' greedy generate gives our
#     translate's lines, and imported again it gives our tensors back bit for bit;
#   - the refusals: not a transformers model, another architecture or activation, a config
#     model section that disagrees, a vocabulary size or vocab.json that is not the shards' or
#     not its .spm files', data.hf_tokenizer with data.spm_model.
#   hf_import.sh BUILD_DIR PYTHON
set -uo pipefail
build=$1 python=$2
here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/../tools" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"
TRANS=$build/eval/translate
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
# An OPUS-MT-layout model: one SentencePiece model per side trained on the toy corpus's 2,000
# lines, Marian's joint vocab.json ("</s>" 0, "<unk>" 1, "<pad>" last and the decoder's start).
"$python" "$here/make_marian_model.py" marian --opus raw/train.de raw/train.en || fail "make_marian_model.py"
# The user's step: preprocess with the model's tokenizer, so that the shards' ids are the model's.
"$PRE" --config c.yaml data.hf_tokenizer=marian > pre.log 2>&1 || { cat pre.log; fail "preprocess with data.hf_tokenizer"; }
PYTHONPATH=$here "$python" - <<'PY' || fail "the shards are not MarianTokenizer's ids"
import transformers
from shard_pairs import split_pairs
tok = transformers.AutoTokenizer.from_pretrained("marian")
src, tgt = (open(f"raw/train.{l}").read().splitlines() for l in ("de", "en"))
theirs = sorted((tuple(s[:-1]), tuple(t[:-1])) for s, t in
                zip(tok(src).input_ids, tok(text_target=tgt).input_ids) if len(s) > 1 and len(t) > 1)
ours = sorted(split_pairs("shards", "train"))
assert theirs == ours, (len(theirs), len(ours), [p for p in ours if p not in set(theirs)][:3])
print(f"ok: the shards hold MarianTokenizer's ids of all {len(ours)} training pairs (source.spm, target.spm, vocab.json)")
PY
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
bad_copy novocab 'v = {"</s>": 0, "<unk>": 1, "<pad>": 2}; c["vocab_size"] = 3'
refused "a vocab.json that does not match its .spm files" "vocab.json does not match its .spm files" \
  "$PRE" --config c.yaml data.hf_tokenizer=novocab data.shard_dir=s1
bad_copy wrongsize 'c["vocab_size"] += 1'
refused "weights whose vocabulary size differs from the tokenizer's" "differs from the" \
  "$PRE" --config c.yaml data.hf_tokenizer=wrongsize data.shard_dir=s2
refused "data.hf_tokenizer with data.spm_model" "cannot be combined with data.spm_model" \
  "$PRE" --config c.yaml data.hf_tokenizer=marian data.spm_model=marian/source.spm data.shard_dir=s3
refused "a data.hf_tokenizer that does not exist" "'nope' (command line 'data.hf_tokenizer=nope'): directory does not exist" \
  "$PRE" --config c.yaml data.hf_tokenizer=nope data.shard_dir=s4
refused "a negative data.sampling_temperature" "data.sampling_temperature" \
  "$TRAIN" --config c.yaml data.sampling_temperature=-1 train.save_dir=s5
[ ! -e s1/manifest.json ] && [ ! -e s2/manifest.json ] && [ ! -e s3 ] && [ ! -e s4 ] && [ ! -e s5/last.pt ] ||
  fail "a refused preprocess or run wrote something"
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
refused "a tokenizer other than the shards'" "differ from those shards was made with" \
  "${T[@]}" train.finetune_from=swapped train.save_dir=r7
"$PRE" --config c.yaml data.vocab_size=38 data.shard_dir=shards38 > /dev/null 2>&1 || fail "preprocess with 38 pieces"
refused "shards made with another tokenizer" "pieces, the shards' 38" \
  "${T[@]}" train.finetune_from=marian data.shard_dir=shards38 train.save_dir=r8
for r in r1 r2 r3 r4 r5 r6 r7 r8; do [ ! -e "$r/last.pt" ] || fail "a refused import wrote $r/last.pt"; done

# The import itself: one update at learning rate 0 writes the imported weights as our checkpoint.
"${T[@]}" train.finetune_from=marian train.save_dir=imported > import.log 2>&1 || { tail -5 import.log; fail "import"; }
grep -q "fine-tuning from the transformers model marian" import.log || { tail -3 import.log; fail "no import line"; }
cat raw/val.de raw/test_2016_flickr.de > src.txt && cat raw/val.en raw/test_2016_flickr.en > ref.txt
"$python" "$here/hf_parity.py" logits imported/last.pt marian shards src.txt ref.txt \
  || fail "the imported model's logits are not transformers'"
echo "ok: $(grep -o 'fine-tuning from the transformers model .*' import.log)"
loss_at_import=$(grep -o 'best validation loss [0-9.]*' import.log | grep -o '[0-9.]*$')

# Fine-tuning: 300 updates from the import lower the val loss.
"$TRAIN" --config c.yaml train.finetune_from=marian train.save_dir=tuned > tuned.log 2>&1 || { tail -5 tuned.log; fail "fine-tune"; }
loss_tuned=$(grep -o 'best validation loss [0-9.]*' tuned.log | grep -o '[0-9.]*$')
"$python" -c "import sys; sys.exit(0 if float('$loss_tuned') < float('$loss_at_import') else 1)" \
  || fail "fine-tuning did not lower the val loss: $loss_at_import -> $loss_tuned"
echo "ok: 300 updates of fine-tuning from the Marian model: val loss $loss_at_import -> $loss_tuned"

# Fine-tuning from it under mpirun: -np 2 gives -np 1 at update_freq 2, bit for bit.
FT=(--config c.yaml train.finetune_from=marian train.max_updates=20 train.validate_interval_updates=20
    train.save_interval_updates=20)
"${MPIRUN[@]}" -np 2 "$TRAIN" "${FT[@]}" train.save_dir=np2 > np2.log 2>&1 || { tail -5 np2.log; fail "mpirun -np 2 fine-tune"; }
"$TRAIN" "${FT[@]}" train.update_freq=2 train.save_dir=np1 > np1.log 2>&1 || { tail -5 np1.log; fail "-np 1 fine-tune"; }
same np2/last.pt np1/last.pt

# The fine-tuned model exported (Marian's classes, the Marian vocabulary's files): transformers'
# greedy generate gives our translate's lines, and imported again it gives our tensors back.
"$python" "$tools/export_hf.py" --checkpoint tuned/last.pt --config c.yaml --output exported > export.log 2>&1 \
  || { cat export.log; fail "export the fine-tuned model"; }
"$TRANS" --config c.yaml --checkpoint tuned/last.pt --beam 1 --input src.txt > ours.greedy 2> err.txt || { cat err.txt; fail translate; }
"$python" - <<'PY' || fail "transformers does not decode the fine-tuned Marian-vocabulary model as our translate"
import torch, transformers
tok = transformers.AutoTokenizer.from_pretrained("exported")
model = transformers.AutoModelForSeq2SeqLM.from_pretrained("exported").eval()
src, ours = open("src.txt").read().splitlines(), open("ours.greedy").read().splitlines()
with torch.no_grad():
    ids = model.generate(**tok(src, padding=True, return_tensors="pt"), num_beams=1)
theirs = tok.batch_decode(ids, skip_special_tokens=True)
same = sum(a == b for a, b in zip(ours, theirs))
print(f"ok: greedy generate gives our translate --beam 1 on {same}/{len(ours)} lines")
assert same >= 0.99 * len(ours), [(a, b) for a, b in zip(ours, theirs) if a != b][:3]
PY
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
