"""The committed table beside the sweep file: its finished rows read, matched against the sweep
file, and the points it lets a sweep on another machine skip."""
import csv
import os
import shlex

from .columns import CSV_COLUMNS
from .errors import SweepError
from .files import RESULT


def read_committed(ctx):
    """{point: row} of every row of the committed table, {} when there is none."""
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
    return {row["point"]: row for row in rows}


def finished_rows(rows):
    """The finished rows of read_committed's {point: row}."""
    return {name: row for name, row in rows.items() if row["status"] == "finished"}


def settings_now(ctx, point):
    return ctx.sweep.config, shlex.join(ctx.sweep.common), shlex.join(point.overrides)


def settings_then(row):
    return row["config"], row["common"], row["overrides"]


def committed_match(ctx, point):
    """The committed finished row of the point, or None; SweepError when that row was run with
    another config, common line or overrides than the sweep file gives now."""
    row = ctx.committed.get(point.name)
    if row is None:
        return None
    now, then = settings_now(ctx, point), settings_then(row)
    if then != now:
        raise SweepError(f"{ctx.sweep.where(point.line)}: point '{point.name}': finished in "
                         f"{ctx.committed_table()}.csv with config {then[0]}, common '{then[1]}' and overrides "
                         f"'{then[2]}', but the sweep file now gives config {now[0]}, common '{now[1]}' and "
                         f"overrides '{now[2]}'; rename the point or delete its row to rerun it")
    return row


def finished_elsewhere(ctx, point):
    """True when the committed table has the point finished and OUT holds no checkpoint of it: a
    point OUT has trained is continued or reported from OUT, as before, while a start that left no
    checkpoint (a run this machine's train refused) does not make a finished point train again."""
    if point.name not in ctx.committed or os.path.exists(ctx.path(point, RESULT)):
        return False
    here = ctx.point_dir(point)
    return not (os.path.isdir(here) and any(name.endswith(".pt") for name in os.listdir(here)))


def committed_unfinished_row(ctx, point):
    """The committed row of a point that is not finished there, when OUT holds nothing of the
    point and the row was made with the settings the sweep file gives now: what another machine
    recorded (interrupted, running, failed) stays in the table until this one runs the point.
    None otherwise (a row of other settings: the point was revised before it started)."""
    row = ctx.committed_rows.get(point.name)
    if row is None or row["status"] == "finished" or os.path.isdir(ctx.point_dir(point)):
        return None
    return row if settings_then(row) == settings_now(ctx, point) else None
