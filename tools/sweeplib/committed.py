"""The committed table beside the sweep file: its finished rows read, matched against the sweep
file, and the points it lets a sweep on another machine skip."""
import csv
import os
import shlex

from .columns import CSV_COLUMNS
from .errors import SweepError
from .files import RESULT, STATE


def read_committed(ctx):
    """{point: row} of the finished rows of the committed table, {} when there is none."""
    path = ctx.committed_table() + ".csv"
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
            header = rows[0].keys() if rows else []
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise SweepError(f"{path}: unreadable committed table ({e})") from None
    if rows and not set(CSV_COLUMNS) <= set(header):
        missing = ", ".join(c for c in CSV_COLUMNS if c not in header)
        raise SweepError(f"{path}: not a sweep table of this version (no column {missing}); "
                         f"move it away to start the table anew")
    return {row["point"]: row for row in rows if row["status"] == "finished"}


def committed_match(ctx, point):
    """The committed finished row of the point, or None; SweepError when that row was run with
    another config, common line or overrides than the sweep file gives now."""
    row = ctx.committed.get(point.name)
    if row is None:
        return None
    now = (ctx.sweep.config, shlex.join(ctx.sweep.common), shlex.join(point.overrides))
    then = (row["config"], row["common"], row["overrides"])
    if then != now:
        raise SweepError(f"{ctx.sweep.where(point.line)}: point '{point.name}': finished in "
                         f"{ctx.committed_table()}.csv with config {then[0]}, common '{then[1]}' and overrides "
                         f"'{then[2]}', but the sweep file now gives config {now[0]}, common '{now[1]}' and "
                         f"overrides '{now[2]}'; rename the point or delete its row to rerun it")
    return row


def finished_elsewhere(ctx, point):
    """True when the committed table has the point finished and OUT holds nothing of it (a point
    OUT has started or finished is continued or reported from OUT, as before)."""
    local = any(os.path.exists(ctx.path(point, name)) for name in (RESULT, STATE))
    return not local and point.name in ctx.committed
