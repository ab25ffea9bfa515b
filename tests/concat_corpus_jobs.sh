#!/usr/bin/env bash
# data.concat_weight (concatenation augmentation) end to end on the toy corpus: preprocess writes
# train.concat, whose pairs h5py reads as train's pairs each followed by another pair of train,
# every pair once in second place, and whose ids Python's SentencePiece gives for the two raw
# lines joined by a space; the shards are the same for 1 and 2 workers and train's own are
# unchanged; a joined pair over data.max_len goes in alone; training draws from both (the start
# line and metrics.jsonl's per-corpus tokens); with two blocks (8,193 lines) pairs join within
# their block and a block's only pair goes in alone; bad settings (shards without the split, a
# negative weight, a raw split of its name, SentencePiece models that do not encode each word
# alone) are refused with exit 2 before anything is written.
#   concat_corpus_jobs.sh BUILD_DIR PYTHON
set -uo pipefail
build=$(cd "$1" && pwd) python=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"  # PRE, TRAIN, a scratch working directory, fail, derived_split_toy_job
export PYTHONPATH="$here"  # shard_pairs.py
derived_split_toy_job 20
"$PRE" --config c.yaml > /dev/null 2>&1 || fail "preprocess without the option"
"$PRE" --config c.yaml data.shard_dir=cat1 data.workers=1 data.concat_weight=1 > pre.log 2>&1 || { cat pre.log; fail "preprocess with it"; }
"$PRE" --config c.yaml data.shard_dir=cat2 data.workers=2 data.concat_weight=0.5 > /dev/null 2>&1 || fail "preprocess with it, 2 workers"
grep -q "train.concat: 300 pairs in 2 shard(s)" pre.log || { cat pre.log; fail "no train.concat split of 300 pairs"; }
for f in cat1/*.h5; do cmp -s "$f" "cat2/${f#cat1/}" || fail "$f differs between 1 and 2 workers (or weights)"; done
for f in plain/*.h5; do cmp -s "$f" "cat1/${f#plain/}" || fail "$f: train's own shards changed with data.concat_weight"; done
echo "ok: the same shards for 1 and 2 workers; train's own unchanged"
"$PRE" --config c.yaml data.shard_dir=short data.max_len=40 data.concat_weight=1 > /dev/null 2>&1 || fail "preprocess with max_len 40"
"$python" - <<'PY' || fail "train.concat against train, by h5py and Python's SentencePiece"
import collections, sentencepiece as spm
from shard_pairs import split_pairs as pairs
train, joined = pairs("cat1", "train"), pairs("cat1", "train.concat")
assert len(train) == len(joined) == 300, (len(train), len(joined))
rest = []
for (s, t), (js, jt) in zip(train, joined):
    assert js[:len(s)] == s and jt[:len(t)] == t, "a joined pair does not start with its own pair"
    rest.append((js[len(s):], jt[len(t):]))
assert collections.Counter(rest) == collections.Counter(train), "the second halves are not train's pairs, each once"
count = collections.Counter(train)
assert all(count[p] > 1 for p, r in zip(train, rest) if r == p), "a pair joined to itself"
sp = spm.SentencePieceProcessor(model_file="cat1/spm.model")
raw = {lang: open(f"raw/train.{lang}", encoding="utf-8").read().splitlines() for lang in ("de", "en")}
where = collections.defaultdict(list)
for i, p in enumerate(train): where[p].append(i)
for i, r in enumerate(rest):
    j = where[r][0]  # any raw line with those ids: duplicates have the same text
    for lang, side in (("de", 0), ("en", 1)):
        assert tuple(sp.encode(raw[lang][i] + " " + raw[lang][j])) == joined[i][side], (i, j, lang)
print("ok: train.concat is train's 300 pairs each joined to another (each once second), as SentencePiece encodes the joined lines")
train, joined = pairs("short", "train"), pairs("short", "train.concat")
alone = sum(1 for p, q in zip(train, joined) if p == q)
assert len(train) == len(joined) and 0 < alone < len(train), (len(train), alone)
assert all(len(q[0]) <= 40 and len(q[1]) <= 40 for q in joined)
print(f"ok: max_len 40: {alone} of {len(train)} pairs alone, the rest joined within 40 pieces")
PY
"$TRAIN" --config c.yaml data.shard_dir=cat1 data.concat_weight=1 > train.log 2>&1 || { cat train.log; fail "train with train.concat"; }
grep -q "training corpora: train (300 pairs, weight 1: 50.0% of micro-batches), train.concat (300 pairs, weight 1: 50.0% of micro-batches)" train.log ||
  { grep corpora train.log; fail "the start line"; }
"$python" - <<'PY' || fail "per-corpus tokens in metrics.jsonl"
import json
recs = [json.loads(l) for l in open("run/metrics.jsonl") if '"event":"train"' in l]
drew = sum(1 for r in recs if r["corpus_tgt_tokens"]["train.concat"] > 0)
assert len(recs) == 20 and 0 < drew < 20, (len(recs), drew)
print(f"ok: {drew} of 20 updates drew train.concat")
PY
# Bad settings: refused with one message, nothing written.
err=$("$TRAIN" --config c.yaml train.save_dir=run2 data.concat_weight=1 2>&1); rc=$?
[ $rc = 2 ] && grep -q "no split 'train.concat' (field 'splits'); preprocess writes it under data.concat_weight" <<<"$err" &&
  [ ! -e run2/last.pt ] || fail "concat_weight on shards made without it: exit $rc: $err"
err=$("$PRE" --config c.yaml data.shard_dir=neg data.concat_weight=-1 2>&1); rc=$?
[ $rc = 2 ] && grep -q "data.concat_weight" <<<"$err" && [ ! -e neg ] || fail "a negative weight: exit $rc: $err"
cp raw/train.de raw/train.concat.de; cp raw/train.en raw/train.concat.en
err=$("$PRE" --config c.yaml data.shard_dir=bad data.concat_weight=1 2>&1); rc=$?
[ $rc = 2 ] && grep -q "raw/train.concat.de: a raw split has the name of training corpus 'train''s joined split" <<<"$err" &&
  [ ! -e bad/manifest.json ] || fail "a raw split named like the joined one: exit $rc: $err"
rm raw/train.concat.de raw/train.concat.en
# SentencePiece models that do not encode each word alone: joining two lines' ids would not be
# the encoding of the joined lines, so preprocess refuses them under data.concat_weight only.
"$python" - <<'PY' || fail "SentencePiece models without split_by_whitespace or add_dummy_prefix"
import sentencepiece as spm
for name, option in (("nodummy", "add_dummy_prefix"), ("nosplit", "split_by_whitespace")):
    spm.SentencePieceTrainer.train(input="raw/train.de,raw/train.en", model_prefix=name, vocab_size=40, pad_id=0,
                                   unk_id=1, bos_id=2, eos_id=3, minloglevel=2, **{option: False})
sp = spm.SentencePieceProcessor(model_file="nosplit.model")
assert any("\u2581" in sp.id_to_piece(i)[1:] for i in range(sp.get_piece_size())), "no piece spans two words"
assert spm.SentencePieceProcessor(model_file="nodummy.model").encode("b", out_type=str) == ["b"]
PY
for m in nodummy nosplit; do
  err=$("$PRE" --config c.yaml data.shard_dir=$m data.spm_model=$m.model data.concat_weight=1 2>&1); rc=$?
  [ $rc = 2 ] && grep -q "$m.model: data.concat_weight joins two lines' pieces, which needs a model that encodes each word alone" \
    <<<"$err" && [ ! -e $m/manifest.json ] || fail "the $m model with data.concat_weight: exit $rc: $err"
  "$PRE" --config c.yaml data.shard_dir=$m data.spm_model=$m.model > /dev/null 2>&1 || fail "the $m model without it"
done
echo "ok: refusals (shards without the split, a negative weight, a raw split of its name, 2 models)"
# Two blocks of preprocessing (8,192 lines each): the 8,193rd pair is its block's only one and
# goes in alone; the first block's pairs are joined among themselves, each once second.
"$python" "$here/make_toy_corpus.py" big 8193
"$PRE" --config c.yaml data.raw_dir=big data.shard_dir=big_cat data.concat_weight=1 > big.log 2>&1 || { cat big.log; fail "preprocess 8,193 lines"; }
grep -q "train.concat: 8193 pairs in 2 shard(s); skipped 0 with an empty side, 0 longer than max_len 250; 1 alone" big.log ||
  { cat big.log; fail "the log line of two blocks' train.concat"; }
"$python" - <<'PY' || fail "two blocks' train.concat against train"
import collections
from shard_pairs import split_pairs
train, joined = split_pairs("big_cat", "train"), split_pairs("big_cat", "train.concat")
assert len(train) == len(joined) == 8193 and joined[8192] == train[8192], "the last block's only pair is not alone"
rest = [(js[len(s):], jt[len(t):]) for (s, t), (js, jt) in zip(train[:8192], joined[:8192])]
assert all(js[:len(s)] == s and jt[:len(t)] == t for (s, t), (js, jt) in zip(train, joined))
assert collections.Counter(rest) == collections.Counter(train[:8192]), "block 0's second halves are not block 0's pairs"
print("ok: 2 blocks: block 0 joined within itself, each pair once second; block 1's only pair alone")
PY
echo PASS
