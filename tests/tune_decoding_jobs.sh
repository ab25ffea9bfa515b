#!/usr/bin/env bash
# tools/tune_decoding.py on a finished toy sweep point: every row of its grid is checked against
# sacreBLEU run here on the row's hypotheses and against `evaluate` run by hand on an average
# made by hand; the bold row is the grid's highest BLEU; an ensemble decodes as evaluate does by
# hand; candidates' means are their columns' mean; a rerun scores nothing again; and bad input
# is refused (exit 2, one line, nothing written).
#   tune_decoding_jobs.sh BUILD_DIR PYTHON
set -uo pipefail
build=$(cd "$1" && pwd) python=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"
AVG=$build/trainer/average
TUNE=("$python" "$root/tools/tune_decoding.py" --build "$build")
expect_refusal() {  # expect_refusal WHAT NEEDLE ARGS...: exit 2, the needle, no decoding/ written
  local what=$1 needle=$2; shift 2
  "${TUNE[@]}" "$@" > out.txt 2> err.txt; local rc=$?
  [ $rc -eq 2 ] || { cat err.txt; fail "$what: exit $rc, expected 2"; }
  grep -qF -- "$needle" err.txt || { cat err.txt; fail "$what: message lacks '$needle'"; }
  [ "$(wc -l < err.txt)" -eq 1 ] || { cat err.txt; fail "$what: more than one line"; }
  [ ! -e sw/a/decoding ] || fail "$what: wrote sw/a/decoding"
  ! compgen -G 'sw/*+*' > /dev/null || fail "$what: wrote an ensemble's directory"
  echo "ok: $what -> $(cat err.txt)"
}

"$python" "$here/make_toy_corpus.py" raw
# keep_best_jobs.sh's run: its validation loss rises before the end, so the 2 best
# validations (updates 100, 105) are not the newest 2 (105, 110).
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 2, max_tokens: 300}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0}
schedule: {type: inverse_sqrt, lr: 0.03, warmup_updates: 5}
train: {threads: 1, log_interval: 50, validate_interval_updates: 5, save_interval_updates: 20, keep_last: 2, tensorboard: false}
YAML
"$PRE" --config c.yaml > /dev/null 2>&1 || fail preprocess
cat > s.sweep <<'EOF2'
config c.yaml
point a train.max_updates=110 train.keep_best=2
point a2 train.max_updates=110 train.keep_best=2 train.seed=2
EOF2
"$python" "$root/tools/sweep.py" --build "$build" s.sweep --out sw > sweep.log 2>&1 || { cat sweep.log; fail sweep; }

# Refusals first, while sw/a/decoding does not exist.
expect_refusal "an unknown point" "no point 'zz' (points: a, a2)" s.sweep zz --out sw
expect_refusal "an unknown member" "no point 'zz' (points: a, a2)" s.sweep a+zz --out sw
expect_refusal "a member named twice" "a+a2+a: point 'a' is named twice" s.sweep a+a2+a --out sw
expect_refusal "a candidate named twice" "a,a2,a: candidate 'a' is named twice" s.sweep a,a2,a --out sw
expect_refusal "an unknown candidate" "no point 'zz' (points: a, a2)" s.sweep a,zz --out sw
expect_refusal "--checkpoints last1" "--checkpoints: 'last1' is none of" s.sweep a --out sw --checkpoints last1
expect_refusal "--checkpoints bogus" "--checkpoints: 'bogus' is none of" s.sweep a --out sw --checkpoints last2,bogus
expect_refusal "--beams 0" "--beams: '0' is not a int >= 1" s.sweep a --out sw --beams 0
expect_refusal "--lenpens x" "--lenpens: 'x' is not a float >= 0.0" s.sweep a --out sw --lenpens 1,x
expect_refusal "--lenpens nan" "--lenpens: 'nan' is not a float >= 0.0" s.sweep a --out sw --lenpens nan
expect_refusal "last3 beyond keep_last 2 under keep_best" "--checkpoints last3 needs train.keep_last >= 3 (or 0)" \
  s.sweep a --out sw --checkpoints last3
expect_refusal "best3 beyond keep_best 2" "--checkpoints best3 needs train.keep_best >= 3" s.sweep a --out sw --checkpoints best3
cp sw/a/result.json result.keep
for bad in '[1]' '{}' '{"config": "c.yaml", "overrides": [], "finished": 5}'; do
  echo "$bad" > sw/a/result.json
  expect_refusal "result.json $bad" "sw/a/result.json: unreadable" s.sweep a --out sw
done
mv result.keep sw/a/result.json
printf 'point b train.max_updates=10\n' >> s.sweep
expect_refusal "a point not finished" "point 'b': not finished in sw/b" s.sweep b --out sw
expect_refusal "a member not finished" "point 'b': not finished in sw/b" s.sweep a+b --out sw --checkpoints last2
printf 'point w train.max_updates=110 model.d_model=16\n' >> s.sweep
expect_refusal "members of other shapes" "ensemble a+w: point 'w' has model.d_model=16 where 'a' has 32" s.sweep a+w --out sw --checkpoints last2

# The grid: 4 checkpoints x 2 beams x 2 length penalties.
"${TUNE[@]}" s.sweep a --out sw --checkpoints last2,best2,best,last --beams 1,3 --lenpens 1.0,1.6 > table.md 2> tune.log ||
  { cat tune.log; fail "tune_decoding"; }
[ "$(grep -c '^| [*a-z]' table.md)" -eq 17 ] || { cat table.md; fail "table: expected a header and 16 rows"; }
cmp table.md sw/a/decoding/table.md || fail "printed table differs from sw/a/decoding/table.md"
"$python" - <<'PY' || fail "the table against sacreBLEU"
import re, sacrebleu
ref = open("raw/val.en").read().splitlines()
rows = [l.strip("|\n").split("|") for l in open("table.md") if re.match(r"\| \**(last|best)", l)]
scores = []
for cells in rows:
    ck, beam, lp, bleu = (c.strip().strip("*") for c in cells[:4])
    hyp = open(f"sw/a/decoding/{ck}_b{beam}_lp{float(lp):g}.hyp").read().splitlines()
    theirs = sacrebleu.corpus_bleu(hyp, [ref]).score
    assert f"{theirs:.2f}" == bleu, (ck, beam, lp, bleu, theirs)
    scores.append((float(bleu), cells))
bold = [c for c in rows if c[0].strip().startswith("**")]
assert len(bold) == 1 and float(bold[0][3].strip().strip("*")) == max(s for s, _ in scores), bold
print(f"ok: 16 rows equal sacreBLEU on their hypotheses; the bold row is the highest ({max(s for s, _ in scores):.2f})")
PY
# Row 'best2 beam 3 lenpen 1.6' by hand: the 2 best validations averaged, then evaluate.
"$AVG" --output by_hand.pt --best 2 sw/a 2> /dev/null || fail "average --best 2 by hand"
"$EVAL" --config c.yaml train.max_updates=110 train.keep_best=2 --checkpoint by_hand.pt --split val --beam 3 --lenpen 1.6 \
  --output by_hand.hyp > by_hand.out 2> /dev/null || fail "evaluate by hand"
cmp by_hand.hyp sw/a/decoding/best2_b3_lp1.6.hyp || fail "best2 beam 3 lenpen 1.6 differs from evaluate by hand"
score=$(head -1 by_hand.out | awk '{print $3}')
grep -q "^| \**best2\** | \**3\** | \**1.6\** | \**$score\**" table.md || { cat table.md by_hand.out; fail "by-hand BLEU $score not in the row"; }
cmp -s sw/a/decoding/best2_b3_lp1.6.hyp sw/a/decoding/last2_b3_lp1.6.hyp && fail "best2 and last2 decode alike: the test lost its point"
echo "ok: the row best2 / beam 3 / lenpen 1.6 equals average --best 2 + evaluate by hand (BLEU $score), and differs from last2"

# The ensemble a+a2: each member's last 2 averaged and decoded together, as by hand.
"${TUNE[@]}" s.sweep a+a2 --out sw --checkpoints last2 --beams 3 --lenpens 1.0 > ens.md 2> ens.log ||
  { cat ens.log; fail "tune_decoding of the ensemble a+a2"; }
[ "$(grep -c '^| \**last2' ens.md)" -eq 1 ] || { cat ens.md; fail "ensemble table: expected 1 row"; }
"$AVG" --output e1.pt --last 2 sw/a 2> /dev/null && "$AVG" --output e2.pt --last 2 sw/a2 2> /dev/null || fail "averages by hand"
"$EVAL" --config c.yaml train.max_updates=110 train.keep_best=2 --checkpoint e1.pt --checkpoint e2.pt --split val --beam 3 \
  --lenpen 1.0 --output e.hyp > e.out 2> /dev/null || fail "evaluate of the ensemble by hand"
cmp e.hyp "sw/a+a2/decoding/last2_b3_lp1.hyp" || fail "the ensemble's hypotheses differ from evaluate's with both averages"
cmp -s e.hyp sw/a/decoding/last2_b3_lp1.hyp && fail "the ensemble decodes as a alone: the test lost its point"
score=$(head -1 e.out | awk '{print $3}')
grep -q "^| \**last2\** | \**3\** | \**1\** | \**$score\**" ens.md || { cat ens.md e.out; fail "by-hand ensemble BLEU $score not in the row"; }
echo "ok: the ensemble a+a2 (last2, beam 3, lenpen 1) equals average + evaluate with both members by hand (BLEU $score)"

# Candidates a,a2 (two seeds): each tuned alone on one grid, one table of their BLEU and the mean.
"${TUNE[@]}" s.sweep a,a2 --out sw --checkpoints last2 --beams 1,3 --lenpens 1.0 > means.md 2> means.log ||
  { cat means.log; fail "tune_decoding of the candidates a,a2"; }
"$python" - <<'PY' || { cat means.md; fail "the candidates' table against sacreBLEU and their mean"; }
import re, sacrebleu
ref = open("raw/val.en").read().splitlines()
rows = [[c.strip().strip("*") for c in l.strip("|\n").split("|")] for l in open("means.md") if re.match(r"\| \**last2", l)]
assert len(rows) == 2, rows
means = []
for ck, beam, lp, a, a2, mean, _ in rows:
    theirs = [sacrebleu.corpus_bleu(open(f"sw/{p}/decoding/{ck}_b{beam}_lp{float(lp):g}.hyp").read().splitlines(),
                                    [ref]).score for p in ("a", "a2")]
    assert [f"{t:.2f}" for t in theirs] == [a, a2], (theirs, a, a2)
    # evaluate's scores carry 2 decimals, so the mean of those is within 0.01 of the exact one.
    assert abs(float(mean) - sum(theirs) / 2) <= 0.01, (theirs, mean)
    means.append(sum(theirs) / 2)
bold = [l for l in open("means.md") if l.startswith("| **")]
assert len(bold) == 1 and f"{max(means):.2f}" in bold[0], bold
print(f"ok: a,a2: each column equals sacreBLEU on that point's hypotheses, the mean theirs; bold the highest mean ({max(means):.2f})")
PY

# A rerun scores nothing again and prints the same table.
"${TUNE[@]}" s.sweep a --out sw --checkpoints last2,best2,best,last --beams 1,3 --lenpens 1.0,1.6 > table2.md 2> tune2.log ||
  fail "rerun"
cmp table.md table2.md || fail "rerun printed another table"
! grep -q "evaluate" tune2.log || { cat tune2.log; fail "rerun evaluated again"; }
echo "ok: a rerun reuses scores.json"
cp sw/a/decoding/scores.json scores.keep
for bad in '[1]' '{"finished": "x", "scores": 5}'; do
  echo "$bad" > sw/a/decoding/scores.json
  "${TUNE[@]}" s.sweep a --out sw --checkpoints last2 --beams 1 --lenpens 1.0 > out.txt 2> err.txt; rc=$?
  [ $rc -eq 2 ] && grep -q "sw/a/decoding/scores.json: unreadable" err.txt && [ "$(wc -l < err.txt)" -eq 1 ] \
    || { cat err.txt; fail "scores.json $bad: exit $rc"; }
  echo "ok: scores.json $bad -> $(cat err.txt)"
done
mv scores.keep sw/a/decoding/scores.json
echo PASS
