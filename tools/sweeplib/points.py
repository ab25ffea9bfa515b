"""One point run: train (or resume, within its time budget), average the last checkpoints,
evaluate on val (a multilingual point: each direction), score lc-tok BLEU, and record
result.json last."""
import datetime
import json
import os
import re
import shlex
import subprocess

from .bleu import first_bleu, lc_tok_point, val_hyp
from .context import point_directions
from .errors import PointFailed
from .files import RESULT, write_atomic
from .metrics import summarize_metrics
from .runner import describe_exit, say
from .shards import ensure_shards
from .state import load_state, save_state

UPDATE_FILE_RE = re.compile(r"update_(\d+)\.pt\Z")
GPU_START_RE = re.compile(r"\| device cuda:\d+ \(([^)]*)\) \|")  # train's start line on a GPU
AVERAGE_LAST = 5
BEAM = 5


def train_command(ctx, point):
    """train's command, or None when a time budget is already spent. train counts max_minutes
    per process, so a resumed process gets what the earlier ones left."""
    cmd = ctx.base_command(ctx.binary("trainer", "train"), point)
    budget = float(ctx.resolved[point.name].get("train.max_minutes") or 0)
    summary = summarize_metrics(ctx.path(point, "metrics.jsonl"))
    spent = summary["train_wall_s"] / 60 if summary else 0.0
    if budget > 0 and spent > 0:
        left = budget - spent
        if left <= 0:
            return None
        cmd.insert(-1, f"train.max_minutes={max(left, 0.001):.3f}")  # before save_dir; 0 = no limit
    return cmd + ["--resume", "auto"]


def machine_label(cpu, log_text):
    """What a training session ran on, for the table's CPU column: the CPU model, or, when one
    of the session's train.log start lines names a GPU, "GPU (host: CPU)"."""
    gpus = GPU_START_RE.findall(log_text)
    return f"{gpus[-1]} (host: {cpu})" if gpus else cpu


def file_size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def record_machine(ctx, point, state, log_start, added):
    """After a session: a GPU named by the start lines train logged from log_start on takes the
    place of the host CPU recorded (when this session added it) before training."""
    try:
        with open(ctx.path(point, "train.log"), encoding="utf-8", errors="replace") as f:
            f.seek(log_start)
            label = machine_label(ctx.cpu, f.read())
    except OSError:
        return
    if label != ctx.cpu and label not in state["cpus"]:
        if added:
            state["cpus"].remove(ctx.cpu)
        state["cpus"].append(label)


def train_point(ctx, point, state):
    cmd = train_command(ctx, point)
    log = ctx.path(point, "train.out")
    if cmd is None:
        say(f"point {point.name}: its time budget is spent (metrics.jsonl); evaluating what it trained")
    else:
        added = ctx.cpu not in state["cpus"]
        if added:
            state["cpus"].append(ctx.cpu)
        save_state(ctx, point, state)
        log_start = file_size(ctx.path(point, "train.log"))
        say(f"point {point.name}: training: {shlex.join(cmd)} >> {log}")
        try:
            with open(log, "ab") as out:
                rc = ctx.runner.run(cmd, out, subprocess.STDOUT)
        finally:
            record_machine(ctx, point, state, log_start, added)
            save_state(ctx, point, state)
        if rc != 0:
            raise PointFailed(f"train ended with {describe_exit(rc)}", log)
    state["trained"] = True
    save_state(ctx, point, state)


def update_checkpoints(ctx, point):
    return sorted(name for name in os.listdir(ctx.point_dir(point)) if UPDATE_FILE_RE.match(name))


def average_point(ctx, point):
    """The checkpoint to evaluate: the average of the newest min(5, available) update_N.pt, or
    last.pt when there are fewer than 2."""
    count = len(update_checkpoints(ctx, point))
    if count < 2:
        say(f"point {point.name}: {count} update_N.pt: evaluating last.pt")
        return ctx.path(point, "last.pt"), 0
    n = min(AVERAGE_LAST, count)
    output, log = ctx.path(point, "averaged.pt"), ctx.path(point, "average.out")
    cmd = [ctx.binary("trainer", "average"), "--output", output, "--last", str(n), ctx.point_dir(point)]
    say(f"point {point.name}: averaging: {shlex.join(cmd)}")
    with open(log, "wb") as out:
        rc = ctx.runner.run(cmd, out, subprocess.STDOUT)
    if rc != 0:
        raise PointFailed(f"average ended with {describe_exit(rc)}", log)
    return output, n


def evaluate_command(ctx, point, checkpoint, direction=None):
    """evaluate's command on val into val.hyp; for one direction of a multilingual point,
    --direction D into val.D.hyp."""
    one = ["--direction", direction] if direction else []
    return ctx.base_command(ctx.binary("eval", "evaluate"), point) + [
        "--checkpoint", checkpoint, "--split", "val", "--beam", str(BEAM), *one,
        "--output", ctx.path(point, val_hyp(direction))]


def evaluate_point(ctx, point, checkpoint, direction=None):
    cmd = evaluate_command(ctx, point, checkpoint, direction)
    stem = f"evaluate.{direction}" if direction else "evaluate"
    stdout, stderr = ctx.path(point, stem + ".out"), ctx.path(point, stem + ".err")
    say(f"point {point.name}: evaluating on val: {shlex.join(cmd)}")
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        rc = ctx.runner.run(cmd, out, err)
    if rc != 0:
        raise PointFailed(f"evaluate ended with {describe_exit(rc)}", stderr)
    return first_bleu(stdout, "evaluate")


def mean(values):
    """The mean of values, rounded to 4 decimals (the table's csv keeps it as written); None when
    one is None (no scorer)."""
    return None if any(v is None for v in values) else round(sum(values) / len(values), 4)


def by_direction(directions):
    """result.json's per-direction scores as the table's column: "de-en 35.12, en-de 30.01"."""
    return ", ".join(f"{d} {scores['val_bleu']:.2f}" for d, scores in directions.items())


def evaluate_directions(ctx, point, checkpoint, directions):
    """A multilingual point: every direction evaluated on val into val.D.hyp and scored by
    tools/score_lc_tok.py against the raw val reference of its target language. The point's val
    BLEU and lc-tok BLEU are the means over its directions; each direction's are kept in
    result.json's "directions"."""
    scores = {}
    for direction in directions:
        bleu, line = evaluate_point(ctx, point, checkpoint, direction)
        scores[direction] = {"val_bleu": bleu, "val_bleu_line": line,
                             "val_lc_tok_bleu": lc_tok_point(ctx, point, direction)}
    bleu = mean([s["val_bleu"] for s in scores.values()])
    return {"val_bleu": bleu, "val_bleu_line": f"mean BLEU = {bleu:.2f} over {by_direction(scores)}",
            "val_lc_tok_bleu": mean([s["val_lc_tok_bleu"] for s in scores.values()]), "directions": scores}


def run_point(ctx, point):
    """Train (or resume), average, evaluate on val, then record result.json: last, so that
    its presence means the point is finished."""
    state = load_state(ctx, point)
    save_state(ctx, point, state)
    ensure_shards(ctx, point)
    if not state["trained"]:
        train_point(ctx, point, state)
    checkpoint, averaged = average_point(ctx, point)
    directions = point_directions(ctx.resolved[point.name])
    if directions:
        scores = evaluate_directions(ctx, point, checkpoint, directions)
    else:
        bleu, bleu_line = evaluate_point(ctx, point, checkpoint)
        scores = {"val_bleu": bleu, "val_bleu_line": bleu_line, "val_lc_tok_bleu": lc_tok_point(ctx, point)}
    result = {"point": point.name, "config": ctx.sweep.config, "overrides": ctx.sweep.overrides(point),
              "point_overrides": point.overrides, **summarize_metrics(ctx.path(point, "metrics.jsonl")),
              "checkpoint": os.path.basename(checkpoint), "averaged_last": averaged, "beam": BEAM,
              **scores, "cpus": state["cpus"], "finished": datetime.datetime.now().isoformat(timespec="seconds")}
    write_atomic(ctx.path(point, RESULT), json.dumps(result, indent=1) + "\n")
    return result
