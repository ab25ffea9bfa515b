#!/usr/bin/env bash
# data.reversed_weight / data.reversed_until_update (bidirectional training) end to end on the
# toy corpus: preprocess writes train.reversed, whose pairs h5py reads as train's with the sides
# swapped; train's own shards are unchanged by the option; training draws from both directions
# until the stage's last update and from train alone after it (metrics.jsonl's per-corpus
# tokens, read in Python); bad settings are refused before anything is written.
#   reversed_corpus_jobs.sh BUILD_DIR PYTHON
set -uo pipefail
build=$(cd "$1" && pwd) python=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"  # PRE, TRAIN, a scratch working directory, fail, derived_split_toy_job
export PYTHONPATH="$here"  # shard_pairs.py
derived_split_toy_job 40
"$PRE" --config c.yaml > /dev/null 2>&1 || fail "preprocess without the option"
"$PRE" --config c.yaml data.shard_dir=bi data.reversed_weight=1 > pre.log 2>&1 || { cat pre.log; fail "preprocess with it"; }
grep -q "train.reversed: 300 pairs in 2 shard(s)" pre.log || { cat pre.log; fail "no train.reversed split of 300 pairs"; }
for f in plain/*.h5; do cmp -s "$f" "bi/${f#plain/}" || fail "$f: train's own shards changed with data.reversed_weight"; done
"$python" - <<'PY' || fail "train.reversed against train, by h5py"
import json
from shard_pairs import split_pairs
def pairs(split):
    src, tgt = zip(*split_pairs("bi", split))
    return list(src), list(tgt)
fs, ft = pairs("train")
rs, rt = pairs("train.reversed")
assert len(fs) == 300 and rs == ft and rt == fs, (len(fs), len(rs))
assert json.load(open("bi/manifest.json"))["splits"]["train.reversed"]["examples"] == 300
print("ok: h5py reads train.reversed as train's 300 pairs with the sides swapped")
PY
"$TRAIN" --config c.yaml data.shard_dir=bi data.reversed_weight=1 data.reversed_until_update=15 > train.log 2>&1 ||
  { cat train.log; fail "train with the reversed stage"; }
grep -q "training corpora: train (300 pairs, weight 1: 50.0% of micro-batches), train.reversed (300 pairs, weight 1: 50.0% of micro-batches); from update 16 on, the reversed splits' weight is 0" train.log ||
  { grep corpora train.log; fail "the start line"; }
"$python" - <<'PY' || fail "per-corpus tokens in metrics.jsonl"
import json
recs = [json.loads(l) for l in open("run/metrics.jsonl") if '"event":"train"' in l]
assert [r["update"] for r in recs] == list(range(1, 41)), [r["update"] for r in recs]
before = [r["corpus_tgt_tokens"]["train.reversed"] for r in recs if r["update"] <= 15]
after = [r["corpus_tgt_tokens"]["train.reversed"] for r in recs if r["update"] > 15]
assert sum(before) > 0 and 0 < sum(1 for t in before if t) < 15, before
assert after == [0] * 25, after
print(f"ok: {sum(1 for t in before if t)} of updates 1-15 drew train.reversed, none of updates 16-40")
PY
# Bad settings: refused with one message, nothing written.
err=$("$TRAIN" --config c.yaml data.shard_dir=bi data.reversed_until_update=5 2>&1); rc=$?
[ $rc = 2 ] && grep -q "data.reversed_until_update' = '5'.*needs data.reversed_weight > 0" <<<"$err" ||
  fail "reversed_until_update without reversed_weight: exit $rc: $err"
err=$("$TRAIN" --config c.yaml train.save_dir=run2 data.reversed_weight=1 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "train.reversed" <<<"$err" && [ ! -e run2/last.pt ] ||
  fail "reversed_weight on shards made without it: exit $rc: $err"
cp raw/train.de raw/train.reversed.de; cp raw/train.en raw/train.reversed.en
err=$("$PRE" --config c.yaml data.shard_dir=bad data.reversed_weight=1 2>&1); rc=$?
[ $rc = 2 ] && grep -q "raw/train.reversed.de: a raw split has the name of training corpus 'train''s reversed split" <<<"$err" &&
  [ ! -e bad/manifest.json ] || fail "a raw split named like the reversed one: exit $rc: $err"
echo "ok: refusals (no weight, shards without the split, a raw split of its name)"
echo PASS
