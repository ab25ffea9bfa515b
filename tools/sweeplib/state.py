"""What OUT/NAME records of a point (sweep_point.json, result.json): its state loaded and saved,
and a point recorded with other settings than the sweep file's refused."""
import json
import os
import shlex

from .committed import committed_match
from .errors import SweepError
from .files import RESULT, STATE, read_json, write_atomic


def check_recorded_settings(ctx):
    """Refuse to continue or report a point started or finished with other settings."""
    for point in ctx.sweep.points:
        committed_match(ctx, point)
        recorded = read_json(ctx.path(point, RESULT)) or read_json(ctx.path(point, STATE))
        where = f"{ctx.sweep.where(point.line)}: point '{point.name}'"
        if recorded is None:
            if os.path.isdir(ctx.point_dir(point)) and os.listdir(ctx.point_dir(point)):
                raise SweepError(f"{where}: {ctx.point_dir(point)} exists but was not made by a sweep "
                                 f"(no {STATE}); remove it or choose another --out")
            continue
        now = {"config": ctx.sweep.config, "overrides": ctx.sweep.overrides(point)}
        then = {k: recorded.get(k) for k in now}
        if then != now:
            what = "finished" if os.path.exists(ctx.path(point, RESULT)) else "was started"
            raise SweepError(f"{where}: {what} in {ctx.point_dir(point)} with config {then['config']} and "
                             f"overrides {shlex.join(then['overrides'] or [])}, but the sweep file now gives "
                             f"config {now['config']} and overrides {shlex.join(now['overrides'])}; rename the point "
                             f"or remove its directory to rerun it")


def load_state(ctx, point):
    state = read_json(ctx.path(point, STATE))
    if state is None:
        state = {"config": ctx.sweep.config, "overrides": ctx.sweep.overrides(point), "trained": False, "cpus": []}
    return state


def save_state(ctx, point, state):
    os.makedirs(ctx.point_dir(point), exist_ok=True)
    write_atomic(ctx.path(point, STATE), json.dumps(state, indent=1) + "\n")
