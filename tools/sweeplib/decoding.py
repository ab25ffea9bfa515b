"""Decoding tuned on val for one finished point, or for an ensemble of several
(tools/tune_decoding.py): which checkpoint (an average of the last N, of the N best validations,
best.pt, last.pt), beam size and length penalty. Every setting is scored by evaluate (sacreBLEU)
and tools/score_lc_tok.py; scores are kept in OUT/NAME/decoding/scores.json (an ensemble:
OUT/A+B+C/decoding/), so a rerun scores only the settings it lacks. A multilingual point
(data.directions) is scored in each of its directions and a setting's BLEU is their mean, as in
the sweep's table: one decoding serves every direction of the one model."""
import glob
import itertools
import json
import math
import os
import re
import shlex
import subprocess

from .bleu import first_bleu, lc_tok_command
from .context import point_directions
from .errors import PointFailed, SweepError
from .files import RESULT, read_json, write_atomic
from .points import by_direction as by_direction_text
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
    read_json(ctx.path(point, RESULT))  # refused here, before anything runs, when unreadable
    keep_best = int(ctx.resolved[point.name].get("train.keep_best") or 0)
    keep_last = int(ctx.resolved[point.name].get("train.keep_last") or 0)
    for name in checkpoints:
        n = CHECKPOINT_RE.match(name).group(2)
        if name.startswith("best") and n and int(n) > keep_best:
            raise SweepError(f"point '{point.name}': --checkpoints {name} needs train.keep_best >= {n}; "
                             f"the point trained with train.keep_best={keep_best}")
        # Beyond keep_last's newest, the newest N update_N.pt would include older ones kept for
        # their validations.
        if name.startswith("last") and n and keep_best > 0 and 0 < keep_last < int(n):
            raise SweepError(f"point '{point.name}': --checkpoints {name} needs train.keep_last >= {n} (or 0) "
                             f"beside train.keep_best; the point trained with train.keep_last={keep_last}")


def ensemble_name(points):
    return "+".join(p.name for p in points)


def scores_path(ctx, points):
    """Where the scores of a point's (or an ensemble's) settings are kept."""
    base = os.path.join(ctx.out, ensemble_name(points)) if len(points) > 1 else ctx.point_dir(points[0])
    return os.path.join(base, "decoding", SCORES)


def read_kept_scores(path):
    """scores.json as kept by an earlier run ({} when none); SweepError when it is not ours."""
    kept = read_json(path) or {}
    if not isinstance(kept.get("scores", {}), dict):
        raise SweepError(f"{path}: unreadable (field 'scores' is not a JSON object); remove it to score these "
                         f"settings again")
    return kept


def check_members_agree(ctx, points):
    """An ensemble decodes under its first member's config (evaluate builds every member's model
    from it), so the members must share every model.* and data.* setting; they may differ in
    anything else (train.seed, optim.*, schedule.*)."""
    first = ctx.resolved[points[0].name]
    for point in points[1:]:
        other = ctx.resolved[point.name]
        for key in sorted(set(first) | set(other)):
            if key.startswith(("model.", "data.")) and first.get(key) != other.get(key):
                raise SweepError(f"ensemble {ensemble_name(points)}: point '{point.name}' has {key}={other.get(key)} "
                                 f"where '{points[0].name}' has {first.get(key)}; members must share the model.* "
                                 f"and data.* settings")


class Tuner:
    def __init__(self, ctx, points):
        self.ctx, self.points, self.point = ctx, points, points[0]  # evaluate runs under the first's config
        self.name = ensemble_name(points)
        self.ensemble = len(points) > 1
        self.dir = os.path.dirname(scores_path(ctx, points))
        os.makedirs(self.dir, exist_ok=True)
        # Scores belong to the points' checkpoints as finished: a point trained again starts anew.
        finished = "+".join(read_json(ctx.path(point, RESULT))["finished"] for point in points)
        kept = read_kept_scores(os.path.join(self.dir, SCORES))
        self.scores = kept.get("scores", {}) if kept.get("finished") == finished else {}
        if kept.get("finished") != finished:  # averages of earlier checkpoints go with their scores
            for path in glob.glob(os.path.join(self.dir, "*.pt")):
                os.remove(path)
        self.finished = finished
        self.directions = point_directions(ctx.resolved[self.point.name])  # [] for one direction

    def run(self, cmd, stdout_path, stderr_path=None):
        """cmd with its output in stdout_path (and its errors in stderr_path, else there too)."""
        with open(stdout_path, "wb") as out, open(stderr_path or os.devnull, "wb") as err:
            rc = self.ctx.runner.run(cmd, out, err if stderr_path else subprocess.STDOUT)
        if rc != 0:
            raise PointFailed(f"{os.path.basename(cmd[0])} ended with {describe_exit(rc)}", stderr_path or stdout_path)

    def checkpoint(self, name, point):
        """The file a checkpoint setting names for one member, averaging once when it is an
        average (an ensemble keeps its members' averages as MEMBER.NAME.pt in its own dir)."""
        m = CHECKPOINT_RE.match(name)
        if not m.group(2):
            return self.ctx.path(point, f"{name}.pt")
        stem = os.path.join(self.dir, f"{point.name}.{name}" if self.ensemble else name)
        if not os.path.isfile(stem + ".pt"):
            cmd = [self.ctx.binary("trainer", "average"), "--output", stem + ".pt", f"--{m.group(1)}", m.group(2),
                   self.ctx.point_dir(point)]
            say(f"point {self.name}: {shlex.join(cmd)}")
            self.run(cmd, stem + ".average.out")
        return stem + ".pt"

    def score(self, name, beam, lenpen):
        key = f"{name} beam={beam} lenpen={lenpen:g}"
        if key in self.scores:
            return self.scores[key]
        stem = os.path.join(self.dir, f"{name}_b{beam}_lp{lenpen:g}")
        members = [word for point in self.points for word in ("--checkpoint", self.checkpoint(name, point))]
        setting = {"checkpoint": name, "beam": beam, "lenpen": lenpen}
        if self.directions:
            by_direction = {d: self.score_direction(key, f"{stem}.{d}", members, beam, lenpen, d)
                            for d in self.directions}
            bleu = mean([s["val_bleu"] for s in by_direction.values()])
            setting.update(val_bleu=bleu, val_lc_tok_bleu=mean([s["val_lc_tok_bleu"] for s in by_direction.values()]),
                           val_bleu_line=f"mean BLEU = {bleu:.2f} over {by_direction_text(by_direction)}",
                           directions=by_direction)
        else:
            setting.update(self.score_direction(key, stem, members, beam, lenpen))
        self.scores[key] = setting
        write_atomic(os.path.join(self.dir, SCORES),
                     json.dumps({"finished": self.finished, "scores": self.scores}, indent=1) + "\n")
        return setting

    def score_direction(self, key, stem, members, beam, lenpen, direction=None):
        """One setting's val BLEU (evaluate) and lc-tok BLEU, in one direction of a multilingual
        point (evaluate --direction D) or in the config's only one."""
        one = ["--direction", direction] if direction else []
        cmd = self.ctx.base_command(self.ctx.binary("eval", "evaluate"), self.point) + members + [
            "--split", "val", "--beam", str(beam), "--lenpen", f"{lenpen:g}", *one, "--output", stem + ".hyp"]
        say(f"point {self.name}: {key}{' ' + direction if direction else ''}: {shlex.join(cmd)}")
        self.run(cmd, stem + ".out", stem + ".err")
        bleu, line = first_bleu(stem + ".out", "evaluate")
        lc_tok = None
        scorer = lc_tok_command(self.ctx, self.point, stem + ".hyp", direction)
        if scorer:
            self.run(scorer, stem + ".lc_tok")
            lc_tok = first_bleu(stem + ".lc_tok", "score_lc_tok.py")[0]
        return {"val_bleu": bleu, "val_bleu_line": line, "val_lc_tok_bleu": lc_tok}


def best_row(rows):
    """The highest val BLEU; of equal ones the higher lc-tok, then the first in grid order."""
    return max(enumerate(rows), key=lambda ir: (ir[1]["val_bleu"], ir[1]["val_lc_tok_bleu"] or 0, -ir[0]))[1]


def markdown(rows, best):
    """The grid's table; a multilingual point's has a column of each setting's per-direction BLEU
    (its val BLEU being their mean)."""
    multilingual = any("directions" in r for r in rows)
    extra = " val BLEU by direction |" if multilingual else ""
    lines = [f"| checkpoint | beam | lenpen | val BLEU | val lc-tok |{extra}", "|---|---|---|---|---|" + "---|" * bool(extra)]
    for r in rows:
        cells = [r["checkpoint"], str(r["beam"]), f"{r['lenpen']:g}", f"{r['val_bleu']:.2f}",
                 "" if r["val_lc_tok_bleu"] is None else f"{r['val_lc_tok_bleu']:.2f}"]
        if multilingual:
            cells.append(by_direction_text(r.get("directions", {})))
        if r is best:
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def tune_rows(ctx, points, checkpoints, beams, lenpens):
    """Score the grid (checkpoints x beams x lenpens) on val, for one point or for the ensemble
    of several (each setting's checkpoint taken from every member); write its table and return
    (rows in grid order, table)."""
    tuner = Tuner(ctx, points)
    rows = [tuner.score(*setting) for setting in itertools.product(checkpoints, beams, lenpens)]
    best = best_row(rows)
    table = markdown(rows, best)
    write_atomic(os.path.join(tuner.dir, "table.md"), table)
    say(f"point {tuner.name}: best on val: {best['checkpoint']}, beam {best['beam']}, lenpen {best['lenpen']:g}: "
        f"{best['val_bleu_line']}")
    return rows, table


def tune(ctx, points, checkpoints, beams, lenpens):
    return tune_rows(ctx, points, checkpoints, beams, lenpens)[1]


def mean(values):
    return None if any(v is None for v in values) else sum(values) / len(values)


def mean_table(names, rows_per_candidate):
    """One row a setting: each candidate's val BLEU, then their mean BLEU and mean lc-tok; the
    row with the highest mean BLEU in bold (ties: mean lc-tok, then grid order). This picks one
    decoding for a recipe from several seeds, where one seed's best would partly be its noise."""
    settings = list(zip(*rows_per_candidate))
    means = [{"val_bleu": mean([r["val_bleu"] for r in s]), "val_lc_tok_bleu": mean([r["val_lc_tok_bleu"] for r in s])}
             for s in settings]
    best = best_row(means)
    chosen = settings[means.index(best)][0]
    lines = ["| checkpoint | beam | lenpen | " + " | ".join(names) + " | mean BLEU | mean lc-tok |",
             "|---|---|---|" + "---|" * (len(names) + 2)]
    for s, m in zip(settings, means):
        first = s[0]
        cells = [first["checkpoint"], str(first["beam"]), f"{first['lenpen']:g}"]
        cells += [f"{r['val_bleu']:.2f}" for r in s]
        cells += [f"{m['val_bleu']:.2f}", "" if m["val_lc_tok_bleu"] is None else f"{m['val_lc_tok_bleu']:.2f}"]
        if m is best:
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    say(f"candidates {', '.join(names)}: best on val on average: {chosen['checkpoint']}, beam {chosen['beam']}, "
        f"lenpen {chosen['lenpen']:g}: mean BLEU {best['val_bleu']:.2f}")
    return "\n".join(lines) + "\n"
