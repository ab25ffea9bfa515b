#!/usr/bin/env bash
# The launchers' dry runs print the command they would run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
out=$(bash "$root/launch/mpirun_train.sh" --dry-run 4 configs/x.yaml train.max_updates=5)
[[ $out == "mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 "*"/trainer/train --config configs/x.yaml train.max_updates=5 " ]] || fail "mpirun: $out"
out=$(bash "$root/launch/multinode_train.sh" --dry-run --hostfile "$root/launch/hostfile.example" 16 configs/x.yaml)
[[ $out == "mpirun --hostfile "*"hostfile.example -np 16 --map-by slot"*"--config configs/x.yaml " ]] || fail "multinode: $out"
out=$(DRY_RUN=1 SLURM_CPUS_PER_TASK=8 bash "$root/launch/slurm_train.sbatch" configs/x.yaml a.b=1)
[[ $out == "srun --mpi=pmix --kill-on-bad-exit=1 "*"--config configs/x.yaml train.threads=8 a.b=1 --resume auto " ]] || fail "slurm: $out"
if bash "$root/launch/multinode_train.sh" --dry-run --hostfile /no/such/file 2 c.yaml 2> /dev/null; then fail "missing hostfile accepted"; fi
for s in gpu_smoke.sh quickstart.sh setup.sh build.sh run_tests.sh; do bash -n "$root/launch/$s" || fail "syntax: $s"; done
echo "launch dry runs: passed"
