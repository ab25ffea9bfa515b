#!/usr/bin/env python3
"""Run a sweep of training runs one after another (or N at once), evaluate each on val, and keep a table.

    tools/sweep.py SWEEP_FILE [--out DIR] [--build DIR] [--shards DIR] [--only NAME[,NAME...]] [--jobs N]
                   [--dry-run]

SWEEP_FILE, one directive a line, `#` starts a comment (words are split as a shell does, so a
value with spaces can be quoted):

    config configs/multi30k_de_en.yaml                      # the base config: required, once
    common train.max_updates=1200 data.max_tokens=3072      # overrides of every point (may repeat)
    point lr2e3 schedule.lr=0.002 schedule.warmup_updates=400   # a named point and its overrides

Every point needs a budget, train.max_updates=N and/or train.max_minutes=M (> 0), given by a
`common` line or by the point itself (the base config's does not count: the sweep file says
what each point costs). A point's overrides come after the common ones, so a point may change
a common key. Names are [A-Za-z0-9_.-]+ and unique; train.save_dir is the sweep's to set. The
overrides are checked by `train --print-config` before anything runs. Bad input is one line
`sweep.py: error: FILE:LINE: ...`, exit 2, and nothing is run or written.

For each point, in file order, in OUT/NAME (OUT defaults to runs/sweeps/<sweep file stem>):

  1. BUILD/trainer/train --config CONFIG <common> <point> train.save_dir=OUT/NAME --resume auto
     (stdout and stderr appended to OUT/NAME/train.out);
  2. BUILD/trainer/average --output OUT/NAME/averaged.pt --last N OUT/NAME, N = min(5, the
     update_<N>.pt there); with fewer than 2 of them last.pt is evaluated instead;
  3. BUILD/eval/evaluate --config CONFIG <overrides> train.save_dir=OUT/NAME --checkpoint CKPT
     --split val --beam 5 --output OUT/NAME/val.hyp: its first line gives the val BLEU;
  4. when tools/score_lc_tok.py exists, the lowercased, tokenized BLEU of the same val.hyp
     against the raw val reference (data.raw_dir/<data.valid_split>.<data.tgt_lang>[.gz]), run by
     this Python if it has sacrebleu and sacremoses, else by the project's venv (neither: the
     column stays empty, with a warning);
  5. OUT/NAME/result.json, written last (temporary file + rename): a point with one is finished.

A multilingual point (data.directions set) has steps 3 and 4 once per direction D, in the
config's order: evaluate ... --direction D --output OUT/NAME/val.D.hyp (log evaluate.D.out), and
the lc-tok BLEU of val.D.hyp against data.raw_dir/<data.valid_split>.<D's target> (lc_tok.D.out).
Its val BLEU and lc-tok BLEU are the means over its directions; result.json keeps each
direction's under "directions".

Selection is on val only: the sweep never decodes or scores the test set.

A point whose overrides set a data.* key that changes what preprocess writes (vocabulary size or
type, languages, raw_dir, splits, num_shards, max_len, directions, lang_tag, spm_temperature) and
no data.shard_dir of its own trains on shards made for it:
SHARDS/<src>-<tgt>_<type><vocab>_<hash of those settings> (multilingual: multi<N directions>_...;
SHARDS: --shards, default runs/sweeps/shards), preprocessed once before its training (log
OUT/NAME/preprocess.out) and reused by every point, of any sweep, with the same settings, as
long as the raw files of its languages are those it was made from (by content, recorded in its
raw-files.json): other text under the same raw_dir fails the point, naming the files, and the
shards stay as they are. Other points use the config's data.shard_dir as it is.

OUT/table.md and OUT/table.csv, and the same two tables beside the sweep file (SWEEP_FILE's stem
.md and .csv, to be committed), rewritten atomically when a point starts and ends (the markdown
is also printed): point, status, overrides, vocabulary size and type, updates, epochs, train
wall time (s, summed over
every train process of the point, from metrics.jsonl), mean target tokens/s, best val loss and
nll, val BLEU (averaged checkpoint, beam 5), val lc-tok BLEU, and the machine the point
trained on: its CPU model, or on a GPU "<GPU model> (host: <CPU model>)". A sweep with a
multilingual point has one more column after the val BLEU (there its mean): each direction's,
"de-en 35.12, en-de 30.01"; a bilingual sweep's tables are as they were.

Rerunning the same command continues the sweep: finished points are skipped (their files are
not touched), and so are points the committed table beside the sweep file has finished with the
same config, common line and overrides, so that a sweep goes on on another machine where OUT is
gone (the table keeps their rows as committed), even where OUT holds a start of them that left
no checkpoint (one this machine's train refused); a row the
committed table has unfinished (interrupted, running or failed elsewhere) is kept as it stands
until this machine runs that point, and dropped to pending if the point's settings changed since;
an interrupted point resumes with `train --resume auto` (or is only evaluated if
its training had ended). A time budget counts per train process, so a resumed process gets
train.max_minutes = the budget minus the training wall time already spent (metrics.jsonl).
A point whose config or overrides in the sweep file differ from those it was started or
finished with (in OUT or in the committed table) is refused (exit 2): rename it, or remove its
directory or its committed row to rerun it. An --out
that exists, is not empty and holds no sweep's table.csv or NAME/sweep_point.json (a run,
shards, raw data, anything else) is refused (exit 2): the sweep writes only where it wrote before.

A train, average or evaluate that fails marks its point failed (the end of its log is
printed); the sweep goes on with the next point and exits 1 at the end, naming the failures.
SIGINT or SIGTERM while a point runs is passed to the running program as SIGTERM (train writes
last.pt and stops; such a run is not recorded as finished), then the sweep exits 128+signal;
rerun it to continue. --dry-run prints the commands and writes nothing.

--only NAME[,NAME...] runs (or, with --dry-run, prints) only the named points, in file order, and
passes over the others as they stand; the tables still list every point. It is how a sweep goes
on on a machine that cannot run some of its points (train.precision=bf16 on a CPU without bf16
instructions is refused by train). A name that is no point of the file is refused (exit 2).

--jobs N runs N points at once: the CPUs the sweep may use (its affinity: `taskset -c 0-15
tools/sweep.py ...` narrows them) are split into N equal runs of consecutive CPUs, and each job
runs its points' programs pinned to its own run, taking the next point in file order when one
ends (a point whose train.threads exceeds its job's CPUs is named in the log). Points with the
same data settings preprocess their shards once; the others wait for them. A signal stops every
running point as above. Results are those of one point at a time (the same programs, configs
and threads); only the order in which points end changes. More jobs than CPUs is refused
(exit 2). Use it on a machine with many cores, or to share one GPU among several small models
(train.device=cuda points are host-bound at the tiny shape).

Needs only Python's standard library.
"""
import argparse
import os
import sys

# The code is in tools/sweeplib/ (beside this script, so importable from any working directory),
# one job a module: see its __init__.py.
from sweeplib.bleu import find_scorer_python
from sweeplib.committed import finished_rows, read_committed
from sweeplib.context import Context, check_programs, resolve_points
from sweeplib.errors import EXIT_BAD_INPUT, EXIT_FAILED, SweepError
from sweeplib.files import check_out
from sweeplib.jobs import cpu_slices
from sweeplib.loop import dry_run, run_sweep
from sweeplib.shards import assign_shard_dirs
from sweeplib.state import check_recorded_settings
from sweeplib.sweep_file import parse_sweep, select_points

PROG = "sweep.py"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n", 2)[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep_file", metavar="SWEEP_FILE", help="the sweep: config, common and point lines")
    parser.add_argument("--out", metavar="DIR", help="where the run directories and tables go "
                                                     "(default runs/sweeps/<SWEEP_FILE's stem>)")
    parser.add_argument("--build", metavar="DIR", default="build", help="the build directory (default build)")
    parser.add_argument("--shards", metavar="DIR", default=os.path.join("runs", "sweeps", "shards"),
                        help="where points that override data.* preprocessing keys get their shards "
                             "(default runs/sweeps/shards)")
    parser.add_argument("--only", metavar="NAME[,NAME...]", help="run only these points (the tables list all)")
    parser.add_argument("--jobs", metavar="N", type=int, default=1,
                        help="run N points at once, each on its own 1/N of the sweep's CPUs (default 1)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands it would run; write nothing")
    return parser.parse_args(argv)


def fail(code, message):
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)
    return code


def main(argv=None):
    args = parse_args(argv)  # usage errors: argparse's message, exit 2
    out = args.out or os.path.join("runs", "sweeps", os.path.splitext(os.path.basename(args.sweep_file))[0])
    try:
        ctx = Context(parse_sweep(args.sweep_file), out, args.build, args.shards)
        ctx.only = select_points(ctx.sweep, args.only)
        if args.jobs != 1:
            ctx.job_cpus = cpu_slices(args.jobs)
        check_out(ctx.out)
        check_programs(ctx, (("trainer", "train"), ("trainer", "average"), ("eval", "evaluate"),
                             ("data", "preprocess")))
        resolve_points(ctx)
        assign_shard_dirs(ctx)
        ctx.committed_rows = read_committed(ctx)
        ctx.committed = finished_rows(ctx.committed_rows)
        check_recorded_settings(ctx)
        ctx.scorer_python = find_scorer_python()
    except SweepError as e:
        return fail(EXIT_BAD_INPUT, str(e))
    if args.dry_run:
        return dry_run(ctx)
    try:
        return run_sweep(ctx)
    except (OSError, SweepError) as e:
        return fail(EXIT_FAILED, str(e))


if __name__ == "__main__":
    sys.exit(main())
