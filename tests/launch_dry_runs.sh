#!/usr/bin/env bash
# The launchers' dry runs print the command they would run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
cd "$root"  # the configs below by their paths in the checkout
out=$(bash launch/mpirun_train.sh --dry-run 4 configs/debug.yaml train.max_updates=5)
[[ $out == "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 "*"/trainer/train --config configs/debug.yaml train.max_updates=5 " ]] || fail "mpirun: $out"
out=$(bash launch/multinode_train.sh --dry-run --hostfile launch/hostfile.example 16 configs/debug.yaml)
[[ $out == "mpirun --hostfile launch/hostfile.example -np 16 --map-by slot"*"--config configs/debug.yaml " ]] || fail "multinode: $out"
# NP and CONFIG are checked before mpirun runs (exit 2, one line naming them), dry run or not.
for args in "abc configs/debug.yaml" "0 configs/debug.yaml" "2 /no/such.yaml" "2 configs"; do
  for launcher in "launch/mpirun_train.sh" "launch/multinode_train.sh --hostfile launch/hostfile.example"; do
    rc=0
    # shellcheck disable=SC2086 # the launcher's words and NP CONFIG as separate arguments
    out=$(bash $launcher $args 2>&1) || rc=$?
    want="NP must be a positive integer, got '${args%% *}'"
    [[ $args == 2* ]] && want="CONFIG '${args#2 }' is not a readable file"
    [ $rc = 2 ] && [[ $out == *": $want" ]] && [ "$(grep -c . <<< "$out")" = 1 ] || fail "$launcher $args: exit $rc: $out"
  done
done
out=$(DRY_RUN=1 SLURM_CPUS_PER_TASK=8 bash "$root/launch/slurm_train.sbatch" configs/debug.yaml a.b=1)
[[ $out == "srun --mpi=pmix --kill-on-bad-exit=1 "*"--config configs/debug.yaml train.threads=8 a.b=1 --resume auto " ]] || fail "slurm: $out"
# The Slurm script's dry run is the pre-flight: a missing config and a DRY_RUN that is not 0 or 1
# (which would launch for real) are refused by name, exit 2.
for case in "DRY_RUN=1 configs/x.yaml|config 'configs/x.yaml' is not a readable file" "DRY_RUN=1 configs|config 'configs' is not a readable file" \
            "DRY_RUN=yes configs/debug.yaml|DRY_RUN must be 0 or 1, got 'yes'"; do
  words=${case%%|*} want=${case#*|} rc=0
  out=$(env "${words%% *}" bash "$root/launch/slurm_train.sbatch" "${words#* }" 2>&1) || rc=$?
  [ $rc = 2 ] && [[ $out == *": error: $want"* ]] || fail "slurm $words: exit $rc: $out"
done
# Without a built trainer the launchers stop by name (exit 2: not a fault to restart).
for launcher in "launch/mpirun_train.sh" "launch/multinode_train.sh --hostfile launch/hostfile.example"; do
  rc=0
  # shellcheck disable=SC2086 # the launcher's words as separate arguments
  out=$(NMTRAIN_BUILD=/no/such/build bash $launcher 2 configs/debug.yaml 2>&1) || rc=$?
  [ $rc = 2 ] && [[ $out == *": no trainer at /no/such/build/trainer/train (run launch/build.sh, or set NMTRAIN_BUILD)" ]] ||
    fail "$launcher without a trainer: exit $rc: $out"
done
if bash "$root/launch/multinode_train.sh" --dry-run --hostfile /no/such/file 2 configs/debug.yaml 2> /dev/null; then fail "missing hostfile accepted"; fi
out=$(bash "$root/launch/multinode_train.sh" --dry-run --iface eth1 --hostfile launch/hostfile.example 4 configs/debug.yaml)
[[ $out == *"--mca btl_tcp_if_include eth1 --mca oob_tcp_if_include eth1 -x NCCL_SOCKET_IFNAME=eth1 "* ]] || fail "multinode --iface: $out"
out=$(bash "$root/launch/multinode_train.sh" --dry-run --iface 10.1.0.0/16 --hostfile launch/hostfile.example 4 configs/debug.yaml)
[[ $out == *"--mca oob_tcp_if_include 10.1.0.0/16 -x LD_LIBRARY_PATH"* ]] || fail "multinode --iface CIDR: $out"
if bash "$root/launch/supervise.sh" --max-restarts x -- true 2> /dev/null; then fail "supervise: bad --max-restarts accepted"; fi
bash "$root/launch/supervise.sh" --max-restarts 0 --backoff 0 -- true 2> /dev/null || fail "supervise: a job that succeeds"
bash "$root/launch/supervise.sh" --max-restarts=0 --backoff=0 -- true 2> /dev/null || fail "supervise: --opt=value spelling"
rc=0; out=$(bash "$root/launch/supervise.sh" --max-restarts 0 true 2>&1) || rc=$?
[ $rc = 2 ] && [[ $out == *"error: unknown option 'true' (the command goes after --)"* ]] || fail "supervise without --: exit $rc: $out"
if bash "$root/launch/supervise.sh" --max-restarts 2 --backoff 0 -- bash -c 'exit 2' 2> /dev/null; then fail "supervise: bad input"; fi
n=$(bash "$root/launch/supervise.sh" --max-restarts 2 --backoff 0 -- bash -c 'echo "x: error: boom" >&2; exit 3' 2>&1 | grep -c "attempt " || true)
[ "$n" = 3 ] || fail "supervise: expected 3 attempts of a faulting job, got $n"
# The namespace cluster refuses bad arguments before touching the network (exit 2, named).
out=$(bash "$root/tests/cluster/netns_cluster.sh" up 0 2>&1) && fail "netns_cluster: 0 hosts accepted"
[[ $out == *"host count must be 1..200, got '0'"* ]] || fail "netns_cluster host count: $out"
out=$(bash "$root/tests/cluster/netns_cluster.sh" run 2 --slots x -- true 2>&1) && fail "netns_cluster: bad --slots accepted"
[[ $out == *"--slots must be a positive integer, got 'x'"* ]] || fail "netns_cluster --slots: $out"
out=$(bash "$root/tests/cluster/netns_cluster.sh" frobnicate 2>&1) && fail "netns_cluster: unknown verb accepted"
[[ $out == *"usage:"* ]] || fail "netns_cluster usage: $out"
# The quickstart refuses a CONFIG that is not a file before installing or building anything.
rc=0
out=$(CONFIG=/no/such/recipe.yaml RUN_DIR=/no/such/run bash "$root/launch/quickstart.sh" 2>&1) || rc=$?
[ $rc = 2 ] || fail "quickstart: bad CONFIG exit $rc (expected 2)"
[[ $out == "quickstart.sh: error: CONFIG '/no/such/recipe.yaml' is not a file" ]] || fail "quickstart CONFIG: $out"
[ ! -e /no/such/run ] || fail "quickstart: bad CONFIG created its run directory"
# ... and a raw data directory that does not exist.
rc=0
out=$(RUN_DIR=/no/such/run bash "$root/launch/quickstart.sh" /no/such/raw 2>&1) || rc=$?
[ $rc = 2 ] && [[ $out == "quickstart.sh: error: raw data directory '/no/such/raw' does not exist"* ]] || fail "quickstart raw: exit $rc: $out"
[ ! -e /no/such/run ] || fail "quickstart: a missing raw directory created its run directory"
# SEEDS must be distinct non-negative integers, refused before installing or building anything.
for seeds in "1 x" "3 3" "-1"; do
  rc=0
  out=$(SEEDS="$seeds" RUN_DIR=/no/such/run bash "$root/launch/quickstart.sh" 2>&1) || rc=$?
  [ $rc = 2 ] || fail "quickstart: SEEDS='$seeds' exit $rc (expected 2)"
  [[ $out == "quickstart.sh: error: SEEDS '$seeds': "* ]] || fail "quickstart SEEDS='$seeds': $out"
  [ ! -e /no/such/run ] || fail "quickstart: bad SEEDS created its run directory"
done
# SPLIT is val or test, refused otherwise before anything is installed or built.
rc=0
out=$(SPLIT=dev RUN_DIR=/no/such/run bash "$root/launch/quickstart.sh" 2>&1) || rc=$?
[ $rc = 2 ] && [[ $out == "quickstart.sh: error: SPLIT 'dev': expected val or test" ]] || fail "quickstart SPLIT=dev: exit $rc: $out"
[ ! -e /no/such/run ] || fail "quickstart: a bad SPLIT created its run directory"
# JOBS must be a positive integer, at most SEEDS' members and the CPUs the script may use.
jobs_refused() {  # jobs_refused EXPECTED_MESSAGE_START COMMAND...
  local expected=$1 rc=0 out; shift
  out=$("$@" 2>&1) || rc=$?
  [ $rc = 2 ] && [[ $out == "quickstart.sh: error: JOBS "* ]] && [[ $out == "$expected"* ]] ||
    fail "quickstart: JOBS=$JOBS SEEDS='${SEEDS:-}': exit $rc: $out"
  [ ! -e /no/such/run ] || fail "quickstart: bad JOBS created its run directory"
}
JOBS=0 SEEDS="1 2" RUN_DIR=/no/such/run jobs_refused "quickstart.sh: error: JOBS '0': not a positive integer" bash "$root/launch/quickstart.sh"
JOBS=two SEEDS="1 2" RUN_DIR=/no/such/run jobs_refused "quickstart.sh: error: JOBS 'two': not a positive integer" bash "$root/launch/quickstart.sh"
JOBS=2 RUN_DIR=/no/such/run jobs_refused "quickstart.sh: error: JOBS '2': more than the 0 member(s) SEEDS gives" bash "$root/launch/quickstart.sh"
JOBS=3 SEEDS="1 2" RUN_DIR=/no/such/run jobs_refused "quickstart.sh: error: JOBS '3': more than the 2 member(s) SEEDS gives" bash "$root/launch/quickstart.sh"
JOBS=2 SEEDS="1 2" RUN_DIR=/no/such/run jobs_refused "quickstart.sh: error: JOBS '2': this script may use only 1 CPU(s)" \
  taskset -c 0 bash "$root/launch/quickstart.sh"
# ... counted from the affinity, not from OMP_NUM_THREADS (which `nproc` alone obeys): past the
# JOBS check, the missing raw directory is what is refused.
rc=0
out=$(OMP_NUM_THREADS=1 JOBS=2 SEEDS="1 2" RUN_DIR=/no/such/run taskset -c 0,1 bash "$root/launch/quickstart.sh" /no/such/raw 2>&1) || rc=$?
[ $rc = 2 ] && [[ $out == "quickstart.sh: error: raw data directory '/no/such/raw' does not exist"* ]] ||
  fail "quickstart JOBS=2 under OMP_NUM_THREADS=1: exit $rc: $out"
# EXTRA may not move the run or the raw data behind the quickstart's back, and RAW_DIR must hold
# a corpus in Multi30k's layout: both refused before installing or building anything.
rc=0
out=$(EXTRA="eval.beam=4 train.save_dir=elsewhere" RUN_DIR=/no/such/run bash "$root/launch/quickstart.sh" 2>&1) || rc=$?
[ $rc = 2 ] && [[ $out == "quickstart.sh: error: EXTRA 'train.save_dir=elsewhere': set RUN_DIR or give RAW_DIR instead"* ]] ||
  fail "quickstart EXTRA save_dir: exit $rc: $out"
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
rc=0
out=$(RUN_DIR=/no/such/run bash "$root/launch/quickstart.sh" "$scratch" 2>&1) || rc=$?
[ $rc = 2 ] && [[ $out == "quickstart.sh: error: raw data directory '$scratch' has no train.<lang> files"* ]] ||
  fail "quickstart empty raw: exit $rc: $out"
[ ! -e /no/such/run ] || fail "quickstart: refused input created its run directory"
# A build that fails ends the quickstart by name, even where an earlier build's NMTRAIN_BUILD is
# set (it went on with the old binaries before); nothing is run. The build directory here
# cannot be made (under /dev/null), so launch/build.sh fails at cmake's configure.
mkdir "$scratch/raw" && touch "$scratch/raw/train.de"
rc=0
out=$(BUILD_DIR=/dev/null/build NMTRAIN_BUILD="$root/build" RUN_DIR=/no/such/run bash "$root/launch/quickstart.sh" "$scratch/raw" 2>&1) || rc=$?
[ $rc = 1 ] && [[ $out == *"quickstart.sh: error: launch/build.sh failed (exit "* ]] && [[ $out != *"== preprocess"* ]] ||
  fail "quickstart with a failing build: exit $rc: $out"
rm -r "$scratch/raw"
# build_nccl.sh refuses, before building anything, what is not the pinned NCCL's source.
mkdir -p "$scratch/old/makefiles" "$scratch/notnccl"
printf 'NCCL_MAJOR   := 2\nNCCL_MINOR   := 29\nNCCL_PATCH   := 7\n' > "$scratch/old/makefiles/version.mk"
echo "not a tarball" > "$scratch/bad.tar.gz"
pinned=$(sed -n 's/^NCCL_VERSION=//p' "$root/launch/versions.env")
for case in "/no/such/src|SOURCE '/no/such/src' is neither a directory nor a file" \
            "$scratch/notnccl|SOURCE '$scratch/notnccl' has no makefiles/version.mk: not NCCL's source" \
            "$scratch/bad.tar.gz|SOURCE '$scratch/bad.tar.gz' is not a .tar.gz of NCCL's source" \
            "$scratch/old|SOURCE is NCCL 2.29.7, but launch/versions.env pins NCCL_VERSION=$pinned"; do
  rc=0; out=$(NMTRAIN_CACHE=$scratch/cache bash "$root/launch/build_nccl.sh" "${case%%|*}" 2>&1) || rc=$?
  [ $rc = 2 ] && [ "$out" = "build_nccl.sh: error: ${case#*|}" ] || fail "build_nccl.sh ${case%%|*}: exit $rc: $out"
done
for bad in "NCCL_ARCHS=9x|NCCL_ARCHS: '9x' is not a compute capability such as 80, 90 or 90a" \
           "CUDA_HOME=/no/cuda|no nvcc at /no/cuda/bin/nvcc (set CUDA_HOME to the CUDA toolkit)"; do
  rc=0; out=$(env "${bad%%|*}" NMTRAIN_CACHE="$scratch/cache" bash "$root/launch/build_nccl.sh" "$scratch/old" 2>&1) || rc=$?
  [ $rc = 2 ] && [ "$out" = "build_nccl.sh: error: ${bad#*|}" ] || fail "build_nccl.sh ${bad%%|*}: exit $rc: $out"
done
[ ! -e "$scratch/cache" ] || fail "build_nccl.sh wrote its cache while refusing"
rm -r "$scratch/old" "$scratch/notnccl" "$scratch/bad.tar.gz"
# -h / --help print the script's header and do nothing else (no install, no build, no run).
for s in quickstart.sh build.sh setup.sh run_tests.sh bundle.sh build_nccl.sh mpirun_train.sh multinode_train.sh supervise.sh gpu_check.sh slurm_train.sbatch; do
  rc=0
  out=$(cd "$scratch" && RUN_DIR=/no/such/run bash "$root/launch/$s" --help 2>&1) || rc=$?
  first=$(sed -n '2s/^# \{0,1\}//p' "$root/launch/$s")  # the header's first line, and nothing else printed
  [ $rc = 0 ] && [ "$(head -1 <<< "$out")" = "$first" ] && [[ $out != *"[setup]"* ]] && [ "$(ls -A "$scratch")" = "" ] ||
    fail "$s --help: exit $rc: $out"
done
# ... also found through PATH or a symlink (help reads the script bash opened, not \$0).
(cd / && PATH="$root/launch:$PATH" bash supervise.sh --help | head -1 | grep -q "Restarts a training job") || fail "supervise.sh --help through PATH"
ln -s "$root/launch/supervise.sh" "$scratch/sup" && bash "$scratch/sup" --max-restarts=0 --backoff=0 -- true 2> /dev/null &&
  rm "$scratch/sup" || fail "supervise.sh through a symlink"
# EXTRA over several lines keeps every line (its refusals included).
rc=0
out=$(EXTRA=$'eval.beam=4\ntrain.save_dir=elsewhere' RUN_DIR=/no/such/run bash "$root/launch/quickstart.sh" 2>&1) || rc=$?
[ $rc = 2 ] && [[ $out == *"EXTRA 'train.save_dir=elsewhere'"* ]] || fail "quickstart EXTRA over two lines: exit $rc: $out"
# On/off variables take 0 or 1 only (NMTRAIN_SANITIZE=false must not run the sanitizers), and
# build.sh and setup.sh refuse what they cannot use, by name, before installing anything.
rc=0; out=$(NMTRAIN_SANITIZE=false bash "$root/launch/run_tests.sh" 2>&1) || rc=$?
[ $rc = 2 ] && [ "$out" = "run_tests.sh: error: NMTRAIN_SANITIZE must be 0 or 1, got 'false'" ] || fail "NMTRAIN_SANITIZE: exit $rc: $out"
rc=0; out=$(NMTRAIN_WITH_SLURM=yes bash "$root/launch/setup.sh" 2>&1) || rc=$?
[ $rc = 2 ] && [ "$out" = "setup.sh: error: NMTRAIN_WITH_SLURM must be 0 or 1, got 'yes'" ] || fail "NMTRAIN_WITH_SLURM: exit $rc: $out"
rc=0; out=$(PYTHON=/no/such/python bash "$root/launch/setup.sh" 2>&1) || rc=$?
[ $rc = 2 ] && [[ $out == "setup.sh: error: PYTHON '/no/such/python' is not a program on PATH"* ]] || fail "setup PYTHON: exit $rc: $out"
rc=0; out=$(bash "$root/launch/build.sh" release 2>&1) || rc=$?
[ $rc = 2 ] && [[ $out == "build.sh: error: takes no arguments, got 'release'"* ]] || fail "build.sh argument: exit $rc: $out"
# A BUILD_TARGETS word that is no target is refused by name before anything is built.
rc=0; out=$(BUILD_TARGETS="train trian" bash "$root/launch/build.sh" 2>&1 > /dev/null) || rc=$?
[ $rc = 2 ] && [[ $out == *"build.sh: error: BUILD_TARGETS 'trian' is not a target of this project"* ]] && [[ $out != *"Linking"* ]] ||
  fail "BUILD_TARGETS trian: exit $rc: $out"
# The GPU check and the bundle's env.sh refuse bad input by name, before any work.
out=$(bash "$root/launch/gpu_check.sh" --frobnicate 2>&1) && fail "gpu_check: unknown argument accepted"
[[ $out == "gpu_check.sh: unknown argument '--frobnicate' (usage: gpu_check.sh [--logs DIR])" ]] || fail "gpu_check argument: $out"
out=$(GPU_CHECK_DEVICE=tpu bash "$root/launch/gpu_check.sh" 2>&1) && fail "gpu_check: GPU_CHECK_DEVICE=tpu accepted"
[[ $out == "gpu_check.sh: GPU_CHECK_DEVICE='tpu' is not cuda or cpu" ]] || fail "gpu_check device: $out"
for bad in x 1 "2 0"; do
  out=$(GPU_CHECK_RANKS=$bad bash "$root/launch/gpu_check.sh" 2>&1) && fail "gpu_check: GPU_CHECK_RANKS='$bad' accepted"
  [[ $out == "gpu_check.sh: GPU_CHECK_RANKS='$bad': "*" is not a number of ranks of 2 or more" ]] || fail "gpu_check ranks '$bad': $out"
done
out=$(NMTRAIN_BUILD=/no/such/build bash "$root/launch/gpu_check.sh" 2>&1) && fail "gpu_check: missing build accepted"
[[ $out == "gpu_check.sh: no build directory /no/such/build (set NMTRAIN_BUILD, or source a bundle's env.sh)" ]] || fail "gpu_check build: $out"
for s in launch/{quickstart,setup,build,run_tests,supervise,bundle,build_nccl,gpu_check,gpu_check_ranks,common}.sh bench/gpu_compare.sh bench/members_at_once.sh tests/runners/gpu_smoke.sh tests/cluster/netns_{cluster,rsh}.sh; do
  bash -n "$root/$s" || fail "syntax: $s"
done
echo "launch dry runs: passed"
