"""The sweep over its points in file order (or --jobs at once: jobs.py): skip the finished, run
the others, stop on a signal, say what failed; or, dry, print the commands it would run."""
import os
import shlex

from .bleu import lc_tok_command
from .committed import finished_elsewhere
from .context import point_directions
from .errors import EXIT_FAILED, Interrupted, PointFailed
from .files import RESULT, STATE, read_json, tail
from .jobs import Jobs, format_cpus, warn_crowded
from .points import AVERAGE_LAST, evaluate_command, run_point, train_command
from .runner import say
from .shards import preprocess_command
from .tables import write_tables


def run_one(ctx, point, show):
    if not ctx.selected(point):
        say(f"point {point.name}: not among --only's, passed over")
        return
    if os.path.exists(ctx.path(point, RESULT)):
        say(f"point {point.name}: finished ({ctx.path(point, RESULT)}), skipped")
        return
    if finished_elsewhere(ctx, point):
        say(f"point {point.name}: finished in {ctx.committed_table()}.csv (on {ctx.committed[point.name]['cpu']}), "
            f"skipped")
        return
    ctx.status[point.name] = "running"
    write_tables(ctx, show=False)
    try:
        result = run_point(ctx, point)
    except PointFailed as e:
        ctx.status[point.name] = "failed"
        ctx.failures.append(f"{point.name}: {e} (log {e.log})")
        say(f"point {point.name}: FAILED: {e}; the end of {e.log}:\n{tail(e.log)}")
    else:
        ctx.status.pop(point.name)
        mean = f" (the mean of {len(result['directions'])} directions)" if "directions" in result else ""
        say(f"point {point.name}: finished: {result['updates']} updates, val BLEU {result['val_bleu']:.2f}{mean}")
    write_tables(ctx, show)


def run_in_order(ctx):
    """One point at a time, in file order: the names of the points a signal stopped."""
    current = None
    try:
        for current in ctx.sweep.points:
            run_one(ctx, current, show=current is not ctx.sweep.points[-1])  # the last: below
    except Interrupted:
        ctx.status[current.name] = "interrupted"
        return [current.name]
    return []


def run_sweep(ctx):
    ctx.runner.install()
    os.makedirs(ctx.out, exist_ok=True)
    if ctx.job_cpus:
        say(f"{ctx.sweep.path}: {len(ctx.sweep.points)} points into {ctx.out} on {ctx.cpu}, {len(ctx.job_cpus)} "
            f"at once on CPUs " + " / ".join(format_cpus(cpus) for cpus in ctx.job_cpus))
        warn_crowded(ctx, ctx.job_cpus)
        jobs = Jobs(ctx, run_one)
        interrupted = jobs.run(ctx.job_cpus)
        if jobs.error is not None:
            write_tables(ctx, show=False)
            raise jobs.error
    else:
        say(f"{ctx.sweep.path}: {len(ctx.sweep.points)} points into {ctx.out} on {ctx.cpu}")
        interrupted = run_in_order(ctx)
    write_tables(ctx, show=not interrupted)
    if interrupted:
        say(f"stopped by signal {ctx.runner.signum} during point {', '.join(interrupted)}; "
            f"{'it is' if len(interrupted) == 1 else 'they are'} not finished. Run the same command again to continue")
        return 128 + ctx.runner.signum
    count = f"{len(ctx.only)} selected" if ctx.only is not None else len(ctx.sweep.points)
    if ctx.runner.signum:
        return 128 + ctx.runner.signum
    if ctx.failures:
        say(f"{len(ctx.failures)} of {count} points failed:\n  " + "\n  ".join(ctx.failures))
        return EXIT_FAILED
    say(f"all {count} points finished; table: {os.path.join(ctx.out, 'table.md')}")
    return 0


def dry_run(ctx):
    """Print what a run would do now, given what OUT holds; write nothing."""
    if ctx.job_cpus:
        print(f"# {len(ctx.job_cpus)} jobs at once, on CPUs " + " / ".join(format_cpus(c) for c in ctx.job_cpus))
    for point in ctx.sweep.points:
        if not ctx.selected(point):
            print(f"# point {point.name}: not among --only's, passed over")
            continue
        if os.path.exists(ctx.path(point, RESULT)):
            print(f"# point {point.name}: finished ({ctx.path(point, RESULT)}), skipped")
            continue
        if finished_elsewhere(ctx, point):
            print(f"# point {point.name}: finished in {ctx.committed_table()}.csv, skipped")
            continue
        print(f"# point {point.name}:")
        cmd = preprocess_command(ctx, point)
        if cmd:
            print(f"{shlex.join(cmd)} > {shlex.quote(ctx.path(point, 'preprocess.out'))} 2>&1")
        if (read_json(ctx.path(point, STATE)) or {}).get("trained"):
            print("# its training has ended: evaluation only")
        else:
            cmd = train_command(ctx, point)
            print(f"{shlex.join(cmd)} >> {shlex.quote(ctx.path(point, 'train.out'))} 2>&1" if cmd
                  else "# its time budget is spent: no training")
        averaged = ctx.path(point, "averaged.pt")
        print(shlex.join([ctx.binary("trainer", "average"), "--output", averaged, "--last", str(AVERAGE_LAST),
                          ctx.point_dir(point)]) + f"  # --last min({AVERAGE_LAST}, update_N.pt there)")
        for direction in point_directions(ctx.resolved[point.name]) or [None]:  # multilingual: each direction
            print(shlex.join(evaluate_command(ctx, point, averaged, direction)) + "  # last.pt when fewer than 2 update_N.pt")
            if ctx.scorer_python:
                cmd = lc_tok_command(ctx, point, direction=direction)
                print(shlex.join(cmd) if cmd else "# no raw val reference for the lc-tok BLEU")
    return 0
