"""Decoding tuned on val for one finished point (tools/tune_decoding.py): which checkpoint
(an average of the last N, of the N best validations, best.pt, last.pt), beam size and length
penalty. Every setting is scored by evaluate (sacreBLEU) and tools/score_lc_tok.py; scores are
kept in OUT/NAME/decoding/scores.json, so a rerun scores only the settings it lacks."""
import glob
import itertools
import json
import math
import os
import re
import shlex
import subprocess

from .bleu import first_bleu, lc_tok_command
from .errors import PointFailed, SweepError
from .files import RESULT, read_json, write_atomic
from .runner import describe_exit, say

CHECKPOINT_RE = re.compile(r"(last|best)(\d*)\Z")
SCORES = "scores.json"


def parse_checkpoints(text):
    """'last5,best' -> ['last5', 'best']: lastN / bestN (N >= 2: averages), last / best (files)."""
    out = []
    for word in text.split(","):
        m = CHECKPOINT_RE.match(word.strip())
        if not m or (m.group(2) and int(m.group(2)) < 2):
            raise SweepError(f"--checkpoints: '{word}' is none of lastN, bestN (N >= 2: the average of the "
                             f"newest N update_N.pt, or of the N best validations), last (last.pt), best (best.pt)")
        if word.strip() not in out:
            out.append(word.strip())
    return out


def parse_numbers(text, what, kind, low):
    values = []
    for word in text.split(","):
        try:
            value = kind(word.strip())
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or value < low:
            raise SweepError(f"--{what}: '{word}' is not a {kind.__name__} >= {low}")
        if value not in values:
            values.append(value)
    return values


def check_point_can(ctx, point, checkpoints):
    """Refuse, before anything runs, a point that is not finished or did not keep what a
    setting needs (bestN: train.keep_best >= N)."""
    if not os.path.isfile(ctx.path(point, RESULT)):
        raise SweepError(f"point '{point.name}': not finished in {ctx.point_dir(point)} (no {RESULT}); "
                         f"run the sweep first")
    keep_best = int(ctx.resolved[point.name].get("train.keep_best") or 0)
    keep_last = int(ctx.resolved[point.name].get("train.keep_last") or 0)
    for name in checkpoints:
        n = CHECKPOINT_RE.match(name).group(2)
        if name.startswith("best") and n and int(n) > keep_best:
            raise SweepError(f"point '{point.name}': --checkpoints {name} needs train.keep_best >= {n}; "
                             f"the point trained with train.keep_best={keep_best}")
        # Beyond keep_last's newest, the newest N update_N.pt would include kept best ones.
        if name.startswith("last") and n and keep_best > 0 and 0 < keep_last < int(n):
            raise SweepError(f"point '{point.name}': --checkpoints {name} needs train.keep_last >= {n} (or 0) "
                             f"beside train.keep_best; the point trained with train.keep_last={keep_last}")


class Tuner:
    def __init__(self, ctx, point):
        self.ctx, self.point = ctx, point
        self.dir = os.path.join(ctx.point_dir(point), "decoding")
        os.makedirs(self.dir, exist_ok=True)
        # Scores belong to the point's checkpoints as finished: a point trained again starts anew.
        finished = read_json(ctx.path(point, RESULT))["finished"]
        kept = read_json(os.path.join(self.dir, SCORES)) or {}
        self.scores = kept.get("scores", {}) if kept.get("finished") == finished else {}
        if kept.get("finished") != finished:  # averages of earlier checkpoints go with their scores
            for path in glob.glob(os.path.join(self.dir, "*.pt")):
                os.remove(path)
        self.finished = finished

    def run(self, cmd, stdout_path, stderr_path=None):
        """cmd with its output in stdout_path (and its errors in stderr_path, else there too)."""
        with open(stdout_path, "wb") as out, open(stderr_path or os.devnull, "wb") as err:
            rc = self.ctx.runner.run(cmd, out, err if stderr_path else subprocess.STDOUT)
        if rc != 0:
            raise PointFailed(f"{os.path.basename(cmd[0])} ended with {describe_exit(rc)}", stderr_path or stdout_path)

    def checkpoint(self, name):
        """The file a checkpoint setting names, averaging once when it is an average."""
        m = CHECKPOINT_RE.match(name)
        if not m.group(2):
            return self.ctx.path(self.point, f"{name}.pt")
        path = os.path.join(self.dir, f"{name}.pt")
        if not os.path.isfile(path):
            cmd = [self.ctx.binary("trainer", "average"), "--output", path, f"--{m.group(1)}", m.group(2),
                   self.ctx.point_dir(self.point)]
            say(f"point {self.point.name}: {shlex.join(cmd)}")
            self.run(cmd, os.path.join(self.dir, f"{name}.average.out"))
        return path

    def score(self, name, beam, lenpen):
        key = f"{name} beam={beam} lenpen={lenpen:g}"
        if key in self.scores:
            return self.scores[key]
        stem = os.path.join(self.dir, f"{name}_b{beam}_lp{lenpen:g}")
        cmd = self.ctx.base_command(self.ctx.binary("eval", "evaluate"), self.point) + [
            "--checkpoint", self.checkpoint(name), "--split", "val", "--beam", str(beam), "--lenpen", f"{lenpen:g}",
            "--output", stem + ".hyp"]
        say(f"point {self.point.name}: {key}: {shlex.join(cmd)}")
        self.run(cmd, stem + ".out", stem + ".err")
        bleu, line = first_bleu(stem + ".out", "evaluate")
        lc_tok = None
        scorer = lc_tok_command(self.ctx, self.point, stem + ".hyp")
        if scorer:
            self.run(scorer, stem + ".lc_tok")
            lc_tok = first_bleu(stem + ".lc_tok", "score_lc_tok.py")[0]
        self.scores[key] = {"checkpoint": name, "beam": beam, "lenpen": lenpen, "val_bleu": bleu,
                            "val_bleu_line": line, "val_lc_tok_bleu": lc_tok}
        write_atomic(os.path.join(self.dir, SCORES),
                     json.dumps({"finished": self.finished, "scores": self.scores}, indent=1) + "\n")
        return self.scores[key]


def best_row(rows):
    """The highest val BLEU; of equal ones the higher lc-tok, then the first in grid order."""
    return max(enumerate(rows), key=lambda ir: (ir[1]["val_bleu"], ir[1]["val_lc_tok_bleu"] or 0, -ir[0]))[1]


def markdown(point, rows, best):
    lines = [f"| checkpoint | beam | lenpen | val BLEU | val lc-tok |", "|---|---|---|---|---|"]
    for r in rows:
        cells = [r["checkpoint"], str(r["beam"]), f"{r['lenpen']:g}", f"{r['val_bleu']:.2f}",
                 "" if r["val_lc_tok_bleu"] is None else f"{r['val_lc_tok_bleu']:.2f}"]
        if r is best:
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def tune(ctx, point, checkpoints, beams, lenpens):
    """Score the grid (checkpoints x beams x lenpens) on val; write and return the table."""
    tuner = Tuner(ctx, point)
    rows = [tuner.score(*setting) for setting in itertools.product(checkpoints, beams, lenpens)]
    best = best_row(rows)
    table = markdown(point, rows, best)
    write_atomic(os.path.join(tuner.dir, "table.md"), table)
    say(f"point {point.name}: best on val: {best['checkpoint']}, beam {best['beam']}, lenpen {best['lenpen']:g}: "
        f"{best['val_bleu_line']}")
    return table
