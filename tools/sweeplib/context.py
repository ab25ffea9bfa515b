"""The sweep's state in one run (Context: paths, command lines, what is known of each point) and
every point's config resolved by `train --print-config` before anything runs."""
import json
import os
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .errors import SweepError
from .files import cpu_model
from .runner import Runner
from .sweep_file import Sweep


@dataclass
class Context:
    sweep: Sweep
    out: str
    build: str
    shards: str = os.path.join("runs", "sweeps", "shards")  # where points' own shards go
    runner: Runner = field(default_factory=Runner)
    resolved: dict = field(default_factory=dict)  # point name -> {"section.key": value}
    shard_dirs: dict = field(default_factory=dict)  # point name -> its own shards (data.* overrides)
    committed: dict = field(default_factory=dict)  # point name -> its finished row of the committed table
    committed_rows: dict = field(default_factory=dict)  # point name -> its row of the committed table, any status
    status: dict = field(default_factory=dict)    # point name -> "running" / "failed" in this run
    only: set = None  # --only: the names of the points this run may run; None: all
    failures: list = field(default_factory=list)
    cpu: str = field(default_factory=cpu_model)
    scorer_python: str = None  # a Python that runs tools/score_lc_tok.py; None: no lc-tok column
    job_cpus: list = None  # --jobs N > 1: each job's CPUs (jobs.cpu_slices); None: one point at a time
    # Held by the jobs around what they share: status, failures, the tables' files, shard dirs.
    lock: threading.RLock = field(default_factory=threading.RLock)
    shard_locks: dict = field(default_factory=dict)  # shard dir -> the lock of its one preprocess

    def selected(self, point):
        return self.only is None or point.name in self.only

    def binary(self, folder, name):
        return os.path.join(self.build, folder, name)

    def point_dir(self, point):
        return os.path.join(self.out, point.name)

    def path(self, point, name):
        return os.path.join(self.out, point.name, name)

    def base_command(self, program, point):
        """program --config C <common> <point> [data.shard_dir=S] train.save_dir=OUT/NAME: the
        command line of train, evaluate and preprocess (S: the point's own shards, if any)."""
        own_shards = [f"data.shard_dir={self.shard_dirs[point.name]}"] if point.name in self.shard_dirs else []
        return [program, "--config", self.sweep.config, *self.sweep.overrides(point), *own_shards,
                f"train.save_dir={self.point_dir(point)}"]

    def multilingual(self):
        """True when a point of the sweep is multilingual (data.directions): its table has the
        per-direction BLEU column."""
        return any(point_directions(self.resolved.get(point.name, {})) for point in self.sweep.points)

    def committed_table(self):
        """The table committed beside the sweep file: SWEEP_FILE's stem + .csv / .md."""
        return os.path.splitext(self.sweep.path)[0]


def check_programs(ctx, programs):
    """SweepError naming the first of (folder, name) that BUILD lacks."""
    for folder, name in programs:
        if not os.access(ctx.binary(folder, name), os.X_OK):
            raise SweepError(f"{ctx.binary(folder, name)}: no such program (build first, or pass --build DIR)")


def parse_printed_config(text):
    """{"section.key": value} from `train --print-config` (two-level YAML, strings double-quoted)."""
    values, section = {}, None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, _, value = line.strip().partition(":")
        if not line.startswith(" "):
            section = key
            continue
        value = value.strip()
        if value.startswith('"'):
            try:
                value = json.loads(value)
            except ValueError:
                value = value[1:-1]
        values[f"{section}.{key}"] = value
    return values


def point_directions(resolved):
    """A multilingual point's directions (data.directions, printed as a flow list "[de-en, en-de]"),
    in the config's order; [] for a bilingual one."""
    text = str(resolved.get("data.directions") or "").strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return [word.strip().strip('"') for word in text.split(",") if word.strip()]


def resolve_points(ctx):
    """Every point's resolved config, by train itself: a bad key or value is refused before
    anything runs, and the sweep learns the budget, raw_dir and languages train will use.
    The train processes run a few at a time (each is mostly LibTorch's start-up, ~1.5 s); the
    first bad point in file order is the one named."""
    train = ctx.binary("trainer", "train")

    def print_config(point):
        cmd = ctx.base_command(train, point) + ["--print-config"]
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        printed = list(pool.map(print_config, ctx.sweep.points))
    for point, proc in zip(ctx.sweep.points, printed):
        if proc.returncode != 0:
            lines = [l for l in proc.stderr.splitlines() if l.strip()] or [f"exit {proc.returncode}"]
            raise SweepError(f"{ctx.sweep.where(point.line)}: point '{point.name}': {lines[-1]}")
        ctx.resolved[point.name] = parse_printed_config(proc.stdout)
