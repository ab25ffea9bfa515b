#!/usr/bin/env python3
"""A table of where the time went, from a Chrome trace written by `train --benchmark N
--profile FILE` (LibTorch's Kineto profiler; torch.profiler's export_chrome_trace gives the
same format).

    python3 tools/profile_summary.py TRACE [--updates N] [--top K] [--json]

--updates N divides counts and times by the N profiled updates (train's --benchmark N).
Sections:
- span: from the first recorded event's start to the last one's end;
- GPU kernels (on a GPU): launches, busy time (the union of kernel intervals, so overlapping
  kernels count once) and its share of the span, the top K kernels by total time;
- CUDA runtime calls: the top K by count (cudaLaunchKernel per update is the launch load;
  cudaStreamSynchronize / cudaMemcpy are the host's waits on the GPU);
- CPU operators: the top K by self time (an operator's time minus its children's on the
  same thread), with their total (inclusive) time;
- collectives (on a GPU, where NCCL ran): NCCL's kernels, their busy time, and how much of it
  ran at the same time as backward's kernels (those launched inside an autograd
  "evaluate_function" operator): the gradient all-reduce overlapping backward.
--json prints the same figures as one JSON object (times in milliseconds).
Exit 2, one message naming the file, when TRACE is missing or is not such a trace."""
import argparse
import collections
import json
import math
import sys


class TraceError(Exception):
    pass


def load_events(path):
    try:
        with open(path, encoding="utf-8") as f:
            trace = json.load(f)
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror}")
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise TraceError(f"{path}: not JSON ({type(e).__name__}: {str(e)[:80]})")
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise TraceError(f"{path}: not a Chrome trace (no traceEvents list)")
    events = []
    for i, e in enumerate(trace["traceEvents"]):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue  # metadata, flow arrows, instants
        try:
            ts, dur = float(e["ts"]), float(e.get("dur", 0.0))
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            events.append((str(e.get("cat", "")), str(e["name"]), ts, dur, (e.get("pid"), e.get("tid")),
                           args.get("correlation")))
        except (KeyError, TypeError, ValueError):
            raise TraceError(f"{path}: traceEvents[{i}]: a complete event ('ph': 'X') needs name, ts and dur")
        if not (math.isfinite(ts) and math.isfinite(dur) and dur >= 0):
            raise TraceError(f"{path}: traceEvents[{i}]: ts must be finite and dur finite and >= 0, "
                             f"got ts {e['ts']}, dur {e.get('dur', 0.0)}")
    if not events:
        raise TraceError(f"{path}: no complete events ('ph': 'X') in traceEvents: nothing was profiled")
    return events


def union_length(intervals):
    """Total length covered by [start, end) intervals, overlaps counted once."""
    total, end = 0.0, None
    for s, e in sorted(intervals):
        if end is None or s >= end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def self_times(ops):
    """Per (name): [count, self, total] of the operators, nested by time on each thread."""
    by_thread = collections.defaultdict(list)
    for name, ts, dur, thread in ops:
        by_thread[thread].append((ts, -dur, name))
    stats = collections.defaultdict(lambda: [0, 0.0, 0.0])
    eps = 1e-3  # microseconds: the trace's timestamps are rounded
    for evs in by_thread.values():
        evs.sort()
        stack = []  # [end, name, self] of the open operators
        for ts, neg_dur, name in evs:
            dur = -neg_dur
            while stack and stack[-1][0] <= ts + eps:
                close(stack.pop(), stats)
            if stack:
                stack[-1][2] -= dur
            stack.append([ts + dur, name, dur])
            stats[name][0] += 1
            stats[name][2] += dur
        while stack:
            close(stack.pop(), stats)
    return stats


def close(frame, stats):
    stats[frame[1]][1] += max(frame[2], 0.0)


def intersection_length(a, b):
    """Length of the overlap of two sets of [start, end) intervals, each set's overlaps merged."""
    def merged(intervals):
        out = []
        for s, e in sorted(intervals):
            if out and s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], e)
            else:
                out.append([s, e])
        return out
    a, b = merged(a), merged(b)
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        total += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


BACKWARD_OP = "autograd::engine::evaluate_function:"


def backward_launches(events):
    """Correlation ids of the runtime calls (kernel launches) made inside an autograd
    evaluate_function operator on the same thread: backward's kernels."""
    backward_ranges = collections.defaultdict(list)
    for cat, name, ts, dur, thread, _ in events:
        if cat == "cpu_op" and name.startswith(BACKWARD_OP):
            backward_ranges[thread].append((ts, ts + dur))
    return {corr for cat, _, ts, _, thread, corr in events
            if cat in ("cuda_runtime", "cuda_driver") and corr is not None
            and any(s <= ts <= e for s, e in backward_ranges.get(thread, ()))}


def collectives(events, kernels, per):
    """NCCL's kernels and their time concurrent with backward's kernels, or None without NCCL."""
    nccl = [e for e in kernels if e[1].startswith("nccl")]
    if not nccl:
        return None
    launched_in_backward = backward_launches(events)
    backward = [(e[2], e[2] + e[3]) for e in kernels if e[5] in launched_in_backward and not e[1].startswith("nccl")]
    spans = [(e[2], e[2] + e[3]) for e in nccl]
    ms = 1e-3
    return {"kernels": len(nccl), "kernels_per_update": len(nccl) * per, "busy_ms": union_length(spans) * ms,
            "backward_kernels": len(backward), "during_backward_ms": intersection_length(spans, backward) * ms}


def summarize(events, updates, top):
    ms = 1e-3
    per = 1.0 / updates
    start = min((e[2] for e in events), default=0.0)
    end = max((e[2] + e[3] for e in events), default=0.0)
    kernels = [e for e in events if e[0] == "kernel"]
    kernel_stats = collections.defaultdict(lambda: [0, 0.0])
    for _, name, _, dur, _, _ in kernels:
        kernel_stats[name][0] += 1
        kernel_stats[name][1] += dur
    runtime_stats = collections.defaultdict(lambda: [0, 0.0])
    for cat, name, _, dur, _, _ in events:
        if cat in ("cuda_runtime", "cuda_driver"):
            runtime_stats[name][0] += 1
            runtime_stats[name][1] += dur
    ops = self_times([(n, ts, dur, th) for cat, n, ts, dur, th, _ in events if cat == "cpu_op"])
    busy = union_length([(e[2], e[2] + e[3]) for e in kernels])
    span = end - start
    return {
        "updates": updates,
        "span_ms": span * ms,
        "span_ms_per_update": span * ms * per,
        "gpu": {
            "kernels": len(kernels),
            "kernels_per_update": len(kernels) * per,
            "busy_ms_per_update": busy * ms * per,
            "busy_share_of_span": busy / span if span > 0 else 0.0,
            "memcpy_per_update": sum(1 for e in events if e[0] == "gpu_memcpy") * per,
            "top_kernels": [{"name": n, "count": c, "total_ms": t * ms, "mean_us": t / c}
                            for n, (c, t) in sorted(kernel_stats.items(), key=lambda kv: -kv[1][1])[:top]],
        },
        "cuda_runtime": [{"name": n, "per_update": c * per, "total_ms": t * ms}
                         for n, (c, t) in sorted(runtime_stats.items(), key=lambda kv: -kv[1][0])[:top]],
        "cpu_ops": [{"name": n, "per_update": c * per, "self_ms": s * ms, "total_ms": t * ms}
                    for n, (c, s, t) in sorted(ops.items(), key=lambda kv: -kv[1][1])[:top]],
        "collectives": collectives(events, kernels, per),
    }


def print_table(s):
    print(f"span {s['span_ms']:.1f} ms over {s['updates']} update(s): {s['span_ms_per_update']:.2f} ms per update")
    g = s["gpu"]
    if g["kernels"]:
        print(f"\nGPU: {g['kernels_per_update']:.0f} kernels per update, busy {g['busy_ms_per_update']:.2f} ms per update "
              f"({100 * g['busy_share_of_span']:.0f}% of the span), {g['memcpy_per_update']:.1f} copies per update")
        print(f"{'total ms':>10} {'count':>7} {'mean us':>9}  kernel")
        for k in g["top_kernels"]:
            print(f"{k['total_ms']:10.2f} {k['count']:7d} {k['mean_us']:9.1f}  {k['name'][:100]}")
    if s["cuda_runtime"]:
        print(f"\nCUDA runtime calls\n{'per update':>10} {'total ms':>10}  call")
        for r in s["cuda_runtime"]:
            print(f"{r['per_update']:10.1f} {r['total_ms']:10.2f}  {r['name']}")
    c = s["collectives"]
    if c:
        print(f"\nNCCL: {c['kernels_per_update']:.1f} kernels per update, busy {c['busy_ms']:.2f} ms in all, "
              f"{c['during_backward_ms']:.2f} ms of it while backward's {c['backward_kernels']} kernels ran")
    print(f"\nCPU operators by self time\n{'self ms':>10} {'total ms':>10} {'per update':>10}  operator")
    for o in s["cpu_ops"]:
        print(f"{o['self_ms']:10.2f} {o['total_ms']:10.2f} {o['per_update']:10.1f}  {o['name'][:100]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--updates", type=int, default=1, help="the profiled updates (train's --benchmark N)")
    ap.add_argument("--top", type=int, default=15, help="rows per table")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    args = ap.parse_args()
    if args.updates < 1 or args.top < 1:
        ap.error("--updates and --top must be positive")
    try:
        summary = summarize(load_events(args.trace), args.updates, args.top)
    except TraceError as e:
        print(f"profile_summary.py: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(summary))
    else:
        print_table(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
