#!/usr/bin/env bash
# data.subword_samples end to end on the toy corpus: preprocess writes train.sample<k> splits that
# Python's SentencePiece and h5py confirm (check_subword_samples.py); the shards are the same for
# 1 and 2 workers, train's own shards are unchanged by the option; training reads the samples as
# corpora sharing train's weight; bad settings are refused before anything is written.
#   subword_sampling_jobs.sh BUILD_DIR PYTHON
set -uo pipefail
build=$1 python=$2
PRE=$build/data/preprocess TRAIN=$build/trainer/train
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
"$python" "$here/make_toy_corpus.py" raw 300
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: plain, vocab_size: 40, num_shards: 2, max_tokens: 300}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1}
train: {max_updates: 6, threads: 1, log_interval: 2, validate_interval_updates: 6, save_dir: run}
YAML
sw=(data.subword_samples=3 data.subword_nbest=8 data.subword_alpha=0.2)
"$PRE" --config c.yaml > /dev/null 2>&1 || fail "preprocess without samples"
"$PRE" --config c.yaml data.shard_dir=sw1 data.workers=1 "${sw[@]}" > pre.log 2>&1 || { cat pre.log; fail "preprocess with samples"; }
"$PRE" --config c.yaml data.shard_dir=sw2 data.workers=2 "${sw[@]}" > /dev/null 2>&1 || fail "preprocess with samples, 2 workers"
grep -q "train.sample3: 300 pairs in 2 shard(s)" pre.log || { cat pre.log; fail "no train.sample3 split of 300 pairs"; }
for f in sw1/*.h5; do cmp -s "$f" "sw2/${f#sw1/}" || fail "$f differs between 1 and 2 workers"; done
echo "ok: the same shards for 1 and 2 workers"
for f in plain/*.h5; do cmp -s "$f" "sw1/${f#plain/}" || fail "$f: train's own shards changed with data.subword_samples"; done
echo "ok: the best segmentation's shards are unchanged by the option"
"$python" "$here/check_subword_samples.py" sw1 raw 3 8 0.2 || fail "the samples against Python's SentencePiece"
"$TRAIN" --config c.yaml data.shard_dir=sw1 "${sw[@]}" > train.log 2>&1 || { cat train.log; fail "train on the samples"; }
grep -q "training corpora: train (300 pairs, weight 0.25: 25.0% of micro-batches), train.sample1 (300 pairs, weight 0.25" train.log ||
  { grep "corpora" train.log; fail "the start line does not list the samples sharing train's weight"; }
echo "ok: training draws from train and its 3 samples, a quarter each"
# Bad settings: refused with one message, nothing written.
err=$("$PRE" --config c.yaml data.shard_dir=bad data.spm_model_type=bpe data.subword_samples=2 2>&1); rc=$?
[ $rc = 2 ] && grep -q "data.subword_samples.*needs data.spm_model_type: unigram" <<<"$err" && [ ! -e bad ] ||
  fail "bpe with samples: exit $rc: $err"
cp raw/train.de raw/train.sample1.de; cp raw/train.en raw/train.sample1.en
err=$("$PRE" --config c.yaml data.shard_dir=bad "${sw[@]}" 2>&1); rc=$?
[ $rc = 2 ] && grep -q "raw/train.sample1.de: a raw split has the name of training corpus 'train''s sampled segmentation 1" <<<"$err" &&
  [ ! -e bad/manifest.json ] || fail "a raw split named like a sample: exit $rc: $err"
echo "ok: bpe with samples, and a raw split named like a sample, refused before anything is written"
