#!/usr/bin/env bash
# On a GPU machine: checks our GPU path end to end on a toy corpus and prints a PASS/FAIL table
# (about a minute on one H200; each check has a time limit, so a hang shows as a FAIL). Uses NMTRAIN_BUILD and NMTRAIN_VENV, as launch/build.sh prints
# them, or as a bundle's env.sh sets them (launch/bundle.sh):
#   source bundle/env.sh && bash launch/gpu_check.sh [--logs DIR]
# --logs DIR keeps each check's log there (default: a temporary directory, removed).
# Exit 0 when every check passed. GPU_CHECK_DEVICE=cpu rehearses the script on a machine
# without a GPU: checks that need one are then SKIP, the others run on the CPU.
# The np<N>_ checks run N ranks on the one GPU (GPU_CHECK_RANKS, default "2 4"; "" for none):
# dist.shared_gpu=allow, which needs the NCCL of launch/build_nccl.sh loaded (a bundle made
# with NMTRAIN_NCCL_LIB); their rehearsal on a CPU uses the MPI backend.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=launch/common.sh
source "$root/launch/common.sh"
help_requested_then_exit "${BASH_SOURCE[0]}" "$@"
logs= one=
while [ $# -gt 0 ]; do
  case $1 in
    --one) [ -n "${2:-}" ] || { echo "gpu_check.sh: --one needs a check's name" >&2; exit 2; }
           one=$2; shift 2 ;;  # internal: run one check in $GPU_CHECK_WORK (see check below)
    --logs) [ -n "${2:-}" ] || { echo "gpu_check.sh: --logs needs a directory" >&2; exit 2; }
            logs=$2; shift 2 ;;
    *) echo "gpu_check.sh: unknown argument '$1' (usage: gpu_check.sh [--logs DIR])" >&2; exit 2 ;;
  esac
done
build=${NMTRAIN_BUILD:-$root/build}
build=$(cd "$build" 2> /dev/null && pwd) || { echo "gpu_check.sh: no build directory ${NMTRAIN_BUILD:-$root/build} (set NMTRAIN_BUILD, or source a bundle's env.sh)" >&2; exit 2; }
python=${NMTRAIN_PYTHON:-${NMTRAIN_VENV:+$NMTRAIN_VENV/bin/python}}
python=${python:-python3}
command -v "$python" > /dev/null || { echo "gpu_check.sh: no Python '$python' (set NMTRAIN_PYTHON or NMTRAIN_VENV, or source a bundle's env.sh)" >&2; exit 2; }
device=${GPU_CHECK_DEVICE:-cuda}
case $device in cuda|cpu) ;; *) echo "gpu_check.sh: GPU_CHECK_DEVICE='$device' is not cuda or cpu" >&2; exit 2 ;; esac
for n in ${GPU_CHECK_RANKS-2 4}; do
  [[ $n =~ ^[2-9]$|^[1-9][0-9]+$ ]] || { echo "gpu_check.sh: GPU_CHECK_RANKS='${GPU_CHECK_RANKS}': '$n' is not a number of ranks of 2 or more" >&2; exit 2; }
done
[ -x "$build/trainer/train" ] || { echo "gpu_check.sh: no $build/trainer/train (set NMTRAIN_BUILD, or source a bundle's env.sh)" >&2; exit 2; }
if [ -z "$one" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  [ -n "$logs" ] && { mkdir -p "$logs" && logs=$(cd "$logs" && pwd) || exit 2; }
  cd "$work" || exit 1
fi
TRAIN=$build/trainer/train PRE=$build/data/preprocess EVAL=$build/eval/evaluate TRANSLATE=$build/eval/translate
export OMPI_MCA_ess_singleton_isolated=1  # one process needs no orted
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
gpu=(train.device="$device" train.threads=4)

# check NAME TIMEOUT_S [FUNCTION]: runs FUNCTION (default NAME) in a process of its own (this
# script with --one, under errexit) that `timeout` ends with everything it started; its last
# line is the table's detail. A function exits 77 to SKIP.
names=() verdicts=() seconds=() details=()
check() {
  local name=$1 limit=$2 fn=${3:-$1} t0 rc
  t0=$(date +%s%N)
  GPU_CHECK_WORK=$work timeout -k 10 "$limit" bash "$root/launch/gpu_check.sh" --one "$fn" > "$name.log" 2>&1
  rc=$?
  local verdict=PASS
  [ $rc = 77 ] && verdict=SKIP
  [ $rc != 0 ] && [ $rc != 77 ] && verdict=FAIL
  [ $rc = 124 ] && echo "timed out after ${limit} s" >> "$name.log"
  names+=("$name") verdicts+=("$verdict") seconds+=("$((($(date +%s%N) - t0) / 1000000000))")
  details+=("$(grep -v '^\s*$' "$name.log" | tail -1 | cut -c1-150)")
  [ -n "$logs" ] && cp "$name.log" "$logs/"
  printf '%-22s %s\n' "$name" "$verdict" >&2
}
needs_gpu() { [ "$device" = cuda ] || { echo "needs a GPU (GPU_CHECK_DEVICE=cpu)"; exit 77; }; }
last_loss() { "$python" -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if "\"train\"" in l]; print(r[int(sys.argv[2])]["loss"])' "$@"; }
train() { "$TRAIN" --config c.yaml "${gpu[@]}" "$@"; }

environment() {
  if [ "$device" = cuda ]; then nvidia-smi -L; fi
  if ldd "$TRAIN" | grep "not found"; then return 1; fi
  "$python" - "$device" <<'PY'
import sys, torch
line = f"torch {torch.__version__}"
if sys.argv[1] == "cuda":
    assert torch.cuda.is_available(), "torch sees no CUDA device"
    line += f", CUDA {torch.version.cuda}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, {torch.cuda.get_device_name(0)} x {torch.cuda.device_count()}"
print(line)
PY
}

nccl_collectives() {
  needs_gpu
  "${MPIRUN[@]}" -np 1 "$build/tests/nmt_tests" --gtest_filter='NcclBackend.*' --gtest_color=no | tee gtest.out
  if grep -q SKIPPED gtest.out; then return 1; fi
  grep -q "PASSED" gtest.out
  echo "$(grep -c '^\[       OK' gtest.out) NCCL tests passed at world size 1: every collective in fp32/fp64/bf16/fp16, reducer hooks on CUDA"
}

# The same weights and batch, no dropout, IEEE fp32 on both: the first update's loss and
# gradient norm agree within fp32 summation-order noise, and so do the weights after 10.
cuda_vs_cpu() {
  needs_gpu
  local same=(model.dropout=0 train.tf32=false train.max_updates=10 train.threads=4)
  "$TRAIN" --config c.yaml "${same[@]}" train.device=cpu train.save_dir=cpu
  "$TRAIN" --config c.yaml "${same[@]}" train.device=cuda train.save_dir=gpu
  "$python" - <<'PY'
import json, torch
first = lambda d: next(json.loads(l) for l in open(d + "/metrics.jsonl") if '"train"' in l)
c, g = first("cpu"), first("gpu")
for k in ("loss", "grad_norm"):
    rel = abs(c[k] - g[k]) / abs(c[k])
    assert rel < (1e-5 if k == "loss" else 1e-4), f"update 1 {k}: cpu {c[k]} cuda {g[k]} (relative {rel:.2e})"
a, b = (torch.load(d + "/last.pt", map_location="cpu", weights_only=True)["model"] for d in ("cpu", "gpu"))
worst = max(((a[k] - b[k]).abs().max() / a[k].abs().max().clamp_min(1e-12)).item() for k in a)
assert worst < 1e-3, f"weights after 10 updates differ by {worst:.2e} (relative to each tensor's largest)"
print(f"update 1 loss {g['loss']:.6f} (cpu {c['loss']:.6f}), grad norm rel diff {abs(c['grad_norm']-g['grad_norm'])/c['grad_norm']:.1e}; weights after 10 updates within {worst:.1e}")
PY
}

# loss_falls RUN_DIR NAME: the loss of the last 10 updates is below 0.8 x the first 10's.
loss_falls() {
  "$python" - "$1/metrics.jsonl" "$2" <<'PY'
import json, sys
r = [json.loads(l)["loss"] for l in open(sys.argv[1]) if '"train"' in l]
early, late = sum(r[:10]) / 10, sum(r[-10:]) / 10
assert late < 0.8 * early, f"{sys.argv[2]}: loss {early:.3f} -> {late:.3f}"
print(f"{sys.argv[2]} {early:.2f}->{late:.2f}")
PY
}

# Each precision trains: the loss falls (loss_falls).
precisions() {
  local p out=()
  for p in fp32 bf16 fp16; do
    [ "$device" = cpu ] && [ "$p" != fp32 ] && continue
    train train.precision=$p train.save_dir=p_$p > p_$p.log 2>&1 || { tail -5 p_$p.log; return 1; }
    out+=("$(loss_falls p_$p $p)") || return 1
  done
  echo "loss of updates 1-10 -> 51-60: ${out[*]}"
}

# fp16 gradients that overflow above a loss scale of 16384 skip updates 1 and 2, halving the scale.
fp16_overflow() {
  needs_gpu
  train train.precision=fp16 train.max_updates=6 debug.fp16_overflow_above=16384 train.save_dir=fp16 2>&1 | tee fp16.out
  grep -q "update 1: fp16 gradient overflow, update skipped, loss scale now 32768" fp16.out
  grep -q "update 2: fp16 gradient overflow, update skipped, loss scale now 16384" fp16.out
  [ "$(grep -c 'fp16 gradient overflow' fp16.out)" = 2 ]
  echo "updates 1, 2 skipped (scale 65536 -> 32768 -> 16384), then trained to update 6"
}

same_weights() {  # same A B TOLERANCE: model and Adam state equal (0: bit for bit)
  "$python" - "$@" <<'PY'
import sys, torch
a, b = (torch.load(p, map_location="cpu", weights_only=True) for p in sys.argv[1:3])
tol = float(sys.argv[3])
assert a["update"] == b["update"], (a["update"], b["update"])
pairs = [(a["model"][k], b["model"][k], k) for k in a["model"]]
pairs += [(a["optimizer"][k][s], b["optimizer"][k][s], k + "." + s) for k in a["optimizer"] for s in a["optimizer"][k]]
diff = max(((x.double() - y.double()).abs().max() / x.double().abs().max().clamp_min(1e-12)).item() for x, y, _ in pairs)
bad = [n for x, y, n in pairs if not torch.equal(x, y)]
assert (not bad) if tol == 0 else diff <= tol, f"update {a['update']}: {len(bad)} tensors differ, largest relative {diff:.2e}: {bad[:3]}"
print(f"update {a['update']}: " + ("bit for bit" if not bad else f"largest relative difference {diff:.1e} (<= {tol})"))
PY
}

# SIGTERM mid-run: exit 0 with a checkpoint of the update reached; --resume auto finishes the run.
sigterm_resume() {
  "$TRAIN" --config c.yaml "${gpu[@]}" train.max_updates=100000 train.save_dir=term > term.log 2>&1 &
  local pid=$! n=0
  until grep -q '"update":40,' term/metrics.jsonl 2>/dev/null; do
    sleep 0.2; n=$((n + 1)); [ $n -lt 600 ] || { tail -5 term.log; return 1; }
  done
  kill -TERM $pid
  local rc=0; wait $pid || rc=$?
  [ $rc = 0 ] || { tail -5 term.log; echo "train exited $rc after SIGTERM"; return 1; }
  local k; k=$(grep -o "stopped by signal 15 after update [0-9]*" term.log | grep -o "[0-9]*$" || true)
  [ -n "$k" ] && [ -f term/last.pt ] || { tail -5 term.log; return 1; }
  train train.max_updates=$((k + 10)) train.save_dir=term --resume auto > term2.log 2>&1 || { tail -5 term2.log; return 1; }
  grep -q "resumed from term/last.pt at update $k " term2.log || { tail -5 term2.log; return 1; }
  echo "SIGTERM at update $k: exit 0 and term/last.pt; --resume auto went on from update $k to $((k + 10))"
}

# Stopped at 10 and resumed to 20 == 20 straight: bitwise under debug.deterministic, and
# within a stated tolerance without it (atomics in CUDA kernels sum in varying order).
resume_exact() {
  local mode tol out=()
  for mode in true false; do
    tol=0; [ $mode = false ] && tol=1e-3
    train debug.deterministic=$mode train.max_updates=20 train.save_dir=straight_$mode > s_$mode.log 2>&1 || { tail -5 s_$mode.log; return 1; }
    train debug.deterministic=$mode train.max_updates=10 train.save_dir=resumed_$mode > r_$mode.log 2>&1 || { tail -5 r_$mode.log; return 1; }
    train debug.deterministic=$mode train.max_updates=20 train.save_dir=resumed_$mode --resume auto >> r_$mode.log 2>&1 || { tail -5 r_$mode.log; return 1; }
    out+=("deterministic=$mode: $(same_weights straight_$mode/last.pt resumed_$mode/last.pt $tol)") || return 1
  done
  printf '%s; ' "${out[@]}"; echo
}

# The checkpoint of a GPU run loads with torch.load(weights_only=True) on a CPU.
torch_load() {
  "$python" - p_fp32/last.pt <<'PY'
import sys, torch
c = torch.load(sys.argv[1], map_location="cpu", weights_only=True)
t = c["model"]
assert all(v.device.type == "cpu" for v in t.values())
print(f"{sys.argv[1]}: update {c['update']}, {len(t)} tensors, {sum(v.numel() for v in t.values())} parameters")
PY
}

# evaluate and translate on the GPU give the CPU's hypotheses (beam 3, the fp32 model).
decode_vs_cpu() {
  needs_gpu
  local ck=p_fp32/last.pt
  "$EVAL" --config c.yaml --checkpoint $ck --split test --output hyp_cpu.txt train.device=cpu | tee ev_cpu.out
  "$EVAL" --config c.yaml --checkpoint $ck --split test --output hyp_gpu.txt train.device=cuda train.tf32=false --verbose | tee ev_gpu.out
  "$TRANSLATE" --config c.yaml --checkpoint $ck --input raw/test_2016_flickr.de train.device=cpu > tr_cpu.txt
  "$TRANSLATE" --config c.yaml --checkpoint $ck --input raw/test_2016_flickr.de train.device=cuda train.tf32=false > tr_gpu.txt
  local n same_ev same_tr
  n=$(wc -l < hyp_cpu.txt)
  same_ev=$(paste -d '\t' hyp_cpu.txt hyp_gpu.txt | awk -F'\t' '$1==$2' | wc -l)
  same_tr=$(paste -d '\t' tr_cpu.txt tr_gpu.txt | awk -F'\t' '$1==$2' | wc -l)
  [ "$n" -gt 0 ] || { echo "evaluate wrote no hypotheses"; return 1; }
  if [ "$same_ev" -lt $((n * 9 / 10)) ] || [ "$same_tr" -lt $((n * 9 / 10)) ]; then
    echo "GPU and CPU differ: evaluate $same_ev/$n, translate $same_tr/$n identical"; return 1
  fi
  echo "identical hypotheses: evaluate $same_ev/$n, translate $same_tr/$n; BLEU cpu $(grep -o 'BLEU[^|]*' ev_cpu.out | head -1) / gpu $(grep -o 'BLEU[^|]*' ev_gpu.out | head -1)"
}

# Two ranks on one GPU under NCCL: refused with our message, before NCCL starts.
shared_gpu_refused() {
  needs_gpu
  local gpus; gpus=$(nvidia-smi -L | wc -l)
  local rc=0
  "${MPIRUN[@]}" -np $((gpus + 1)) "$TRAIN" --config c.yaml train.device=cuda dist.backend=nccl train.save_dir=two > two.log 2>&1 || rc=$?
  cat two.log
  if [ $rc != 2 ] || ! grep -q "dist.backend=nccl needs a GPU of its own for every rank" two.log; then
    echo "exit $rc without the refusal"; return 1
  fi
  echo "exit $rc: $(grep -m1 -o 'error: dist.backend=nccl needs.*' two.log | cut -c1-110)"
}

# shellcheck source=launch/gpu_check_ranks.sh
source "$root/launch/gpu_check_ranks.sh"  # the checks of several ranks sharing the GPU

if [ -n "$one" ]; then
  cd "$GPU_CHECK_WORK" || exit 1
  set -e
  "$one"
  exit
fi

# The toy corpus and a model small enough for seconds per run, large enough to learn.
"$python" "$root/tests/make_toy_corpus.py" raw 400 > /dev/null
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 2, max_tokens: 400}
model: {d_model: 64, ffn_dim: 128, heads: 4, encoder_layers: 2, decoder_layers: 2, dropout: 0.1}
schedule: {type: inverse_sqrt, lr: 0.003, warmup_updates: 10}
train: {max_updates: 60, log_interval: 1, validate_interval_updates: 30, save_interval_updates: 10, keep_last: 0}
eval: {beam: 3}
YAML
"$PRE" --config c.yaml > preprocess.log 2>&1 || { cat preprocess.log; echo "gpu_check.sh: preprocess failed" >&2; exit 1; }

check environment 60
check nccl_collectives 120
check cuda_vs_cpu 120
check precisions 180
check fp16_overflow 60
check sigterm_resume 120
check resume_exact 240
check torch_load 60
check decode_vs_cpu 120
check shared_gpu_refused 60
# Several ranks on the one GPU (dist.shared_gpu=allow): GPU_CHECK_RANKS, default 2 and 4.
for n in ${GPU_CHECK_RANKS-2 4}; do
  export GPU_CHECK_NP=$n
  check "np${n}_equals_np1" 240 ranks_equal_one
  check "np${n}_sums_vs_mpi" 120 sums_vs_mpi
  check "np${n}_overlap" 180 overlap_profile
  check "np${n}_watchdog" 90 watchdog_stop
  check "np${n}_sigterm_resume" 180 ranks_sigterm_resume
  check "np${n}_precisions" 180 ranks_precisions
done
for n in 1 ${GPU_CHECK_RANKS-2 4}; do
  export GPU_CHECK_NP=$n
  check "update_time_np$n" 120 update_time
done

failed=0
printf '\n| check | result | s | detail |\n| --- | --- | --- | --- |\n'
for i in "${!names[@]}"; do
  printf '| %s | %s | %s | %s |\n' "${names[$i]}" "${verdicts[$i]}" "${seconds[$i]}" "${details[$i]//|//}"
  [ "${verdicts[$i]}" = FAIL ] && failed=$((failed + 1))
done
echo "gpu_check.sh: $failed check(s) failed on $device"
[ $failed = 0 ]
