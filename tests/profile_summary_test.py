#!/usr/bin/env python3
"""tools/profile_summary.py on a hand-made Chrome trace, and its refusals.

    profile_summary_test.py SOURCE_DIR

1. A trace whose figures are counted by hand: nested CPU operators on two threads (self
   time = own time minus children's), overlapping GPU kernels (busy time counts the overlap
   once), CUDA runtime calls and copies; --updates 2 halves every per-update figure.
2. Collectives: NCCL kernels against backward's kernels (launched inside an autograd
   evaluate_function operator, matched by correlation id), overlap counted by hand; a trace
   without NCCL has none.
3. Refusals: a missing file, a file that is not JSON, JSON with no traceEvents, an event
   without ts: exit 2 and one line naming the file.
"""
import json
import pathlib
import subprocess
import sys
import tempfile

SRC = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1]).resolve()
TOOL = SRC / "tools" / "profile_summary.py"
failures = []


def check(what, cond):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def ev(cat, name, ts, dur, tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": tid, "ts": ts, "dur": dur}


# Thread 1: A [0,100) holds B [10,40) and C [50,70), which holds D [55,60).
#   self: A 100-30-20 = 50, B 30, C 20-5 = 15, D 5.
# Thread 2: A [0,10): self 10 (another thread: not A's child on thread 1).
# Kernels: k1 [0,10) and [20,30), k2 [25,35): busy 10 + 15 = 25 of the span [0,100).
TRACE = {"traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "train"}},
    ev("cpu_op", "A", 0, 100), ev("cpu_op", "B", 10, 30), ev("cpu_op", "C", 50, 20), ev("cpu_op", "D", 55, 5),
    ev("cpu_op", "A", 0, 10, tid=2),
    ev("kernel", "k1", 0, 10, tid=9), ev("kernel", "k1", 20, 10, tid=9), ev("kernel", "k2", 25, 10, tid=9),
    ev("cuda_runtime", "cudaLaunchKernel", 1, 2), ev("cuda_runtime", "cudaLaunchKernel", 3, 2),
    ev("cuda_runtime", "cudaLaunchKernel", 5, 2), ev("cuda_runtime", "cudaStreamSynchronize", 80, 10),
    ev("gpu_memcpy", "Memcpy DtoH", 90, 1, tid=9),
]}


def run(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    trace = tmp / "trace.json"
    trace.write_text(json.dumps(TRACE))
    r = run(trace, "--updates", 2, "--json")
    check("exit 0 on a valid trace", r.returncode == 0)
    s = json.loads(r.stdout)
    ops = {o["name"]: o for o in s["cpu_ops"]}
    check("span 100 us over 2 updates", abs(s["span_ms"] - 0.1) < 1e-9 and abs(s["span_ms_per_update"] - 0.05) < 1e-9)
    check("self times A 60 (50 + 10 on thread 2), B 30, C 15, D 5 us",
          [round(ops[n]["self_ms"] * 1e3, 6) for n in "ABCD"] == [60, 30, 15, 5])
    check("totals A 110, C 20 us; A twice in 2 updates", round(ops["A"]["total_ms"] * 1e3, 6) == 110 and
          round(ops["C"]["total_ms"] * 1e3, 6) == 20 and ops["A"]["per_update"] == 1.0)
    check("CPU operators ordered by self time", [o["name"] for o in s["cpu_ops"]] == ["A", "B", "C", "D"])
    g = s["gpu"]
    check("3 kernels, 1.5 per update", g["kernels"] == 3 and g["kernels_per_update"] == 1.5)
    check("busy 25 us counted once over the overlap: 12.5 us per update, 25% of the span",
          abs(g["busy_ms_per_update"] - 0.0125) < 1e-9 and abs(g["busy_share_of_span"] - 0.25) < 1e-9)
    check("kernels by total time: k1 20 us (2, mean 10), k2 10 us",
          [(k["name"], k["count"], round(k["total_ms"] * 1e3, 6), k["mean_us"]) for k in g["top_kernels"]] ==
          [("k1", 2, 20, 10.0), ("k2", 1, 10, 10.0)])
    check("one copy in 2 updates", g["memcpy_per_update"] == 0.5)
    rt = {c["name"]: c for c in s["cuda_runtime"]}
    check("cudaLaunchKernel 1.5 per update, first by count; one synchronize",
          s["cuda_runtime"][0]["name"] == "cudaLaunchKernel" and rt["cudaLaunchKernel"]["per_update"] == 1.5 and
          rt["cudaStreamSynchronize"]["per_update"] == 0.5)
    r = run(trace, "--top", 1)
    check("the table: one row per section with --top 1",
          r.returncode == 0 and "k2" not in r.stdout and "k1" in r.stdout
          and "cudaStreamSynchronize" not in r.stdout)

    check("no NCCL kernel: no collectives figures", s["collectives"] is None)

    # Thread 1 runs backward op [100,200) and launches kernels b1 (corr 1) at 110 and n1
    # (NCCL, corr 2) at 120 inside it, then f1 (corr 3) at 250 outside it. On the GPU: b1
    # [300,400), n1 [350,450) on another stream, f1 [420,500), n2 (NCCL, corr 4, launched at
    # 260 outside backward) [600,650). NCCL busy 100 + 50 = 150 us; during backward: n1's
    # overlap with b1, [350,400) = 50 us (f1 is not backward's, n2 overlaps nothing).
    def k(name, ts, dur, corr):
        return {**ev("kernel", name, ts, dur, tid=9), "args": {"correlation": corr}}

    def launch(ts, corr):
        return {**ev("cuda_runtime", "cudaLaunchKernel", ts, 2), "args": {"correlation": corr}}

    overlap = {"traceEvents": [
        ev("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", 100, 100),
        launch(110, 1), launch(120, 2), launch(250, 3), launch(260, 4),
        k("gemm_bwd", 300, 100, 1), k("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 350, 100, 2),
        k("elementwise_fwd", 420, 80, 3), k("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 600, 50, 4)]}
    (tmp / "overlap.json").write_text(json.dumps(overlap))
    r = run(tmp / "overlap.json", "--updates", 2, "--json")
    c = json.loads(r.stdout)["collectives"] if r.returncode == 0 else None
    check("collectives: 2 NCCL kernels (1 per update), busy 150 us, 50 us of it during backward's 1 kernel",
          c is not None and c["kernels"] == 2 and c["kernels_per_update"] == 1.0 and abs(c["busy_ms"] - 0.15) < 1e-9
          and c["backward_kernels"] == 1 and abs(c["during_backward_ms"] - 0.05) < 1e-9)
    r = run(tmp / "overlap.json")
    check("the table names the NCCL figures", r.returncode == 0 and "0.05 ms of it while backward's 1 kernels ran" in r.stdout)

    (tmp / "text.json").write_text("not json at all")
    (tmp / "list.json").write_text("[1, 2]")
    (tmp / "nots.json").write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "x", "dur": 1}]}))
    (tmp / "negdur.json").write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "x", "ts": 0, "dur": -5}]}))
    (tmp / "nants.json").write_text('{"traceEvents": [{"ph": "X", "name": "x", "ts": NaN, "dur": 1}]}')
    (tmp / "empty.json").write_text(json.dumps({"traceEvents": [{"ph": "M", "name": "process_name"}]}))
    (tmp / "deep.json").write_text("[" * 100000 + "]" * 100000)
    for name, needle in [("missing.json", "cannot read"), ("text.json", "not JSON"),
                         ("list.json", "not a Chrome trace"), ("nots.json", "traceEvents[0]"),
                         ("negdur.json", "traceEvents[0]: ts must be finite and dur finite and >= 0"),
                         ("nants.json", "traceEvents[0]: ts must be finite"),
                         ("empty.json", "no complete events"), ("deep.json", "not JSON")]:
        r = run(tmp / name)
        lines = r.stderr.strip().splitlines()
        check(f"{name}: exit 2, one line naming the file and '{needle}'",
              r.returncode == 2 and len(lines) == 1 and str(tmp / name) in lines[0] and needle in lines[0])
    r = run(trace, "--updates", 0)
    check("--updates 0: exit 2", r.returncode == 2 and "--updates" in r.stderr)

sys.exit(1 if failures else 0)
