"""tools/sweeplib/points.py: the machine a point trained on, as its table's CPU column gives it.
On a CPU the column is the CPU model; a session whose train.log start line names a GPU (train
logs `device cuda:0 (NAME)`) is recorded as "NAME (host: CPU)" in place of the host CPU alone;
start lines written before the session (an earlier session's) do not count."""
import os
import sys
import tempfile
import types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))

from sweeplib.points import machine_label, record_machine  # noqa: E402

HOST = "Intel(R) Xeon(R) Processor (family 6, model 207)"
CPU_START = ("2026-11-27 22:49:09 | model: 2349568 parameters | device cpu | ranks 1 | backend mpi | "
             "325 updates/epoch | threads 2 | gemm onednn | attention short\n")
GPU_START = ("2026-11-27 22:49:09 | model: 2349568 parameters | device cuda:0 (NVIDIA H100 80GB HBM3) | ranks 1 | "
             "backend nccl | 325 updates/epoch | threads 2 | gemm mkl (CUDA: no CPU GEMM) | attention short\n")
GPU_LABEL = f"NVIDIA H100 80GB HBM3 (host: {HOST})"


def check(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}")
    print(f"ok: {what}")


check(machine_label(HOST, CPU_START) == HOST, "a CPU session is its CPU model")
check(machine_label(HOST, "") == HOST, "a session that logged no start line is its CPU model")
check(machine_label(HOST, CPU_START + GPU_START) == GPU_LABEL, "a GPU start line names the GPU and its host")

with tempfile.TemporaryDirectory() as tmp:
    ctx = types.SimpleNamespace(cpu=HOST, path=lambda point, name: os.path.join(tmp, name))
    log = os.path.join(tmp, "train.log")
    with open(log, "w") as f:
        f.write(GPU_START)  # an earlier session, on a GPU
    start = os.path.getsize(log)
    with open(log, "a") as f:
        f.write(CPU_START)  # this session, on the CPU
    state = {"cpus": [HOST]}
    record_machine(ctx, None, state, start, added=True)
    check(state["cpus"] == [HOST], "an earlier session's GPU line does not relabel this CPU session")

    start = os.path.getsize(log)
    with open(log, "a") as f:
        f.write(GPU_START)  # this session, on a GPU of the same host
    record_machine(ctx, None, state, start, added=True)
    check(state["cpus"] == [GPU_LABEL], "the GPU takes the place of the host CPU this session recorded")

    state = {"cpus": [HOST]}
    record_machine(ctx, None, state, start, added=False)
    check(state["cpus"] == [HOST, GPU_LABEL], "a CPU an earlier session recorded stays beside the GPU")
    record_machine(ctx, None, state, start, added=False)
    check(state["cpus"] == [HOST, GPU_LABEL], "recorded once")
print("PASS")
