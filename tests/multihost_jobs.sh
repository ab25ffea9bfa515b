#!/usr/bin/env bash
# Multi-host jobs on a cluster of network-namespace hosts (tests/cluster/netns_cluster.sh:
# real TCP between hosts, one orted per host), one ctest entry per mode:
#   equivalence   2 hosts x 2 ranks == 1 host x 4 ranks == 1 rank with update_freq 4, bitwise
#   kill          a rank SIGKILLed mid-training
#   stop          a rank SIGSTOPped (hung): the watchdog ends the job; time from SIGSTOP printed
#   cut           one host's link cut mid-training
#   slow          one host's link made very slow (tc): training goes on
#                 (kill, stop, cut: the job ends within dist.timeout_s + 30 s naming what
#                 happened, no process is left, --resume auto then ends bitwise equal to
#                 an uninterrupted run, and no checkpoint is half-written)
#   supervisor    launch/supervise.sh brings a job through two killed ranks to the end,
#                 bitwise equal to an uninterrupted run; bad input is never restarted
#   shared_paths  a host that sees other shards, or not the save_dir, is refused by name
# Skips (exit 77) where this machine cannot make network namespaces.
set -uo pipefail
build=$1 python=$2 mode=$3
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/cluster/netns_cluster.sh

if [ -z "${NETNS_HOSTFILE:-}" ]; then
  # Outside the cluster: make it, run this script inside, and prove it was torn down.
  bash "$cluster" check || { echo "SKIP: network namespaces are not available here (needs root and iproute2)"; exit 77; }
  # Under its own time limit (below ctest's), so that the cluster's teardown always runs.
  timeout 225 bash "$cluster" run 2 --slots 2 -- bash "$0" "$@"
  rc=$?
  [ $rc = 124 ] && echo "FAIL: timed out after 225 s"
  left=$(ip netns list | awk '{print $1}' | grep -c '^nmt-h' || true)
  [ "$left" = 0 ] || { echo "FAIL: $left network namespaces left behind"; exit 1; }
  echo "cluster torn down: no namespace left"
  exit $rc
fi

# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"
read -r -a MH <<< "$NETNS_MPIRUN"  # mpirun across the two hosts (2 slots each)
read -r -a LINKS <<< "$NETNS_LINKS"
timeout_s=8
cluster_toy_job 5  # raw/, c.yaml, shards/ (tests/job_env.sh)

update_of() { "$python" -c "import torch,sys; print(torch.load(sys.argv[1], weights_only=True)['update'])" "$1"; }
hosts2() {  # hosts2 DIR [overrides...]: 2 hosts x 2 ranks
  local dir=$1; shift
  "${MH[@]}" -np 4 "$TRAIN" --config c.yaml train.save_dir="$dir" "$@" >> "$dir.log" 2>&1
}
train_pids() { ip netns pids "$1" 2> /dev/null | while read -r p; do [ "$(cat /proc/$p/comm 2> /dev/null)" = train ] && echo "$p"; done; }
left_behind() {  # train processes still alive in any host
  local h n=0
  for h in $NETNS_HOSTS; do n=$((n + $(train_pids "$h" | wc -l))); done
  echo $n
}
wait_for() {  # wait_for FILE SECONDS
  local i
  for ((i = 0; i < $2 * 10; i++)); do [ -e "$1" ] && return 0; sleep 0.1; done
  return 1
}
# Every checkpoint in DIR loads with its checksum (nothing half-written after a fault).
all_checkpoints_valid() {
  "$python" - "$1" <<'PY' || fail "a checkpoint in $1 is damaged"
import glob, hashlib, sys, torch
for p in sorted(glob.glob(sys.argv[1] + "/*.pt")):
    want = open(p + ".sha256").read().split()[0]
    assert hashlib.sha256(open(p, "rb").read()).hexdigest() == want, p
    torch.load(p, weights_only=True)
print(f"all {len(glob.glob(sys.argv[1] + '/*.pt'))} checkpoints in {sys.argv[1]} valid")
PY
}

# fault NAME ACTION: starts a 2-host job, waits for update_6.pt, runs ACTION (which acts on
# a rank of host 1), measures the time to the job's end, then checks the message, that no
# process is left, that every checkpoint is whole, and that --resume auto ends bitwise
# equal to an uninterrupted run of the same length.
fault() {
  local name=$1 action=$2 expect=$3 restore=${4:-true}
  "${MH[@]}" -np 4 "$TRAIN" --config c.yaml train.save_dir="$name" train.max_updates=100000 > "$name.log" 2>&1 &
  local job=$!
  wait_for "$name/update_6.pt" 60 || { cat "$name.log"; fail "$name: job did not reach update 6"; }
  local victim
  victim=$(train_pids nmt-h1 | head -1)
  [ -n "$victim" ] || fail "$name: no rank found on nmt-h1"
  local t0 ms
  t0=$(date +%s%N)
  $action "$victim"
  wait $job
  local rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  echo "$name: job exited $rc, $((ms / 1000)).$(printf %03d $((ms % 1000))) s after the fault (dist.timeout_s = $timeout_s)"
  [ $rc -ne 0 ] || fail "$name: the job exited 0"
  [ $ms -le $(((timeout_s + 30) * 1000)) ] || fail "$name: took $ms ms > dist.timeout_s + 30 s"
  grep -Eq "$expect" "$name.log" || { cat "$name.log"; fail "$name: no message matching '$expect'"; }
  grep -E "$expect" "$name.log" | head -2
  $restore
  local n
  for _ in $(seq 1 100); do n=$(left_behind); [ "$n" = 0 ] && break; sleep 0.1; done
  [ "$n" = 0 ] || { ps -ef | grep -v grep | grep trainer/train; fail "$name: $n train processes left behind"; }
  echo "$name: no process left behind"
  all_checkpoints_valid "$name"
  local at
  at=$(update_of "$name/last.pt") || fail "$name: last.pt unreadable"
  hosts2 "$name" train.max_updates=$((at + 4)) --resume auto || { tail "$name.log"; fail "$name: resume"; }
  grep -q "resumed from $name/last.pt at update $at" "$name.log" || fail "$name: did not resume from update $at"
  hosts2 "straight_$name" train.max_updates=$((at + 4)) || fail "$name: uninterrupted run"
  same "straight_$name/last.pt" "$name/last.pt"
}

case $mode in
  equivalence)
    hosts2 h2x2 || { cat h2x2.log; fail "2 hosts x 2 ranks"; }
    grep -q "ranks 4 | backend mpi" h2x2.log || fail "not 4 ranks"
    "${MPIRUN[@]}" -np 4 "$TRAIN" --config c.yaml train.save_dir=h1x4 > h1x4.log 2>&1 || { cat h1x4.log; fail "1 host x 4"; }
    "$TRAIN" --config c.yaml train.save_dir=h1x1 train.update_freq=4 > h1x1.log 2>&1 || { cat h1x1.log; fail "1 rank uf 4"; }
    # The traffic really crossed hosts: host 1's link carried the gradients.
    bytes=$(cat "/sys/class/net/${LINKS[1]}/statistics/rx_bytes")
    echo "host 1's link carried $bytes bytes"
    [ "$bytes" -gt 1000000 ] || fail "too little traffic on host 1's link ($bytes bytes)"
    same h2x2/last.pt h1x4/last.pt
    same h2x2/last.pt h1x1/last.pt
    ;;
  kill)
    fault kill "kill -9" "exited on signal 9|Killed"
    ;;
  stop)
    fault stop "kill -STOP" "did not complete within dist.timeout_s = $timeout_s s.*ranks that did not arrive.*nmt-h1"
    ;;
  cut)
    cut() { ip link set "${LINKS[1]}" down; }
    heal() { ip link set "${LINKS[1]}" up; sleep 1; }
    # mpirun's keepalives (tests/cluster/netns_cluster.sh) notice the lost host first; the
    # watchdog is the backstop where only the data connections break.
    fault cut cut "lost communication with a remote daemon|Remote daemon: .* on node nmt-h1|did not complete within dist.timeout_s = $timeout_s s.*did not arrive.*nmt-h1" heal
    ;;
  slow)
    # Host 1's link capped at 10 Mbit/s both ways (tc tbf) while it trains: slower,
    # never stopped, and the result is the same bits.
    hosts2 slow train.max_updates=40 &
    job=$!
    wait_for slow/update_3.pt 60 || fail "slow: no update 3"
    cap="tbf rate 10mbit burst 32kbit latency 400ms"
    tc qdisc add dev "${LINKS[1]}" root $cap || fail "tc on ${LINKS[1]}"
    ip netns exec nmt-h1 tc qdisc add dev eth0 root $cap || fail "tc in nmt-h1"
    t0=$(date +%s)
    wait $job || { cat slow.log; fail "slow: the job failed on a slow link"; }
    echo "slow: updates 4-40 took $(( $(date +%s) - t0 )) s with host 1 at 10 Mbit/s; job finished"
    tc qdisc del dev "${LINKS[1]}" root
    ip netns exec nmt-h1 tc qdisc del dev eth0 root
    hosts2 straight_slow train.max_updates=40 || fail "slow: uninterrupted"
    same straight_slow/last.pt slow/last.pt
    ;;
  supervisor)
    sup=$here/../launch/supervise.sh
    # Two faults: a rank of host 1 killed at update >= 6 of the first attempt, and again
    # at update >= 15 of the second. The supervisor restarts twice and finishes.
    killer() {
      wait_for sup/update_6.pt 120 && kill -9 "$(train_pids nmt-h1 | head -1)"
      wait_for sup/update_15.pt 120 && kill -9 "$(train_pids nmt-h1 | head -1)"
    }
    killer &
    bash "$sup" --max-restarts 3 --backoff 1 --log sup.supervise -- \
      "${MH[@]}" -np 4 "$TRAIN" --config c.yaml train.save_dir=sup train.max_updates=60 > sup.log 2>&1 \
      || { cat sup.log; fail "supervisor: the job did not finish"; }
    wait
    grep "supervise:" sup.log
    [ "$(grep -c 'restarting in' sup.log)" = 2 ] || fail "expected exactly 2 restarts"
    grep -q "job finished after 3 attempt(s), 2 restart(s)" sup.log || fail "no finish line"
    hosts2 straight_sup train.max_updates=60 || fail "uninterrupted"
    same straight_sup/last.pt sup/last.pt
    # Bad input is never restarted.
    bash "$sup" --max-restarts 3 --backoff 1 -- "${MH[@]}" -np 4 "$TRAIN" --config c.yaml train.save_dir=bad data.max_tokenz=3 > bad.log 2>&1
    rc=$?
    [ $rc = 2 ] || { cat bad.log; fail "bad input: supervisor exit $rc, expected 2"; }
    grep -q "bad input, not restarting" bad.log || fail "bad input: no message"
    [ "$(grep -c 'attempt ' bad.log)" = 1 ] || fail "bad input was restarted"
    # Giving up after N restarts, with the last error.
    bash "$sup" --max-restarts 1 --backoff 0 -- "${MH[@]}" -np 4 "$TRAIN" --config c.yaml train.save_dir=gu debug.fault_rank=2 debug.fault_update=2 > gu.log 2>&1
    rc=$?
    [ $rc != 0 ] || fail "give up: exit 0"
    grep -q "giving up after 1 restart(s): last exit $rc.*injected fault on rank 2" gu.log || { cat gu.log; fail "give up message"; }
    echo "supervisor: bad input not restarted (exit 2); gives up after N restarts with the last error"
    ;;
  shared_paths)
    refuse() {  # refuse NAME SETUP EXPECT: host 1 runs SETUP first; the job must be refused
      local name=$1
      echo "$2" > "$NETNS_STATE/setup-nmt-h1.sh"
      hosts2 "$name"
      local rc=$?
      rm -f "$NETNS_STATE/setup-nmt-h1.sh"
      [ $rc = 2 ] || { cat "$name.log"; fail "$name: exit $rc, expected 2 (bad input)"; }
      grep -Eq "$3" "$name.log" || { cat "$name.log"; fail "$name: message"; }
      grep -Eo "$3" "$name.log" | head -1
      [ ! -e "$name/last.pt" ] || fail "$name: trained anyway"
    }
    mkdir -p other && cp -r shards/. other/ && echo >> other/manifest.json
    refuse other_shards "mount --bind $PWD/other $PWD/shards" \
      "config key 'data.shard_dir' = 'shards': rank 2 on host nmt-h1 \(manifest sha256 [0-9a-f]{12}\.\.\., rank 0 on host nmt-h0"
    refuse no_shards "mount -t tmpfs none $PWD/shards" \
      "train\[rank 2 on nmt-h1\]: error: config key 'data.shard_dir' = 'shards' \(c.yaml:1\): no manifest.json there"
    mkdir -p unshared
    refuse unshared "mount -t tmpfs none $PWD/unshared" \
      "config key 'train.save_dir' = 'unshared': rank 2 on host nmt-h1, rank 3 on host nmt-h1 cannot read the file rank 0 \(host nmt-h0\) wrote"
    hosts2 shared train.max_updates=2 || { cat shared.log; fail "shared: a proper run was refused"; }
    ls -a shared | grep -q shared-check && fail "the check's file was left in save_dir"
    echo "shared_paths: other shards, missing shards and an unshared save_dir refused by host; a shared run starts"
    ;;
  *) fail "unknown mode $mode" ;;
esac
echo "multihost $mode: passed"
