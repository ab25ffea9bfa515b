#!/usr/bin/env bash
# The executables end to end on a tiny synthetic corpus: preprocess -> train -> average
# -> evaluate / translate, checked against Python's torch.load and sacreBLEU, and every
# bad input refused with a clear message, a non-zero exit and no damaged output.
#   e2e_cli.sh BUILD_DIR PYTHON
set -uo pipefail
build=$1 python=$2
bin() { echo "$build/$1/$2"; }
PRE=$(bin data preprocess) TRAIN=$(bin trainer train) AVG=$(bin trainer average)
EVAL=$(bin eval evaluate) TRANS=$(bin eval translate)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
cd "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
# expect_error "what" "needle" cmd...: non-zero exit and the needle in stderr.
expect_error() {
  local what=$1 needle=$2; shift 2
  if "$@" > out.txt 2> err.txt; then fail "$what: exit 0"; fi
  grep -qF -- "$needle" err.txt || { cat err.txt; fail "$what: message lacks '$needle'"; }
  echo "ok: $what -> $(head -c 200 err.txt | head -1)"
}

"$python" "$here/make_toy_corpus.py" raw
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 2, max_tokens: 300}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0}
schedule: {type: inverse_sqrt, lr: 0.003, warmup_updates: 10}
train: {max_updates: 150, threads: 1, log_interval: 50, validate_interval_updates: 50, save_interval_updates: 50, keep_last: 2, save_dir: run}
eval: {beam: 2}
YAML

"$PRE" --config c.yaml > /dev/null 2>&1 || fail preprocess
"$TRAIN" --config c.yaml 2> train.err || { cat train.err; fail train; }
ls run/update_100.pt run/update_150.pt run/best.pt run/last.pt > /dev/null || fail "checkpoint layout"
[ ! -e run/update_50.pt ] || fail "keep_last 2 kept update_50.pt"
grep -q '"event":"valid"' run/metrics.jsonl || fail "metrics.jsonl has no validation record"
"$python" -c "
import torch
c = torch.load('run/last.pt', weights_only=True)
assert c['update'] == 150 and set(c['model']) and 'exp_avg' in next(iter(c['optimizer'].values())), c.keys()
assert 'd_model: 32' in c['config']
print('ok: torch.load(weights_only=True) reads last.pt: update', c['update'], len(c['model']), 'tensors')
" || fail "torch.load"

"$AVG" --output run/avg.pt --last 2 run 2> /dev/null || fail average
"$EVAL" --config c.yaml --checkpoint run/avg.pt --split test --output hyp.txt > bleu.txt 2> eval.err || { cat eval.err; fail evaluate; }
head -1 bleu.txt | grep -q "^BLEU = " || fail "evaluate printed no BLEU line"
sed -n 2p bleu.txt | grep -qx "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0" || fail "signature line"
[ "$(wc -l < hyp.txt)" = 20 ] || fail "hypothesis count"
"$EVAL" bleu --hyp hyp.txt --ref raw/test_2016_flickr.en > ours.txt || fail "evaluate bleu"
"$python" -c "
import sacrebleu
h = open('hyp.txt').read().splitlines(); r = open('raw/test_2016_flickr.en').read().splitlines()
print(sacrebleu.corpus_bleu(h, [r]))" > theirs.txt
diff <(head -1 ours.txt) theirs.txt || fail "evaluate bleu differs from sacreBLEU"
cmp <(head -1 bleu.txt) theirs.txt || fail "evaluate's BLEU differs from sacreBLEU on its own output"
echo "ok: evaluate and evaluate bleu print sacreBLEU's line: $(cat theirs.txt)"

printf 'ein Hund läuft .\n\nzwei Kinder spielen mit Ball .\n' | "$TRANS" --config c.yaml --checkpoint run/avg.pt > tr.txt 2> tr.err || { cat tr.err; fail translate; }
[ "$(wc -l < tr.txt)" = 3 ] && [ -z "$(sed -n 2p tr.txt)" ] || { cat tr.txt; fail "empty line must give an empty translation"; }
printf 'ein Hund .\n' | "$TRANS" --config c.yaml --checkpoint run/avg.pt --beam 3 --nbest 3 > nb.txt || fail "nbest"
[ "$(wc -l < nb.txt)" = 3 ] && grep -q '^0 ||| .* ||| ' nb.txt || { cat nb.txt; fail "nbest format"; }
echo "ok: translate (empty line kept, n-best in Marian's format)"
# Ensembles: a model with itself decodes as the model alone; two checkpoints (repeated option)
# decode every line; a member that cannot be loaded is named.
"$EVAL" --config c.yaml --checkpoint run/avg.pt --checkpoint run/avg.pt --split test --output hyp_self.txt > bleu_self.txt 2> ens.err \
  || { cat ens.err; fail "evaluate with an ensemble of avg.pt and itself"; }
cmp hyp_self.txt hyp.txt || fail "an ensemble of a model with itself changed its hypotheses"
cmp <(head -1 bleu_self.txt) <(head -1 bleu.txt) || fail "an ensemble of a model with itself changed its BLEU"
printf 'ein Hund läuft .\nzwei Kinder spielen mit Ball .\n' \
  | "$TRANS" --config c.yaml --checkpoint run/update_100.pt --checkpoint run/update_150.pt > tr_ens.txt 2> ens.err \
  || { cat ens.err; fail "translate with an ensemble of two checkpoints"; }
[ "$(wc -l < tr_ens.txt)" -eq 2 ] || fail "translate with an ensemble printed $(wc -l < tr_ens.txt) lines for 2"
expect_error "evaluate: an ensemble member that does not exist" "run/missing.pt" \
  "$EVAL" --config c.yaml --checkpoint run/avg.pt --checkpoint run/missing.pt --split test --output hyp_self.txt
cmp hyp_self.txt hyp.txt || fail "a refused ensemble changed the existing --output file"
echo "ok: ensembles (a model with itself == the model; two checkpoints; a missing member named)"
# The oneDNN GEMM decodes the test split to the same lines, greedy and beam 3 (batches that
# shrink to one sentence included: a one-row product once wrote into the bias).
for beam in 1 3; do
  for gemm in mkl onednn; do
    "$TRANS" --config c.yaml --checkpoint run/avg.pt --beam $beam --input raw/test_2016_flickr.de train.gemm=$gemm \
      > gemm_$gemm.txt 2> gemm.err || { cat gemm.err; fail "translate train.gemm=$gemm"; }
  done
  cmp gemm_mkl.txt gemm_onednn.txt || { diff gemm_mkl.txt gemm_onednn.txt | head; fail "beam $beam: onednn decodes differently"; }
done
echo "ok: translate under train.gemm=onednn prints the same lines as mkl"
# --verbose names the decoding set-up on stderr and leaves what goes to stdout as it was.
"$TRANS" --config c.yaml --checkpoint run/avg.pt --beam 3 --input raw/test_2016_flickr.de train.gemm=onednn --verbose \
  > verbose.txt 2> verbose.err || { cat verbose.err; fail "translate --verbose"; }
cmp verbose.txt gemm_onednn.txt || fail "translate --verbose changed the translations"
grep -qx 'translate: device cpu, 1 threads, gemm onednn (train.gemm); kept transposed weights: [0-9x,]*\(none\)\?, attention short' \
  verbose.err || { cat verbose.err; fail "translate --verbose: no set-up line"; }
"$EVAL" --config c.yaml --checkpoint run/avg.pt --split test --verbose > bleu_verbose.txt 2> eval_verbose.err ||
  { cat eval_verbose.err; fail "evaluate --verbose"; }
cmp bleu.txt bleu_verbose.txt || fail "evaluate --verbose changed stdout"
grep -qx 'evaluate: device cpu, 1 threads, gemm mkl (train.gemm); kept transposed weights: [0-9x,]*\(none\)\?, attention short' \
  eval_verbose.err || { cat eval_verbose.err; fail "evaluate --verbose: no set-up line"; }
echo "ok: translate and evaluate --verbose: $(cat verbose.err)"
expect_error "translate --verbose=maybe" "--verbose = maybe" "$TRANS" --config c.yaml --checkpoint run/avg.pt --verbose=maybe

# Bad input: each refused, nothing overwritten.
cp hyp.txt hyp.before
expect_error "missing checkpoint" "run/nope.pt" "$EVAL" --config c.yaml --checkpoint run/nope.pt --output hyp.txt
cmp hyp.txt hyp.before || fail "output overwritten after an error"
head -c 2000 run/last.pt > run/trunc.pt
expect_error "truncated checkpoint" "not a readable checkpoint" "$EVAL" --config c.yaml --checkpoint run/trunc.pt --output hyp.txt
cp run/last.pt run/corrupt.pt; cp run/last.pt.sha256 run/corrupt.pt.sha256
printf '\x01' | dd of=run/corrupt.pt bs=1 seek=5000 conv=notrunc 2> /dev/null
expect_error "corrupt checkpoint" "checksum" "$EVAL" --config c.yaml --checkpoint run/corrupt.pt --output hyp.txt
expect_error "model shape mismatch" "embed.weight" "$EVAL" --config c.yaml --checkpoint run/last.pt model.d_model=64
"$PRE" --config c.yaml data.shard_dir=shards2 data.vocab_size=36 > /dev/null 2>&1 || fail "preprocess 2"
expect_error "vocabulary mismatch" "vocab_sha256" "$EVAL" --config c.yaml --checkpoint run/last.pt data.shard_dir=shards2
head -5 hyp.txt > short.txt
expect_error "hyp/ref length mismatch" "has 5 lines" "$EVAL" bleu --hyp short.txt --ref raw/test_2016_flickr.en
expect_error "missing hypothesis file" "nope.txt" "$EVAL" bleu --hyp nope.txt --ref raw/test_2016_flickr.en
cmp hyp.txt hyp.before || fail "output overwritten after an error"
expect_error "average output is an input" "also an input" "$AVG" --output run/last.pt run/last.pt run/best.pt
expect_error "unknown resume file" "run/none.pt" "$TRAIN" --config c.yaml --resume run/none.pt
# train --benchmark --profile: a Chrome trace of the timed updates; one Adam step per update in it.
"$TRAIN" --config c.yaml train.save_dir=bench --benchmark 2 --warmup 1 --profile prof.json > bench.json 2> bench.err ||
  { cat bench.err; fail "train --profile"; }
"$python" "$here/../tools/profile_summary.py" prof.json --updates 2 --top 200 --json | "$python" -c "
import json, sys
ops = {o['name']: o['per_update'] for o in json.load(sys.stdin)['cpu_ops']}
assert ops.get('aten::_fused_adamw_') == 1.0, sorted(ops)[:20]
print('ok: train --profile: a trace with', len(ops), 'operators, one Adam step per update')" || fail "profile: Adam steps"
echo keep > kept.json
expect_error "--profile without --benchmark" "--profile requires --benchmark" "$TRAIN" --config c.yaml --profile kept.json
expect_error "--profile into a missing directory" "directory nodir does not exist" "$TRAIN" --config c.yaml --benchmark 1 --profile nodir/p.json
[ "$(cat kept.json)" = keep ] || fail "a refused --profile changed an existing file"
echo "e2e: all checks passed"
