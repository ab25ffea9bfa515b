#!/usr/bin/env bash
# Averaging by validation: `train.keep_best N` keeps the checkpoints of the N validations with
# the lowest loss (valid_<N>.pt off the save interval, update_<N>.pt on it) beside keep_last's
# newest periodic files, and leaves `average --last` as it is without it; and `average --best N RUN_DIR` averages
# exactly those. The expected files come from metrics.jsonl, read here in Python; the
# average must be byte-identical to `average` given the same files by hand; a resumed run
# keeps the same files as an uninterrupted one; and each bad input is refused, naming it,
# with the output left alone.
#   keep_best_jobs.sh BUILD_DIR PYTHON
set -uo pipefail
build=$(cd "$1" && pwd) python=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"  # PRE, TRAIN, a scratch working directory, fail
AVG=$build/trainer/average
expect_error() {
  local what=$1 needle=$2; shift 2
  if "$@" > out.txt 2> err.txt; then fail "$what: exit 0"; fi
  grep -qF -- "$needle" err.txt || { cat err.txt; fail "$what: message lacks '$needle'"; }
  echo "ok: $what -> $(head -1 err.txt | head -c 240)"
}

"$python" "$here/make_toy_corpus.py" raw
# A learning rate that rises to 0.2 over the whole run (a warmup of all 110 updates): on the toy
# corpus the validation loss bottoms out near update 40 and ends far above its best (checked
# with both GEMM libraries and both attention kernels: the end is 0.9-1.1 above the best), so
# the best validations are neither the first nor the newest whatever the CPU's rounding. (A
# constant-ish 0.03 rose on some CPUs and kept falling on others.)
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 2, max_tokens: 300}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0}
schedule: {type: inverse_sqrt, lr: 0.2, warmup_updates: 110}
train: {max_updates: 110, threads: 1, log_interval: 50, validate_interval_updates: 5, save_interval_updates: 20, keep_last: 1, keep_best: 3, save_dir: run, tensorboard: false}
YAML
"$PRE" --config c.yaml > /dev/null 2>&1 || fail preprocess
"$TRAIN" --config c.yaml 2> train.err || { cat train.err; fail train; }

# Expected: the 3 lowest validation losses of metrics.jsonl (ties: the later update), plus the newest.
expected=$("$python" - <<'PY'
import json
recs = [json.loads(l) for l in open("run/metrics.jsonl") if '"event":"valid"' in l]
by_update = {r["update"]: r["valid_loss"] for r in recs}
best = sorted(by_update, key=lambda u: (by_update[u], -u))[:3]
newest = max(by_update)
assert newest not in best, f"the toy run's newest validation is among the best: {best}; the test needs a rise"
assert min(by_update) not in best, best
# A validation on the save interval (20) is held by its periodic update_<N>.pt, one off it by
# valid_<N>.pt; keep_last 1 keeps the newest periodic file, update_100 (110 is off the interval).
name = lambda u: f"update_{u}.pt" if u % 20 == 0 else f"valid_{u}.pt"
assert newest % 20 != 0, newest
print(" ".join(name(u) for u in sorted(set(best) | {newest // 20 * 20})))
PY
) || fail "reading metrics.jsonl"
kept_files() { (cd "$1" && ls update_*.pt valid_*.pt 2> /dev/null | sort -t_ -k2 -n | tr '\n' ' ' | sed 's/ $//'); }
kept=$(kept_files run)
[ "$kept" = "$expected" ] || fail "kept '$kept', expected '$expected' (keep_best 3 + keep_last 1)"
echo "ok: keep_best 3 + keep_last 1 kept exactly $kept"

# average --best 3 == average of the same three files named by hand, byte for byte.
best3=$(echo "$expected" | tr ' ' '\n' | head -3 | sed 's|^|run/|')
"$AVG" --output by_hand.pt $best3 2> /dev/null || fail "average by hand"
"$AVG" --output by_val.pt --best 3 run 2> avg.err || { cat avg.err; fail "average --best 3"; }
cmp by_hand.pt by_val.pt || fail "average --best 3 differs from averaging $best3"
echo "ok: average --best 3 == average $(echo $best3)"

# Interrupted at update 100, after the three best validations, and resumed: the resumed
# process must rank them from the checkpoint's history to keep the same files.
sed -e 's/save_dir: run/save_dir: run2/' c.yaml > r.yaml
"$TRAIN" --config r.yaml train.max_updates=100 2> /dev/null || fail "first part"
"$TRAIN" --config r.yaml --resume auto 2> /dev/null || fail "resumed part"
kept2=$(kept_files run2)
[ "$kept2" = "$kept" ] || fail "resumed run kept '$kept2', uninterrupted '$kept'"
echo "ok: a resumed run keeps the same checkpoints ($kept2)"

# keep_best changes no last-N average: the same run without it keeps the same newest periodic
# files (keep_last 3), and `average --last 3` of each averages the same updates.
sed -e 's/save_dir: run/save_dir: run_kl3/' c.yaml > k.yaml
"$TRAIN" --config k.yaml train.keep_last=3 2> /dev/null || fail "keep_last 3 with keep_best 3"
"$TRAIN" --config k.yaml train.keep_last=3 train.keep_best=0 train.save_dir=run_nobest 2> /dev/null || fail "keep_last 3 alone"
newest3() { (cd "$1" && ls update_*.pt | sort -t_ -k2 -n | tail -3 | tr '\n' ' '); }
[ "$(newest3 run_kl3)" = "$(newest3 run_nobest)" ] || fail "newest periodic files: '$(newest3 run_kl3)' with keep_best, '$(newest3 run_nobest)' without"
[ "$(newest3 run_nobest)" = "update_60.pt update_80.pt update_100.pt " ] || fail "without keep_best: '$(newest3 run_nobest)'"
for d in run_kl3 run_nobest; do
  "$AVG" --output "$d.avg.pt" --last 3 "$d" 2> "$d.avg.err" || { cat "$d.avg.err"; fail "average --last 3 $d"; }
  grep -qF "from 3 checkpoints (last: update 100)" "$d.avg.err" || { cat "$d.avg.err"; fail "average --last 3 $d"; }
done
"$python" - <<'PY' || fail "average --last 3 differs with keep_best"
import torch
a, b = (torch.load(f"{d}.avg.pt", weights_only=True)["model"] for d in ("run_kl3", "run_nobest"))
assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), "weights differ"
PY
echo "ok: keep_best leaves average --last 3 as it is without it ($(newest3 run_nobest))"

# Bad input: each refused, the existing output untouched.
echo keep > out.pt
expect_error "--best beyond what was kept" "train with train.keep_best >= 5" "$AVG" --output out.pt --best 5 run
expect_error "--best beyond the validations" "asked for the 1000 best validations, the run has 22" \
  "$AVG" --output out.pt --best 1000 run
expect_error "--best with --last" "excludes" "$AVG" --output out.pt --best 2 --last 2 run
expect_error "--best with two directories" "--best takes exactly one run directory" "$AVG" --output out.pt --best 2 run run2
mkdir empty
expect_error "--best without last.pt" "empty/last.pt: not found" "$AVG" --output out.pt --best 2 empty
expect_error "--best 0" "Value 0 not in range 1 to 1000000" "$AVG" --output out.pt --best 0 run
expect_error "train.keep_best negative" "train.keep_best" "$TRAIN" --config c.yaml train.keep_best=-1
[ "$(cat out.pt)" = keep ] || fail "a refused average changed the existing output"
echo "ok: refusals left out.pt alone"
echo PASS
