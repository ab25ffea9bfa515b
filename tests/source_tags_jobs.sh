#!/usr/bin/env bash
# data.source_tags (tagged back-translation, data/source_tags.h) end to end on the toy corpus:
# preprocess makes the tag a control symbol of the vocabulary; every source of the tagged corpus
# starts with the tag's id, which appears nowhere else (not in the other corpus, not in val or
# test) and which Python's SentencePiece never produces from text, "<BT>" written in a sentence
# included, and the rest of each tagged source is Python's SentencePiece encoding of its raw line;
# training on the mixture runs and translate never emits the tag. Bad tags (a
# corpus that is not a training corpus, a tag that is an ordinary piece of a reused vocabulary,
# one missing from it, a special symbol) are refused with exit 2 before anything is written.
#   source_tags_jobs.sh BUILD_DIR PYTHON
set -uo pipefail
build=$(cd "$1" && pwd) python=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"  # PRE, TRAIN, a scratch working directory, fail
export PYTHONPATH="$here"  # shard_pairs.py
"$python" "$here/make_toy_corpus.py" raw 300
# The "synthetic" corpus: the toy generator's first 200 pairs again, one with "<BT>" written in its source.
"$python" "$here/make_toy_corpus.py" other 200
cp other/train.de raw/bt.de && cp other/train.en raw/bt.en
sed -i '1s/^/<BT> /' raw/bt.de
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: tagged, vocab_size: 40, num_shards: 1, max_tokens: 200,
       train_corpora: {train: 1, bt: 1}, source_tags: {bt: "<BT>"}}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0}
schedule: {lr: 0.005, warmup_updates: 10}
train: {max_updates: 30, threads: 1, validate_interval_updates: 30, save_dir: run, tensorboard: false}
eval: {beam: 2}
YAML
"$PRE" --config c.yaml > pre.log 2>&1 || { cat pre.log; fail "preprocess with a tag"; }
"$PRE" --config c.yaml data.shard_dir=plain 'data.source_tags={}' > /dev/null 2>&1 || fail "preprocess without"
"$python" - <<'PY' || fail "the tag in the shards, by h5py and Python's SentencePiece"
import sentencepiece as spm
from shard_pairs import split_pairs as pairs
sp = spm.SentencePieceProcessor(model_file="tagged/spm.model")
tag = sp.piece_to_id("<BT>")
assert tag != sp.unk_id() and sp.is_control(tag), ("the tag is not a control symbol", tag)
bt, train = pairs("tagged", "bt"), pairs("tagged", "train")
assert len(bt) == 200 and len(train) == 300, (len(bt), len(train))
assert all(s[0] == tag and tag not in s[1:] and tag not in t for s, t in bt), "a bt source without its one tag"
for split in ("train", "val", "test_2016_flickr"):
    assert not any(tag in s or tag in t for s, t in pairs("tagged", split)), f"the tag in {split}"
raw = {lang: open(f"raw/bt.{lang}", encoding="utf-8").read().splitlines() for lang in ("de", "en")}
for (s, t), src, tgt in zip(bt, raw["de"], raw["en"]):
    assert list(s[1:]) == sp.encode(src) and list(t) == sp.encode(tgt), (src, s)
assert "<BT>" in raw["de"][0] and tag not in sp.encode(raw["de"][0]), "text '<BT>' encoded to the tag"
print(f"ok: <BT> is control symbol {tag}; each of bt's 200 sources starts with it, once; nowhere else; "
      f"text '<BT>' encodes as {sp.encode_as_pieces('<BT>')}")
PY
[ $? = 0 ] || exit 1
"$TRAIN" --config c.yaml > train.log 2>&1 || { tail train.log; fail "train on the tagged mixture"; }
head -n 20 raw/val.de > src.de
echo "<BT> ein Hund läuft ." >> src.de
"$build/eval/translate" --config c.yaml --checkpoint run/last.pt --input src.de --nbest 2 > out.txt ||
  fail "translate the tagged model"
"$python" - <<'PY' || fail "the tag emitted"
import sentencepiece as spm
sp = spm.SentencePieceProcessor(model_file="tagged/spm.model")
lines = open("out.txt", encoding="utf-8").read().splitlines()
assert len(lines) == 42, len(lines)
assert not any("<BT>" in l for l in lines), "a translation holds the tag's text"
print("ok: translate's 42 n-best lines hold no tag")
PY
[ $? = 0 ] || exit 1
refuse() {  # refuse WHAT PATTERN ARGS...: preprocess must exit 2 with PATTERN, writing nothing
  local what=$1 pattern=$2; shift 2
  "$PRE" --config c.yaml data.shard_dir=refused "$@" > err.txt 2>&1; local rc=$?
  [ $rc = 2 ] && grep -q -- "$pattern" err.txt && [ ! -e refused/manifest.json ] ||
    { cat err.txt; fail "$what: exit $rc"; }
  echo "ok: $what refused: $(grep error err.txt | head -c 230)"
}
refuse "a tag on a corpus that is not trained on" "corpus 'val' is not in data.train_corpora" \
  'data.source_tags={bt: "<BT>", val: "<V>"}'
refuse "a tag that is an ordinary piece of the reused vocabulary" "'.' is an ordinary piece of the SentencePiece model" \
  data.spm_model=tagged/spm.model 'data.source_tags={bt: "."}'
refuse "a tag the reused vocabulary lacks" "'<FT>' is not a symbol of the SentencePiece model" \
  data.spm_model=plain/spm.model 'data.source_tags={bt: "<FT>"}'
refuse "a special symbol as tag" "is the special symbol </s>" 'data.source_tags={bt: "</s>"}'
refuse "a tag with a space" "without spaces" 'data.source_tags={bt: "<B T>"}'
echo "PASS source tags"
