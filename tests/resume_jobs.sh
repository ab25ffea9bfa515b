#!/usr/bin/env bash
# Exact resume and fault tolerance, one ctest entry per mode:
#   bitwise   stop at k in {3, 6 (epoch boundary), 9}, resume: bit-identical to a run never
#             stopped; -np 1 (update_freq 2) and -np 2 (update_freq 2), dropout on; the same
#             under train.gemm=onednn, and resumed under auto (keeps the checkpoint's library)
#   kill      SIGKILL inside a checkpoint write (fault hook), and a real SIGKILL of a
#             running job: the previous checkpoint loads and resume is bit-exact
#   corrupt   a corrupt newest checkpoint is reported and resume auto falls back
#   signals   SIGUSR1 to mpirun, SIGTERM to the ranks: exit 0, checkpoint, exact resume
#   guards    NaN injection under each train.nonfinite policy; early stopping; world-size rule
#   corpora   data.train_corpora: one corpus of weight 1 preprocesses and trains bit for bit as
#             data.train_split; two weighted corpora resume bit for bit, -np 2 == -np 1 with
#             update_freq 2 (dropout off), and metrics.jsonl counts each corpus's target tokens
set -uo pipefail
build=$1 python=$2 mode=$3
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"
"$python" "$here/make_toy_corpus.py" raw 150
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 2, max_tokens: 120}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.1, attention_dropout: 0.1}
schedule: {type: inverse_sqrt, lr: 0.002, warmup_updates: 5}
train: {max_updates: 14, threads: 1, update_freq: 2, log_interval: 1, validate_interval_updates: 4, save_interval_updates: 3, keep_last: 0}
YAML
"$PRE" --config c.yaml > /dev/null 2>&1 || fail preprocess
run() {  # run NP DIR [args...]
  local np=$1 dir=$2; shift 2
  "${MPIRUN[@]}" -np "$np" "$TRAIN" --config c.yaml train.save_dir="$dir" "$@" >> "$dir.log" 2>&1
}

case $mode in
  bitwise)
    # The cosine schedule, word dropout and LayerDrop resume bit for bit too.
    reg=(schedule.type=cosine model.source_word_dropout=0.2 model.target_word_dropout=0.2
         model.encoder_layerdrop=0.3 model.decoder_layerdrop=0.3 train.max_updates=10)
    run 1 reg_straight "${reg[@]}" || fail "regularisers straight"
    run 1 reg_stop "${reg[@]}" train.max_updates=10 debug.fault_update=5 debug.fault_rank=0 && fail "fault not injected"
    run 1 reg_stop "${reg[@]}" --resume auto || fail "regularisers resume"
    grep -q "resumed from reg_stop/last.pt at update 4" reg_stop.log || { grep resumed reg_stop.log; fail "regularisers resume point"; }
    same reg_straight/last.pt reg_stop/last.pt
    # Shards read per example (data.preload_mb=0) train bit for bit as shards read whole at start.
    run 1 reg_on_disk "${reg[@]}" data.preload_mb=0 || fail "regularisers, shards read per example"
    grep -q "shards read per example" reg_on_disk.log && grep -q "shards in memory" reg_straight.log ||
      fail "the start lines do not say where the shards are read from"
    same reg_straight/last.pt reg_on_disk/last.pt
    # LayerDrop: Adam leaves a layer that no micro-batch ran alone (as torch's AdamW a parameter
    # whose .grad is None): its step count stays behind the update count, the same for every
    # parameter of the layer, while the embedding's counts every update.
    run 1 layerdrop "${reg[@]}" model.encoder_layerdrop=0.6 model.decoder_layerdrop=0.6 || fail "LayerDrop 0.6"
    "$python" - layerdrop/last.pt <<'PY' || fail "LayerDrop: Adam moved a layer no micro-batch ran"
import collections, sys, torch
ck = torch.load(sys.argv[1], weights_only=True)
steps = {name: int(s["step"].item()) for name, s in ck["optimizer"].items()}
assert steps["embed.weight"] == ck["update"] == 10, (steps["embed.weight"], ck["update"])
layers = collections.defaultdict(set)
for name, step in steps.items():
    if "_layers." in name:
        layers[name.split(".")[0] + "." + name.split(".")[1]].add(step)
assert set(layers) == {"encoder_layers.0", "decoder_layers.0"}, layers
for layer, counts in layers.items():
    assert len(counts) == 1 and 0 < min(counts) < 10, (layer, counts)
print("LayerDrop step counts:", {layer: min(c) for layer, c in layers.items()}, "of 10 updates")
PY
    # The oneDNN GEMM (train.gemm) resumes bit for bit; a run started on it and resumed under
    # auto keeps it (the checkpoint's library), whatever auto would have measured.
    run 1 gemm_straight train.gemm=onednn train.max_updates=8 || fail "onednn straight"
    grep -Eq "gemm onednn \(train.gemm\); forward on transposed weights: (none|[0-9x,]+) \|" gemm_straight.log \
      || { grep gemm gemm_straight.log; fail "the start line does not name the oneDNN GEMM and its transposed weights"; }
    for resume_with in onednn auto; do
      run 1 gemm_$resume_with train.gemm=onednn train.max_updates=4 || fail "onednn first part"
      run 1 gemm_$resume_with train.gemm=$resume_with train.max_updates=8 --resume auto || fail "resume under $resume_with"
      same gemm_straight/last.pt gemm_$resume_with/last.pt
    done
    grep -Eq "gemm (mkl|onednn) \(auto: oneDNN [0-9]+ vs MKL [0-9]+ GFLOP/s on the model's shapes\)" gemm_auto.log \
      || { grep gemm gemm_auto.log; fail "auto does not report its measurement"; }
    echo "train.gemm: onednn resumes bitwise; auto keeps the checkpoint's library"
    # bf16 products resume bit for bit, where the CPU has them; with oneDNN capped below bf16
    # (DNNL_MAX_CPU_ISA) the run is refused at start with one message, exit 2, no checkpoint.
    if run 1 bf16_straight train.precision=bf16 train.max_updates=8; then
      run 1 bf16_stop train.precision=bf16 train.max_updates=4 || fail "bf16 first part"
      run 1 bf16_stop train.precision=bf16 train.max_updates=8 --resume auto || fail "bf16 resume"
      same bf16_straight/last.pt bf16_stop/last.pt
      DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI run 1 bf16_capped train.precision=bf16 train.max_updates=2
      rc=$?
      [ $rc = 2 ] || { cat bf16_capped.log; fail "bf16 under a capped oneDNN ISA: exit $rc, expected 2"; }
      grep -q "error: train.precision=bf16 is unavailable here: oneDNN may use no bf16 instructions here" bf16_capped.log \
        || { cat bf16_capped.log; fail "bf16 under a capped ISA: message"; }
      ! ls bf16_capped/*.pt > /dev/null 2>&1 || fail "bf16 refused, yet a checkpoint was written"
      # A change of precision on resume continues, saying so (either way).
      run 1 bf16_stop train.precision=fp32 train.max_updates=10 --resume auto || fail "bf16 checkpoint resumed in fp32"
      grep -q "precision: the checkpoint was trained with train.precision=bf16, this run continues in fp32" bf16_stop.log \
        || { grep -i precision bf16_stop.log; fail "bf16 -> fp32 resume: no note"; }
      run 1 bf16_stop train.precision=bf16 train.max_updates=12 --resume auto || fail "fp32 checkpoint resumed in bf16"
      grep -q "precision: the checkpoint was trained with train.precision=fp32, this run continues in bf16" bf16_stop.log \
        || { grep -i precision bf16_stop.log; fail "fp32 -> bf16 resume: no note"; }
      echo "train.precision=bf16: resumes bitwise; a precision change on resume is named; refused where oneDNN may not use bf16 instructions"
    else
      grep -q "train.precision=bf16 is unavailable here: " bf16_straight.log || { cat bf16_straight.log; fail "bf16 failed"; }
      echo "bf16 not tested here: $(grep -o 'train.precision=bf16 is unavailable here: .*' bf16_straight.log)"
      # A checkpoint trained in bf16 on a machine that has it (its config says bf16; its weights
      # and Adam states are float32 in either precision) moves to this CPU: resumed as bf16 it is
      # refused at start (exit 2, the checkpoint left as it was); resumed in fp32 it continues,
      # saying so.
      run 1 from_bf16 train.max_updates=4 || fail "from_bf16: the fp32 first part"
      "$python" - from_bf16/last.pt <<'PY' || fail "from_bf16: marking the checkpoint as trained in bf16"
import sys, torch
ck = torch.load(sys.argv[1], weights_only=True)
line = '  precision: "fp32"\n'
assert ck["config"].count(line) == 1, "no single precision line in the checkpoint's config"
ck["config"] = ck["config"].replace(line, '  precision: "bf16"\n')
torch.save(ck, sys.argv[1])
PY
      rm -f from_bf16/last.pt.sha256 from_bf16/update_*.pt*
      before=$(sha256sum from_bf16/last.pt)
      run 1 from_bf16 train.precision=bf16 train.max_updates=8 --resume auto
      rc=$?
      [ $rc = 2 ] || { tail -3 from_bf16.log; fail "a bf16 checkpoint resumed as bf16 without bf16: exit $rc, expected 2"; }
      [ "$(grep -c 'error: train.precision=bf16 is unavailable here: ' from_bf16.log)" = 1 ] ||
        { tail -3 from_bf16.log; fail "a bf16 checkpoint resumed as bf16 without bf16: not one error line"; }
      [ "$(sha256sum from_bf16/last.pt)" = "$before" ] || fail "the refused resume changed the checkpoint"
      run 1 from_bf16 train.precision=fp32 train.max_updates=8 --resume auto || fail "a bf16 checkpoint resumed in fp32"
      grep -q "precision: the checkpoint was trained with train.precision=bf16, this run continues in fp32" from_bf16.log \
        || { grep -i precision from_bf16.log; fail "bf16 -> fp32 resume: no note"; }
      grep -q "done: 8 updates" from_bf16.log || { tail -3 from_bf16.log; fail "bf16 -> fp32 resume did not reach update 8"; }
      echo "a bf16 checkpoint on this CPU: refused as bf16 (exit 2, checkpoint unchanged), continues in fp32 with a note"
    fi
    for np in 1 2; do
      run $np probe$np train.max_updates=1 || fail "probe -np $np"
      per_epoch=$(grep -o '[0-9]* updates/epoch' probe$np.log | head -1 | cut -d' ' -f1)
      total=$((per_epoch + 4))  # the runs cross an epoch boundary
      run $np straight$np train.max_updates=$total || fail "straight -np $np"
      for k in 3 $per_epoch $((per_epoch + 1)); do
        d=stop${np}_$k
        run $np $d train.max_updates=$k || fail "first part -np $np k $k"
        run $np $d train.max_updates=$total --resume auto || fail "resume -np $np k $k"
        grep -q "resumed from $d/last.pt at update $k" $d.log || fail "did not resume at $k"
        same straight$np/last.pt $d/last.pt
      done
      echo "np $np: epoch boundary after $per_epoch updates tested"
    done
    ;;
  kill)
    run 1 straight || fail straight
    run 1 k1 debug.kill_in_save=6
    [ -e k1/.last.pt.tmp-* ] 2> /dev/null || ls -a k1 | grep -q '\.tmp-' || fail "no temporary file left by the kill"
    run 1 k1 --resume auto || fail "resume after kill in save"
    # Killed at update 6 with both new files written but neither renamed: the old pair
    # (last.pt of the validation at update 4) is intact.
    grep -q "resumed from k1/last.pt at update 4" k1.log || { cat k1.log; fail "resume point"; }  # last save before 6: validation at 4
    same straight/last.pt k1/last.pt
    # A real SIGKILL of a running job, wherever it happens to be; then resume five updates
    # past its last checkpoint and compare with a run never stopped, of the same length.
    "$TRAIN" --config c.yaml train.save_dir=k2 train.max_updates=100000 > k2.log 2>&1 &
    pid=$!
    for _ in $(seq 1 200); do [ -e k2/update_12.pt ] && break; sleep 0.1; done
    kill -9 $pid; wait $pid 2> /dev/null
    at=$("$python" -c "import torch; print(torch.load('k2/last.pt', weights_only=True)['update'])") || fail "last.pt unreadable after SIGKILL"
    "$TRAIN" --config c.yaml train.save_dir=k2 train.max_updates=$((at + 5)) --resume auto >> k2.log 2>&1 || fail "resume after SIGKILL"
    grep "resumed from" k2.log
    run 1 straight_k2 train.max_updates=$((at + 5)) || fail "straight to $((at + 5))"
    same straight_k2/last.pt k2/last.pt
    ;;
  corrupt)
    run 1 straight || fail straight
    run 1 c train.max_updates=9 || fail first
    printf '\x07' | dd of=c/last.pt bs=1 seek=3000 conv=notrunc 2> /dev/null
    cp c/last.pt corrupt.pt; cp c/last.pt.sha256 corrupt.pt.sha256
    run 1 c --resume auto || fail "resume auto with a corrupt last.pt"
    grep -q "skipping c/last.pt: c/last.pt: checksum differs" c.log || { cat c.log; fail "corrupt newest not reported"; }
    grep -q "resumed from c/update_9.pt at update 9" c.log || fail "no fallback to update_9.pt"
    same straight/last.pt c/last.pt
    if "$TRAIN" --config c.yaml train.save_dir=c --resume corrupt.pt > e.log 2>&1; then fail "explicit corrupt resume accepted"; fi
    grep -q "checksum" e.log || fail "explicit corrupt resume: no checksum message"
    ;;
  signals)
    # SIGUSR1 to mpirun, which forwards it to every rank.
    "${MPIRUN[@]}" -np 2 "$TRAIN" --config c.yaml train.save_dir=s1 train.update_freq=1 train.max_updates=100000 > s1.log 2>&1 &
    pid=$!
    for _ in $(seq 1 300); do [ -e s1/update_6.pt ] && break; sleep 0.1; done
    kill -USR1 $pid; wait $pid; rc=$?
    [ $rc -eq 0 ] || { cat s1.log; fail "SIGUSR1: exit $rc"; }
    grep -q "Resume with: train --config <config> --resume auto" s1.log || fail "no resume hint"
    stopped=$(grep -o 'stopped by signal 10 after update [0-9]*' s1.log | head -1 | awk '{print $NF}')
    [ -n "$stopped" ] || { cat s1.log; fail "no stop update reported"; }
    grep -Eq "train\[rank 1 on $(hostname)\]: stopped (by signal 10 after update $stopped|after update $stopped: a stop signal reached another rank)" s1.log || fail "rank 1 did not stop at the same update"
    run 2 s1 train.update_freq=1 train.max_updates=$((stopped + 5)) --resume auto || fail "resume after SIGUSR1"
    run 2 straight_s1 train.update_freq=1 train.max_updates=$((stopped + 5)) || fail straight
    same straight_s1/last.pt s1/last.pt
    # SIGTERM to the ranks themselves, as SLURM sends it.
    "${MPIRUN[@]}" -np 2 "$TRAIN" --config c.yaml train.save_dir=s2 train.update_freq=1 train.max_updates=100000 > s2.log 2>&1 &
    pid=$!
    for _ in $(seq 1 300); do [ -e s2/update_6.pt ] && break; sleep 0.1; done
    pkill -TERM -P $pid -f trainer/train; wait $pid; rc=$?  # the ranks, not mpirun
    [ $rc -eq 0 ] || { cat s2.log; fail "SIGTERM: exit $rc"; }
    stopped=$(grep -o 'stopped by signal 15 after update [0-9]*' s2.log | head -1 | awk '{print $NF}')
    [ -n "$stopped" ] || { cat s2.log; fail "SIGTERM not reported"; }
    run 2 s2 train.update_freq=1 train.max_updates=$((stopped + 5)) --resume auto || fail "resume after SIGTERM"
    run 2 straight_s2 train.update_freq=1 train.max_updates=$((stopped + 5)) || fail straight
    same straight_s2/last.pt s2/last.pt
    ;;
  guards)
    if run 1 n1 debug.nan_update=5; then fail "NaN with nonfinite=stop did not stop"; fi
    grep -q "update 5: the loss is nan" n1.log || { cat n1.log; fail "stop message"; }
    run 1 n2 debug.nan_update=5 debug.nan_count=2 train.nonfinite=skip || { cat n2.log; fail "skip policy"; }
    [ "$(grep -c 'update skipped' n2.log)" = 2 ] || fail "expected 2 skipped updates"
    grep -q "2 updates skipped" n2.log || fail "summary lacks the skip count"
    if run 1 n3 debug.nan_update=5 debug.nan_count=3 train.nonfinite=skip train.max_nonfinite_skips=3; then fail "3 in a row accepted"; fi
    grep -q "3 non-finite updates in a row" n3.log || fail "skip limit message"
    echo "ok: NaN policies (stop; skip 2; stop after 3 in a row)"
    # Mixed precision on CPU: bf16 trains, or is refused by name where the CPU has no bf16
    # instructions (AMD Zen 3: AVX2 only). fp16 whose scaled gradients overflow above a loss
    # scale of 16384 skips updates 1 and 2, halving the scale from 65536 each time, then
    # trains; no log line shows the learning rate of a skipped update (0).
    if ! run 1 bf train.precision=bf16 train.max_updates=6; then
      # A refusal passes only where the CPU really lacks both flags (CPUID, as /proc/cpuinfo says).
      ! grep -qwE "avx512_bf16|amx_bf16" /proc/cpuinfo && grep -q "train.precision=bf16 is unavailable here: " bf.log ||
        { tail -5 bf.log; fail "bf16"; }
    fi
    run 1 fp train.precision=fp16 train.max_updates=6 train.log_interval=2 debug.fp16_overflow_above=16384 ||
      { tail -5 fp.log; fail "fp16"; }
    grep -q "update 1: fp16 gradient overflow, update skipped, loss scale now 32768" fp.log &&
      grep -q "update 2: fp16 gradient overflow, update skipped, loss scale now 16384" fp.log ||
      { grep -i "update [123]" fp.log; fail "fp16 loss scaling"; }
    [ "$(grep -c 'fp16 gradient overflow' fp.log)" = 2 ] || fail "fp16: expected exactly 2 overflow skips"
    if grep -q "lr 0.000e+00" fp.log; then grep "lr " fp.log; fail "fp16: a log line shows a skipped update's lr"; fi
    # A NaN loss under fp16 is no overflow: train.nonfinite=stop stops at once.
    if run 1 fpn train.precision=fp16 train.max_updates=6 debug.nan_update=3; then fail "fp16 NaN loss did not stop"; fi
    grep -q "update 3: the loss is nan (train.nonfinite=stop" fpn.log || { tail -3 fpn.log; fail "fp16 NaN stop message"; }
    # ... and under the skip policy NaNs that keep coming stop the run at max_nonfinite_skips.
    if run 1 fps train.precision=fp16 train.max_updates=20 train.nonfinite=skip train.max_nonfinite_skips=3 \
        debug.nan_update=3 debug.nan_count=10; then fail "fp16 NaNs in a row accepted"; fi
    grep -q "update 5: the loss is nan: 3 non-finite updates in a row (train.max_nonfinite_skips)" fps.log ||
      { tail -3 fps.log; fail "fp16 skip limit message"; }
    if grep -q "fp16 gradient overflow" fps.log; then fail "fp16: a NaN loss lowered the loss scale"; fi
    # Gradients that overflow at every scale: 16 halvings reach the floor 1, then the policy.
    if run 1 fpo train.precision=fp16 train.max_updates=40 debug.fp16_overflow_above=0.5; then
      fail "fp16 endless overflow did not stop"; fi
    [ "$(grep -c 'fp16 gradient overflow' fpo.log)" = 16 ] || fail "fp16: expected 16 halvings to the floor"
    grep -q "update 17: non-finite gradient in parameter .* at the fp16 loss scale's floor 1 (train.nonfinite=stop" fpo.log ||
      { tail -3 fpo.log; fail "fp16 floor message"; }
    echo "ok: bf16 training; fp16 overflow skipped with the scale lowered; NaN and overflow at the floor obey train.nonfinite"
    # Early stopping: with a zero learning rate the validation loss never improves after the
    # first validation, so patience 2 stops at the third validation (update 3).
    run 1 es schedule.type=constant schedule.lr=0 train.validate_interval_updates=1 train.patience=2 train.max_updates=50 || fail patience
    grep -q "done: 3 updates" es.log || { grep -E "validation|done" es.log; fail "early stopping"; }
    echo "ok: early stopping after 3 validations"
    # World size: a different world_size x update_freq is refused; the same product resumes.
    run 2 w train.update_freq=1 train.max_updates=6 || fail "w"
    if run 1 w train.update_freq=1 --resume auto; then fail "changed world_size x update_freq accepted"; fi
    grep -q "world_size x update_freq = 2, this run has 1" w.log || fail "world-size message"
    run 1 w train.update_freq=2 train.max_updates=8 --resume auto || fail "same product refused"
    grep -q "dropout reseeded" w.log || fail "reseed note"
    echo "ok: world-size rule"
    # A decaying schedule resumed with another end would jump along its curve: refused, and
    # accepted once schedule.total_updates pins the old end.
    run 1 cos schedule.type=cosine train.max_updates=6 || fail "cosine"
    sum_before=$(sha256sum cos/last.pt)
    if run 1 cos schedule.type=cosine train.max_updates=9 --resume auto; then fail "cosine end moved on resume"; fi
    grep -q "decays to update 6, this run's to update 9.*schedule.total_updates=6" cos.log || { tail -3 cos.log; fail "schedule end message"; }
    [ "$(sha256sum cos/last.pt)" = "$sum_before" ] || fail "refused resume changed last.pt"
    run 1 cos schedule.type=cosine schedule.total_updates=6 train.max_updates=9 --resume auto || fail "pinned end refused"
    echo "ok: a cosine schedule's end is kept on resume"
    # Fine-tuning: weights from a checkpoint, fresh optimizer, schedule and data order.
    run 1 base train.max_updates=6 || fail base
    run 1 ft train.finetune_from=base/last.pt train.max_updates=3 || { tail -5 ft.log; fail finetune; }
    grep -q "fine-tuning from base/last.pt (update 6); reset optimizer true, schedule true, planner true" ft.log || fail "finetune log"
    "$python" -c "
import torch
c = torch.load('ft/last.pt', weights_only=True)
assert c['update'] == 3 and float(next(iter(c['optimizer'].values()))['step']) == 3.0, (c['update'],)
print('ok: fine-tuned 3 updates from base/last.pt with a fresh optimizer and schedule')" || fail "finetune state"
    # Validation BLEU (distributed over 2 ranks) with best_bleu.pt; parameter agreement check.
    run 2 vb train.update_freq=1 train.max_updates=8 train.validate_bleu=true dist.check_params_interval=2 || { tail -5 vb.log; fail "validate_bleu"; }
    grep -q "| bleu [0-9.]*" vb.log && [ -e vb/best_bleu.pt ] || { grep validation vb.log; fail "no validation BLEU"; }
    echo "ok: validation BLEU on 2 ranks, best_bleu.pt, parameters agree"
    ;;
  corpora)
    # One corpus of weight 1 == data.train_split: the same shards and the same training.
    "$PRE" --config c.yaml data.shard_dir=shards_one "data.train_corpora={train: 1}" > /dev/null 2>&1 || fail "preprocess one corpus"
    for f in manifest.json spm.model train-00000-of-00002.h5 train-00001-of-00002.h5 val-00000-of-00001.h5; do
      cmp -s "shards/$f" "shards_one/$f" || fail "one corpus of weight 1: shards/$f differs"
    done
    run 1 plain train.max_updates=6 || fail "plain run"
    run 1 one_corpus train.max_updates=6 "data.train_corpora={train: 1}" || fail "one-corpus run"
    same plain/last.pt one_corpus/last.pt
    # A second corpus (another 150 generated pairs), weighted 3 to 1.
    "$python" "$here/make_toy_corpus.py" raw_web 150 && mv raw_web/train.de raw/web.de && mv raw_web/train.en raw/web.en
    mix=(data.shard_dir=shards_mix "data.train_corpora={train: 1, web: 3}")
    "$PRE" --config c.yaml "${mix[@]}" > pre_mix.log 2>&1 || { cat pre_mix.log; fail "preprocess two corpora"; }
    grep -q "on 300 + 300 lines" pre_mix.log || fail "SentencePiece was not trained on both corpora: $(cat pre_mix.log)"
    run 1 mix_straight "${mix[@]}" || fail "mixture straight"
    grep -q "training corpora: train (150 pairs, weight 1: 25.0% of micro-batches), web (150 pairs, weight 3: 75.0% of micro-batches)" \
      mix_straight.log || fail "no training corpora line: $(grep -m3 corpora mix_straight.log)"
    run 1 mix_stop "${mix[@]}" debug.fault_update=8 debug.fault_rank=0 && fail "fault not injected"
    run 1 mix_stop "${mix[@]}" --resume auto || fail "mixture resume"
    grep -q "resumed from mix_stop/last.pt at update 6" mix_stop.log || { grep resumed mix_stop.log; fail "mixture resume point"; }
    same mix_straight/last.pt mix_stop/last.pt
    # N ranks == 1 rank (dropout off: its masks are drawn per rank).
    no_dropout=(model.dropout=0 model.attention_dropout=0 train.max_updates=8)
    run 1 mix_np1 "${mix[@]}" "${no_dropout[@]}" || fail "mixture on 1 rank, update_freq 2"
    run 2 mix_np2 "${mix[@]}" "${no_dropout[@]}" train.update_freq=1 || fail "mixture on 2 ranks"
    same mix_np1/last.pt mix_np2/last.pt
    "$python" - mix_straight/metrics.jsonl <<'PY' || fail "metrics.jsonl: tokens per corpus"
import json, sys
train = [r for r in map(json.loads, open(sys.argv[1])) if r["event"] == "train"]
counts = {"train": 0, "web": 0}
for r in train:
    assert set(r["corpus_tgt_tokens"]) == set(counts), r
    for k, v in r["corpus_tgt_tokens"].items():
        counts[k] += v
assert counts["web"] > counts["train"] > 0, counts
print("target tokens per corpus over 14 updates:", counts)
PY
    ;;
  *) fail "unknown mode $mode" ;;
esac
echo "resume $mode: passed"
