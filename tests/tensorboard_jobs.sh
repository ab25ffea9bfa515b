#!/usr/bin/env bash
# TensorBoard event files written by train, read back by TensorBoard's own reader
# (tests/tensorboard_events.py): a plain run; a run that crashes after its checkpoint and
# is resumed (a second event file; the rolled-back steps shown once, with the resumed
# run's values); train.tensorboard=false writes none.
#   tensorboard_jobs.sh BUILD_DIR PYTHON
set -uo pipefail
build=$1 python=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"
"$python" "$here/make_toy_corpus.py" raw 150
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 2, max_tokens: 120}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.1}
schedule: {type: inverse_sqrt, lr: 0.002, warmup_updates: 5}
train: {max_updates: 16, threads: 1, log_interval: 1, validate_interval_updates: 4, save_interval_updates: 4,
        save_dir: run, validate_bleu: true}
YAML
"$PRE" --config c.yaml > /dev/null 2>&1 || fail preprocess

"$TRAIN" --config c.yaml train.save_dir=plain > plain.log 2>&1 || { cat plain.log; fail "train"; }
grep -q "tensorboard: writing plain/events.out.tfevents." plain.log || fail "train did not say where the events go"
"$python" "$here/tensorboard_events.py" plain 1 || fail "plain run"

# Crash at update 11 (after the checkpoint of update 8, with updates 9 and 10 logged), then resume.
"$TRAIN" --config c.yaml debug.fault_rank=0 debug.fault_update=11 > crash.log 2>&1 && fail "the injected fault did not fail"
grep -q '"update":10' run/metrics.jsonl || fail "the crashed run did not log update 10"
sleep 1  # a new second: the resumed run's file name sorts after the first
"$TRAIN" --config c.yaml --resume auto > resume.log 2>&1 || { cat resume.log; fail "resume"; }
grep -q "resumed from .* at update 8 " resume.log || { cat resume.log; fail "did not resume at update 8"; }
"$python" "$here/tensorboard_events.py" run 2 || fail "resumed run"

"$TRAIN" --config c.yaml train.save_dir=off train.tensorboard=false train.max_updates=2 > off.log 2>&1 || fail "train, tensorboard off"
compgen -G "off/events.out.tfevents.*" > /dev/null && fail "train.tensorboard=false wrote an event file"
echo "ok: train.tensorboard=false writes no event file"
