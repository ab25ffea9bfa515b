"""A run's metrics.jsonl read and summed up for the table (updates, epochs, train wall time over
every train process, speed, best val loss and nll)."""
import json


def read_metrics(path):
    """The records of metrics.jsonl in file order; a line a kill cut short is skipped."""
    try:
        with open(path, "rb") as f:
            raw_lines = f.read().split(b"\n")
    except FileNotFoundError:
        return None
    records = []
    for raw in raw_lines:
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("update"), int):
            records.append(rec)
    return records


def numbers(records, key):
    return [r[key] for r in records if isinstance(r.get(key), (int, float))]  # JSON null = NaN: skipped


def summarize_metrics(path):
    """What the table shows of a run, or None before its metrics.jsonl exists.

    A {"event": "start"} record begins a train process: wall_s restarts at 0 there, so the
    time spent is the sum of each process's largest wall_s; records of earlier processes from
    the start's update on were rolled back by the resume and leave the history (as plot_run).
    """
    records = read_metrics(path)
    if records is None:
        return None
    history, walls = [], []
    for rec in records:
        event = rec.get("event")
        if event == "start":
            history = [r for r in history if r["update"] < rec["update"]]
            walls.append(0.0)
        elif event in ("train", "valid"):
            if not walls:
                walls.append(0.0)
            walls[-1] = max([walls[-1]] + numbers([rec], "wall_s"))
            history.append(rec)
    train = [r for r in history if r["event"] == "train"]
    valid = [r for r in history if r["event"] == "valid"]
    speeds = numbers(train, "tgt_tokens_per_s")
    return {
        "updates": max((r["update"] for r in history), default=0),
        "epochs": history[-1].get("epoch") if history else None,
        "train_wall_s": sum(walls),
        "train_processes": len(walls),
        "tgt_tokens_per_s": sum(speeds) / len(speeds) if speeds else None,
        "best_valid_loss": min(numbers(valid, "valid_loss"), default=None),
        "best_valid_nll": min(numbers(valid, "valid_nll"), default=None),
    }
