#!/usr/bin/env bash
# launch/quickstart.sh, the main job, end to end on the toy corpus with a toy recipe:
# - it trains, averages the last eval.average_last checkpoints (checked against the mean
#   of those files' weights in PyTorch) and scores the test set both ways;
# - run again with a larger budget, it resumes the run instead of starting over;
# - a run directory of another model is refused with the reason, and left as it was.
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
grep -qF "quickstart.sh: done: run directory $tmp/run; scored --checkpoint $tmp/run/averaged.pt; test hypotheses in $tmp/run/test_2016_flickr.hyp.en" out.txt ||
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
