# The checks of launch/gpu_check.sh that run several ranks on one GPU (dist.shared_gpu=allow,
# which needs NCCL 2.30 or later: launch/build_nccl.sh). Sourced by gpu_check.sh, which runs
# each at GPU_CHECK_NP ranks (2, then 4). On a CPU rehearsal (GPU_CHECK_DEVICE=cpu) the MPI
# backend stands in for NCCL, so the script's own logic is exercised without a GPU.
# shellcheck shell=bash
np=${GPU_CHECK_NP:-2}
# One thread a rank, the single-rank runs too: CPU products sum in another order on more threads.
alone=(train.device="$device" train.threads=1)
if [ "$device" = cuda ]; then
  ranks=("${alone[@]}" dist.backend=nccl dist.shared_gpu=allow)
else
  ranks=("${alone[@]}" dist.backend=mpi)
fi
ranked() { "${MPIRUN[@]}" -np "$np" "$TRAIN" --config c.yaml "${ranks[@]}" "$@"; }
fresh() {  # fresh NAME: an empty directory np<N>_NAME for this check's runs (checks share a folder)
  rm -rf "np${np}_$1" && mkdir "np${np}_$1" && echo "np${np}_$1"
}
wait_for_update() {  # wait_for_update DIR N LOG: until DIR's metrics reach update N (90 s at most)
  local n=0
  until grep -q "\"update\":$2," "$1/metrics.jsonl" 2> /dev/null; do
    sleep 0.2; n=$((n + 1)); [ $n -lt 450 ] || { tail -5 "$3"; return 1; }
  done
}
# The pid of the train process that is rank $1 of this check's job (5 s to appear): by its rank
# and by its working directory, this check's own, so that another job's ranks (ctest -j runs the
# mpirun tests beside this one) are never signalled.
rank_pid() {
  local p i
  for ((i = 0; i < 50; i++)); do
    for p in $(pgrep -x train); do
      [ "$(readlink "/proc/$p/cwd" 2> /dev/null)" = "$(pwd -P)" ] || continue
      { tr '\0' '\n' < "/proc/$p/environ"; } 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "$p"; return; }
    done
    sleep 0.1
  done
  echo "no train process of rank $1 found" >&2
  return 1
}

# -np N == -np 1 with train.update_freq=N: bit for bit with deterministic kernels and rank-order
# sums (debug.deterministic, dist.deterministic_reduce); without them within 1e-2 of each
# tensor's largest value (20 Adam updates amplify summation-order differences: 1.7e-3 at 4 ranks
# in the CPU rehearsal). No dropout: its masks come from each rank's own stream, not from the
# micro-batch's place in the update.
ranks_equal_one() {
  local mode tol out=() d; d=$(fresh equal)
  for mode in true false; do
    tol=0; [ $mode = false ] && tol=1e-2
    local same=(debug.deterministic=$mode dist.deterministic_reduce=$mode train.max_updates=20 model.dropout=0)
    local n=$d/n_$mode one=$d/one_$mode
    ranked "${same[@]}" train.save_dir=$n > $n.log 2>&1 || { tail -5 $n.log; return 1; }
    "$TRAIN" --config c.yaml "${alone[@]}" "${same[@]}" train.update_freq="$np" train.save_dir=$one > $one.log 2>&1 || { tail -5 $one.log; return 1; }
    out+=("deterministic=$mode: $(same_weights $one/last.pt $n/last.pt $tol)") || return 1
  done
  grep -q "ranks $np | backend" $d/n_true.log || { grep -m1 "ranks" $d/n_true.log; echo "not $np ranks"; return 1; }
  printf '%s; ' "${out[@]}"; echo "$(grep -m1 -o 'backend [^|]*' $d/n_true.log)"
}

# NCCL's sums against the MPI backend's in every dtype, and 16-bit sums within their rounding
# bound of the fp32 sum (tests/dist_test.cpp, NcclBackend.*), at N ranks on the GPU.
sums_vs_mpi() {
  needs_gpu
  "${MPIRUN[@]}" -np "$np" "$build/tests/nmt_tests" --gtest_filter='NcclBackend.*:Communicator.*' --gtest_color=no > gtest.out 2>&1
  local passed; passed=$(grep -c '^\[  PASSED  \]' gtest.out)
  if grep -q '^\[  FAILED  \]' gtest.out || [ "$passed" != "$np" ]; then grep -B3 -A3 'Failure\|FAILED' gtest.out | head -30; return 1; fi
  grep -q '^\[       OK \] NcclBackend.SumsMatchTheMpiBackendAndSixteenBitBounds' gtest.out || { echo "the sums test did not run"; return 1; }
  echo "$np ranks passed ($(grep -c '^\[       OK' gtest.out) tests OK in all): NCCL sums == MPI sums, 16-bit within bound"
}

# The bucketed reducer starts all-reduces during backward: in a profile of rank 0 (train
# --benchmark --profile), NCCL kernels run while backward's kernels do; with dist.overlap=false
# they do not (tools/profile_summary.py's "collectives" figures).
overlap_profile() {
  needs_gpu
  local o out=() d; d=$(fresh overlap)
  for o in true false; do
    ranked dist.overlap=$o dist.bucket_mb=0.25 --warmup 5 --benchmark 10 --profile $d/trace_$o.json > $d/prof_$o.log 2>&1 || { tail -5 $d/prof_$o.log; return 1; }
    "$python" "$root/tools/profile_summary.py" $d/trace_$o.json --updates 10 --json > $d/prof_$o.json || return 1
    out+=("$("$python" - $d/prof_$o.json "$o" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])).get("collectives")
assert c and c["kernels"] > 0, "no NCCL kernel in the profile"
during = c["during_backward_ms"]
if sys.argv[2] == "true":
    assert during > 0, f"no NCCL kernel ran during backward ({c})"
print(f"overlap={sys.argv[2]}: {c['kernels']} NCCL kernels, {c['busy_ms']:.2f} ms, {during:.2f} ms during backward")
PY
)") || return 1
  done
  printf '%s; ' "${out[@]}"; echo
}

# One rank SIGSTOPped mid-run (hung): the job ends within dist.timeout_s + 30 s, and the message
# names the rank that did not arrive.
watchdog_stop() {
  local limit=20 d; d=$(fresh hang)
  ranked train.max_updates=100000 dist.timeout_s=$limit train.save_dir=$d > $d.log 2>&1 &
  local job=$!
  wait_for_update $d 20 $d.log || { kill $job; return 1; }
  local victim; victim=$(rank_pid 1) || { kill $job; return 1; }
  local t0 rc=0; t0=$(date +%s)
  kill -STOP "$victim"
  wait $job || rc=$?
  local took=$(($(date +%s) - t0))
  kill -9 "$victim" 2> /dev/null || true
  [ $rc != 0 ] || { echo "the job exited 0 with a rank stopped"; return 1; }
  [ $took -le $((limit + 30)) ] || { tail -5 $d.log; echo "ended after $took s > dist.timeout_s + 30"; return 1; }
  local said; said=$(grep -m1 -o "did not arrive[^;]*" $d.log) || { tail -5 $d.log; echo "no message naming the rank"; return 1; }
  [[ $said == *": 1 ("* ]] || { echo "message names another rank: $said"; return 1; }
  echo "rank 1 stopped: exit $rc after $took s (dist.timeout_s $limit): '$said'"
}

# SIGTERM to the ranks (as Slurm sends it) writes one checkpoint and exits 0; --resume auto
# then ends bit for bit where an uninterrupted run of the same length does.
ranks_sigterm_resume() {
  local same=(debug.deterministic=true dist.deterministic_reduce=true) d; d=$(fresh term)
  ranked "${same[@]}" train.max_updates=100000 train.save_dir=$d/run > $d/run.log 2>&1 &
  local job=$! rc=0
  wait_for_update $d/run 30 $d/run.log || { kill $job; return 1; }
  local r pids=()
  for ((r = 0; r < np; r++)); do pids+=("$(rank_pid $r)") || { kill $job; return 1; }; done
  kill -TERM "${pids[@]}"  # the ranks at once, as Slurm signals them; not mpirun
  wait $job || rc=$?
  [ $rc = 0 ] || { tail -5 $d/run.log; echo "exit $rc after SIGTERM"; return 1; }
  local k; k=$(grep -m1 -o "stopped by signal 15 after update [0-9]*" $d/run.log | grep -o "[0-9]*$") || { tail -5 $d/run.log; return 1; }
  ranked "${same[@]}" train.max_updates=$((k + 10)) train.save_dir=$d/run --resume auto >> $d/run.log 2>&1 || { tail -5 $d/run.log; return 1; }
  ranked "${same[@]}" train.max_updates=$((k + 10)) train.save_dir=$d/straight > $d/straight.log 2>&1 || { tail -5 $d/straight.log; return 1; }
  echo "SIGTERM after update $k, resumed to $((k + 10)): $(same_weights $d/straight/last.pt $d/run/last.pt 0)"
}

# bf16 and fp16 train across the ranks: the loss falls (loss_falls).
ranks_precisions() {
  needs_gpu
  local p out=() d; d=$(fresh precisions)
  for p in bf16 fp16; do
    ranked train.precision=$p train.save_dir=$d/$p > $d/$p.log 2>&1 || { tail -5 $d/$p.log; return 1; }
    out+=("$(loss_falls $d/$p $p)") || return 1
  done
  echo "$np ranks, loss of updates 1-10 -> 51-60: ${out[*]}"
}

# For the record, not as a speed claim: ms per update at this many ranks sharing the device
# (train --benchmark; each rank's micro-batch is the config's, so N ranks do N times the work).
update_time() {
  local d; d=$(fresh bench)
  ranked --warmup 5 --benchmark 20 > $d.log 2>&1 || { tail -5 $d.log; return 1; }
  "$python" - $d.log "$np" <<'PY'
import json, sys
line = next(l for l in open(sys.argv[1]) if l.startswith("{"))
b = json.loads(line)
print(f"{sys.argv[2]} ranks: {1000 * b['seconds'] / b['updates']:.1f} ms per update, {b['tgt_tokens_per_s']:.0f} tgt tok/s in all")
PY
}
