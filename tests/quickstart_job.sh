#!/usr/bin/env bash
# launch/quickstart.sh, the main job, end to end on the toy corpus with a toy recipe:
# - it trains, averages the last eval.average_last checkpoints (checked against the mean
#   of those files' weights in PyTorch) and scores the test set both ways;
# - run again with a larger budget, it resumes the run instead of starting over;
# - a run directory of another model is refused with the reason, and left as it was;
# - a multilingual recipe is scored in each of its directions.
#   quickstart_job.sh BUILD_DIR PYTHON
set -uo pipefail
build=$1 python=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp"

"$python" "$here/make_toy_corpus.py" raw
cat > recipe.yaml <<'YAML'
data: {vocab_size: 40, num_shards: 2, max_tokens: 300}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0}
schedule: {type: inverse_sqrt, lr: 0.003, warmup_updates: 10}
train: {max_updates: 60, threads: 1, log_interval: 20, validate_interval_updates: 30, save_interval_updates: 10, keep_last: 5}
eval: {beam: 2, average_last: 3}
YAML
# quickstart() EXTRA...: the quickstart on this recipe, output in out.txt. Its paths are relative
# to this scratch directory, as a user's would be to theirs (the script itself runs elsewhere).
quickstart() {
  BUILD_DIR=$build CONFIG=recipe.yaml RUN_DIR=run SHARD_DIR=shards EXTRA="$*" \
    bash "$here/../launch/quickstart.sh" raw > out.txt 2>&1
}

quickstart || { tail -20 out.txt; fail "quickstart exit $?"; }
grep -qF "quickstart.sh: done: run directory $tmp/run; scored --checkpoint $tmp/run/averaged.pt; test_2016_flickr hypotheses in $tmp/run/test_2016_flickr.hyp.en" out.txt ||
  { tail -3 out.txt; fail "the last line does not say where the results are"; }
grep -qF "average: wrote $tmp/run/averaged.pt from 3 checkpoints (last: update 60)" out.txt ||
  { cat out.txt; fail "the last eval.average_last = 3 checkpoints were not averaged"; }
[ "$(grep -c '^BLEU = ' out.txt)" = 2 ] || { cat out.txt; fail "expected a sacreBLEU and an lc-tok BLEU line"; }
[ -s run/test_2016_flickr.hyp.en ] || fail "no test hypotheses"
"$python" - "$tmp/run" <<'PY' || fail "averaged.pt is not the mean of update_40/50/60.pt"
import sys, torch
run = sys.argv[1]
load = lambda name: torch.load(f"{run}/{name}", weights_only=True)["model"]
avg, parts = load("averaged.pt"), [load(f"update_{u}.pt") for u in (40, 50, 60)]
for key, value in avg.items():
    mean = sum(p[key].double() for p in parts) / 3
    assert torch.allclose(value.double(), mean, rtol=0, atol=1e-6), key
PY
echo "ok: trained 60 updates, averaged the last 3, scored both ways"

quickstart train.max_updates=80 || { tail -20 out.txt; fail "rerun exit $?"; }
grep -qF "resumed from $tmp/run/last.pt at update 60" out.txt || { cat out.txt; fail "the rerun did not resume"; }
grep -qF "from 3 checkpoints (last: update 80)" out.txt || { cat out.txt; fail "the resumed run did not reach 80"; }
echo "ok: run again with 80 updates, it resumed at 60"

before=$(sha256sum run/last.pt)
if quickstart model.d_model=16; then fail "a run directory of another model was accepted"; fi
grep -q "train: error: .*last.pt: parameter .* has shape" out.txt || { cat out.txt; fail "no clear error"; }
[ "$(sha256sum run/last.pt)" = "$before" ] || fail "the refused run changed last.pt"
echo "ok: another model's run directory refused: $(grep 'train: error' out.txt | head -c 160)"

# A multilingual recipe (data.directions): trained once, scored in each of its directions both
# ways, each direction's hypotheses in their own file, as `evaluate --direction` decodes them.
cat > multi.yaml <<'YAML'
data: {vocab_size: 42, num_shards: 2, max_tokens: 300, directions: [de-en, en-de], lang_tag: decoder}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0}
schedule: {type: inverse_sqrt, lr: 0.003, warmup_updates: 10}
train: {max_updates: 40, threads: 1, log_interval: 20, validate_interval_updates: 20, save_interval_updates: 10, keep_last: 5}
eval: {beam: 2, average_last: 3}
YAML
BUILD_DIR=$build CONFIG=multi.yaml RUN_DIR=multi SHARD_DIR=multi_shards bash "$here/../launch/quickstart.sh" raw > multi.txt 2>&1 ||
  { rc=$?; tail -20 multi.txt; fail "the multilingual quickstart: exit $rc"; }
grep -qF "test_2016_flickr hypotheses in $tmp/multi/test_2016_flickr.hyp.de-en $tmp/multi/test_2016_flickr.hyp.en-de" multi.txt ||
  { tail -3 multi.txt; fail "the multilingual quickstart's last line"; }
[ "$(grep -c '^BLEU = ' multi.txt)" = 4 ] || { cat multi.txt; fail "multilingual: expected sacreBLEU and lc-tok lines for each direction"; }
for d in de-en en-de; do
  "$build/eval/evaluate" --config multi.yaml data.raw_dir=raw data.shard_dir=multi_shards --checkpoint multi/averaged.pt \
    --split test --direction $d --output $d.hyp > $d.txt 2>&1 || { cat $d.txt; fail "evaluate --direction $d"; }
  cmp -s $d.hyp multi/test_2016_flickr.hyp.$d || fail "the quickstart's $d hypotheses differ from evaluate --direction $d's"
  grep -qF "$(grep -m1 '^BLEU = ' $d.txt)" multi.txt || { cat $d.txt; fail "$d's BLEU line differs from evaluate's"; }
done
echo "ok: a multilingual recipe scored in de-en and en-de, each as evaluate --direction scores it"

# SEEDS: one member per seed, each the recipe trained alone with that seed (bit for bit), and
# the test set decoded once by their ensemble, as `evaluate` with both checkpoints decodes it.
SEEDS="7 8" BUILD_DIR=$build CONFIG=$tmp/recipe.yaml RUN_DIR=$tmp/ens SHARD_DIR=$tmp/shards \
  bash "$here/../launch/quickstart.sh" "$tmp/raw" > ens.txt 2>&1 || { tail -20 ens.txt; fail "SEEDS quickstart exit $?"; }
[ "$(grep -c '^BLEU = ' ens.txt)" = 2 ] || { cat ens.txt; fail "SEEDS: expected one sacreBLEU and one lc-tok line"; }
BUILD_DIR=$build CONFIG=$tmp/recipe.yaml RUN_DIR=$tmp/alone7 SHARD_DIR=$tmp/shards EXTRA="train.seed=7" \
  bash "$here/../launch/quickstart.sh" "$tmp/raw" > alone.txt 2>&1 || { tail -20 alone.txt; fail "seed 7 alone exit $?"; }
"$python" - "$tmp" <<'PY' || fail "the members are not the recipe trained alone with their seeds"
import sys, torch
tmp = sys.argv[1]
load = lambda path: torch.load(path, weights_only=True)["model"]
member, alone, other = load(f"{tmp}/ens/seed7/averaged.pt"), load(f"{tmp}/alone7/averaged.pt"), load(f"{tmp}/ens/seed8/averaged.pt")
assert member.keys() == alone.keys()
assert all(torch.equal(member[k], alone[k]) for k in member), "seed 7's member differs from seed 7 alone"
assert not all(torch.equal(member[k], other[k]) for k in member), "seeds 7 and 8 trained the same weights"
PY
"$build/eval/evaluate" --config "$tmp/recipe.yaml" data.raw_dir="$tmp/raw" data.shard_dir="$tmp/shards" \
  --checkpoint "$tmp/ens/seed7/averaged.pt" --checkpoint "$tmp/ens/seed8/averaged.pt" --split test --output direct.hyp > direct.txt 2>&1 ||
  { cat direct.txt; fail "evaluate of the two members"; }
cmp -s direct.hyp ens/test_2016_flickr.hyp.en || fail "the quickstart's ensemble hypotheses differ from evaluate's with both members"
cmp -s alone7/test_2016_flickr.hyp.en ens/test_2016_flickr.hyp.en && fail "the ensemble decoded as seed 7 alone"
grep -qF "$(head -1 direct.txt)" ens.txt || { cat ens.txt direct.txt; fail "the ensemble's BLEU line differs from evaluate's"; }
echo "ok: SEEDS=\"7 8\": members equal their seeds trained alone, ensemble decoded as evaluate does: $(grep -m1 '^BLEU' ens.txt | head -c 40)"

# JOBS=2: the same members trained at once, one CPU each (the toy recipe's train.threads is 1
# already), bit for bit, and the same ensemble hypotheses.
[ "$(nproc)" -ge 2 ] || { echo "ok: JOBS not tested: this machine lets the test use $(nproc) CPU"; exit 0; }
quickstart_members() {
  BUILD_DIR=$build CONFIG=$tmp/recipe.yaml SHARD_DIR=$tmp/shards bash "$here/../launch/quickstart.sh" "$tmp/raw"
}
SEEDS="7 8" JOBS=2 RUN_DIR=$tmp/par quickstart_members > par.txt 2>&1 || { tail -20 par.txt; fail "JOBS=2 quickstart exit $?"; }
[ "$(grep -c "^== train recipe -> $tmp/par/seed[78] on CPUs [0-9]" par.txt)" = 2 ] || { cat par.txt; fail "JOBS=2: no member line naming its CPUs"; }
grep -q 'update *60 ' par/seed8/train.out || fail "JOBS=2: seed 8's console is not in its train.out"
"$python" - "$tmp" <<'PY' || fail "members trained at once differ from those trained one after the other"
import sys, torch
tmp = sys.argv[1]
for seed in (7, 8):
    a = torch.load(f"{tmp}/par/seed{seed}/averaged.pt", weights_only=True)["model"]
    b = torch.load(f"{tmp}/ens/seed{seed}/averaged.pt", weights_only=True)["model"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), f"seed {seed}"
PY
cmp -s par/test_2016_flickr.hyp.en ens/test_2016_flickr.hyp.en || fail "JOBS=2 decoded other hypotheses than the members trained in turn"
echo "ok: JOBS=2: the members trained at once equal those trained in turn, bit for bit, and decode the same"

# A member that fails stops the other, which writes last.pt; the script ends with the failed
# member's status, names it, and decodes nothing. Seed 9's directory holds another model's
# last.pt (refused at start); seed 10 would train far longer than this test waits.
mkdir -p fail/seed9 && cp run/last.pt fail/seed9/last.pt
start=$SECONDS rc=0
SEEDS="9 10" JOBS=2 RUN_DIR=$tmp/fail EXTRA="model.d_model=16 train.max_updates=100000" quickstart_members > fail.txt 2>&1 || rc=$?
[ $rc = 2 ] || { cat fail.txt; fail "a failed member: exit $rc (expected train's 2)"; }
grep -q "^quickstart.sh: error: member seed 9 exited 2; the end of $tmp/fail/seed9/train.out:" fail.txt || { cat fail.txt; fail "the failed member is not named"; }
grep -q "train: error: .*last.pt: parameter .* has shape" fail.txt || { cat fail.txt; fail "the member's own error is not shown"; }
grep -q "^quickstart.sh: stopped by member seed 9 (exit 2); " fail.txt || { cat fail.txt; fail "no closing line"; }
grep -q "stopped by signal 15" fail/seed10/train.out && [ -s fail/seed10/last.pt ] || { cat fail/seed10/train.out; fail "seed 10 was not stopped with a checkpoint"; }
[ ! -e fail/test_2016_flickr.hyp.en ] || fail "a failed member's ensemble was decoded"
pgrep -f "$tmp/fail/seed" > /dev/null && fail "a member outlived the script"
echo "ok: a failed member stopped the other (last.pt written) in $((SECONDS - start)) s: $(grep -m1 'error: member' fail.txt | head -c 80)"

# SIGTERM to the script (preemption) stops every member with a checkpoint, exits 143, and a run
# again resumes each member from its own last.pt.
SEEDS="11 12" JOBS=2 RUN_DIR=$tmp/term EXTRA="train.max_updates=100000" BUILD_DIR=$build CONFIG=$tmp/recipe.yaml \
  SHARD_DIR=$tmp/shards bash "$here/../launch/quickstart.sh" "$tmp/raw" > term.txt 2>&1 &
script=$!  # the quickstart's own shell, not a subshell around it
for _ in $(seq 600); do
  grep -qs 'update *20 ' term/seed11/train.log && grep -qs 'update *20 ' term/seed12/train.log && break
  sleep 0.1
done
kill -TERM $script
rc=0; wait $script || rc=$?
[ $rc = 143 ] || { cat term.txt; fail "SIGTERM: exit $rc (expected 143)"; }
grep -q "^quickstart.sh: stopped by SIGTERM; the members that were training wrote last.pt: run again to resume" term.txt || { cat term.txt; fail "SIGTERM: no closing line"; }
for seed in 11 12; do
  [ -s term/seed$seed/last.pt ] || fail "SIGTERM: seed $seed wrote no last.pt"
done
pgrep -f "$tmp/term/seed" > /dev/null && fail "a member outlived the script's SIGTERM"
SEEDS="11 12" JOBS=2 RUN_DIR=$tmp/term EXTRA="train.max_updates=400" quickstart_members > term2.txt 2>&1 || { tail -20 term2.txt; fail "resume after SIGTERM: exit $?"; }
for seed in 11 12; do
  grep -q "resumed from $tmp/term/seed$seed/last.pt at update" term/seed$seed/train.out || fail "seed $seed did not resume"
done
echo "ok: SIGTERM stopped both members with last.pt (exit 143); run again, each resumed"

# One model: a SIGTERM that stops train (its last.pt written, exit 0 as a supervisor wants) ends
# the quickstart with 143 before averaging or scoring the unfinished run; run again, it resumes.
BUILD_DIR=$build CONFIG=$tmp/recipe.yaml RUN_DIR=$tmp/one SHARD_DIR=$tmp/shards EXTRA="train.max_updates=100000" \
  bash "$here/../launch/quickstart.sh" "$tmp/raw" > one.txt 2>&1 &
script=$!
for _ in $(seq 600); do grep -qs 'update *20 ' one/train.log && break; sleep 0.1; done
pkill -TERM -f "train.save_dir=$tmp/one " || fail "no train of $tmp/one to stop"
rc=0; wait $script || rc=$?
[ $rc = 143 ] && grep -q "^quickstart.sh: training in $tmp/one was stopped by a signal before its budget; run again to resume it" one.txt ||
  { cat one.txt; fail "a stopped train: exit $rc, or no message"; }
[ -s one/last.pt ] && [ ! -e one/averaged.pt ] && [ ! -e one/test_2016_flickr.hyp.en ] || fail "the stopped run was averaged or scored"
echo "ok: a train stopped by SIGTERM ended the quickstart (143) unscored, last.pt kept"
