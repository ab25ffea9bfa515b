#!/usr/bin/env python3
"""Decoding tuned on val for one finished point of a sweep, or for an ensemble of several:
which checkpoint, beam size and length penalty (issue 32: the tuned settings of one point did
not transfer to another, so each candidate recipe is tuned on its own checkpoints), or one
setting for several seeds of a recipe.

    python3 tools/tune_decoding.py configs/sweeps/de_en60.sweep tiny \\
        --checkpoints last5,last10 --beams 5,10 --lenpens 1.0,1.4,1.8
    python3 tools/tune_decoding.py configs/sweeps/en_de180.sweep tiny_ls2_s1+tiny_ls2_s2+tiny_ls2_s3
    python3 tools/tune_decoding.py configs/sweeps/de_en180.sweep tiny_ls2_u19k_s1,tiny_ls2_u19k_s2,tiny_ls2_u19k_s3

POINT+POINT+... decodes with the ensemble of those points (evaluate with one --checkpoint a
member, each setting's checkpoint taken from every member: the mean of their probabilities),
under the first point's config; the members must share every model.* and data.* setting.
A,B,C (commas; each may be an ensemble) tunes each on the same grid, alone, and prints instead
one table of their val BLEU a setting with the mean, the highest mean in bold: the decoding of a
recipe chosen over its seeds rather than on one seed's noise.

Scores every setting of the grid (checkpoints x beams x lenpens) on the point's val split with
`evaluate` (sacreBLEU) and tools/score_lc_tok.py (lowercased, tokenized), and prints a markdown
table with the best row in bold (highest sacreBLEU; ties: lc-tok, then grid order). A
multilingual point (data.directions) is decoded in each direction (evaluate --direction D); a
setting's BLEU is the mean over them, and a column gives each direction's. Checkpoints:
lastN (the average of the newest N update_N.pt), bestN (of the N validations with the lowest
loss: the point must have trained with train.keep_best >= N), last (last.pt), best (best.pt).
Files go to OUT/NAME/decoding/ (an ensemble: OUT/A+B+C/decoding/; averages, hypotheses,
scores.json, table.md); a rerun scores only the settings it lacks. The test set is never touched.

Bad input (an unknown point, one not finished, a bad grid value, a bestN the point did not keep,
a point named twice, a candidate named twice, members of different model.* or data.* settings)
is one line `tune_decoding.py: error: ...`, exit 2, nothing written. Standard library only.
"""
import argparse
import os
import sys

from sweeplib.bleu import find_scorer_python
from sweeplib.context import Context, check_programs, resolve_points
from sweeplib.decoding import (check_members_agree, check_point_can, ensemble_name, mean_table, parse_checkpoints,
                               parse_numbers, read_kept_scores, scores_path, tune, tune_rows)
from sweeplib.errors import EXIT_BAD_INPUT, EXIT_FAILED, Interrupted, PointFailed, SweepError
from sweeplib import runner
from sweeplib.files import tail
from sweeplib.shards import assign_shard_dirs
from sweeplib.sweep_file import parse_sweep

PROG = "tune_decoding.py"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep_file", metavar="SWEEP_FILE")
    parser.add_argument("point", metavar="POINT[+POINT...][,...]",
                        help="a point of the sweep file finished in OUT, or several joined by + (their ensemble); "
                             "several of those joined by , are tuned alone and their mean tabled")
    parser.add_argument("--out", metavar="DIR", help="the sweep's output (default runs/sweeps/<SWEEP_FILE's stem>)")
    parser.add_argument("--build", metavar="DIR", default="build")
    parser.add_argument("--shards", metavar="DIR", default=os.path.join("runs", "sweeps", "shards"))
    parser.add_argument("--checkpoints", default="last5,last10", help="default last5,last10")
    parser.add_argument("--beams", default="5,10", help="default 5,10")
    parser.add_argument("--lenpens", default="1.0,1.4", help="default 1.0,1.4")
    return parser.parse_args(argv)


def select_points(ctx, sweep_file, names):
    """The points NAME or NAME+NAME+... names, in that order; SweepError for an unknown or
    repeated one."""
    by_name = {p.name: p for p in ctx.sweep.points}
    wanted = names.split("+")
    for name in wanted:
        if name not in by_name:
            raise SweepError(f"{sweep_file}: no point '{name}' (points: {', '.join(by_name)})")
        if wanted.count(name) > 1:
            raise SweepError(f"{names}: point '{name}' is named twice (an ensemble's members differ)")
    return [by_name[name] for name in wanted]


def select_candidates(ctx, sweep_file, text):
    """'A+B,C' -> [[A, B], [C]]; SweepError for an unknown or repeated point or candidate."""
    groups = text.split(",")
    for group in groups:
        if groups.count(group) > 1:
            raise SweepError(f"{text}: candidate '{group}' is named twice")
    return [select_points(ctx, sweep_file, group) for group in groups]


def every_point(candidates):
    """The points of all candidates, each once, in order."""
    seen = {}
    for points in candidates:
        for point in points:
            seen.setdefault(point.name, point)
    return list(seen.values())


def fail(code, message):
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)
    return code


def main(argv=None):
    args = parse_args(argv)
    out = args.out or os.path.join("runs", "sweeps", os.path.splitext(os.path.basename(args.sweep_file))[0])
    try:
        checkpoints = parse_checkpoints(args.checkpoints)
        beams = parse_numbers(args.beams, "beams", int, 1)
        lenpens = parse_numbers(args.lenpens, "lenpens", float, 0.0)
        ctx = Context(parse_sweep(args.sweep_file), out, args.build, args.shards)
        candidates = select_candidates(ctx, args.sweep_file, args.point)
        ctx.sweep.points = every_point(candidates)  # only these points' configs are resolved
        check_programs(ctx, (("trainer", "train"), ("trainer", "average"), ("eval", "evaluate")))
        resolve_points(ctx)
        assign_shard_dirs(ctx)
        for points in candidates:
            check_members_agree(ctx, points)
        for point in ctx.sweep.points:
            check_point_can(ctx, point, checkpoints)
        for points in candidates:
            read_kept_scores(scores_path(ctx, points))  # an unreadable one refused before anything runs
        ctx.scorer_python = find_scorer_python()
    except SweepError as e:
        return fail(EXIT_BAD_INPUT, str(e))
    runner.messages = sys.stderr  # stdout is the table's
    ctx.runner.install()
    try:
        if len(candidates) == 1:
            print(tune(ctx, candidates[0], checkpoints, beams, lenpens), end="")
        else:
            rows = [tune_rows(ctx, points, checkpoints, beams, lenpens)[0] for points in candidates]
            print(mean_table([ensemble_name(points) for points in candidates], rows), end="")
    except Interrupted as e:
        return 128 + e.signum
    except PointFailed as e:
        return fail(EXIT_FAILED, f"{e}; the end of {e.log}:\n{tail(e.log)}")
    except (OSError, SweepError) as e:
        return fail(EXIT_FAILED, str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
