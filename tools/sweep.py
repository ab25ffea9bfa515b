#!/usr/bin/env python3
"""Run a sweep of training runs one after another, evaluate each on val, and keep a table.

    tools/sweep.py SWEEP_FILE [--out DIR] [--build DIR] [--shards DIR] [--dry-run]

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

Selection is on val only: the sweep never decodes or scores the test set.

A point whose overrides set a data.* key that changes what preprocess writes (vocabulary size or
type, languages, raw_dir, splits, num_shards, max_len) and no data.shard_dir of its own trains on
shards made for it: SHARDS/<src>-<tgt>_<type><vocab>_<hash of those settings> (SHARDS:
--shards, default runs/sweeps/shards), preprocessed once before its training (log
OUT/NAME/preprocess.out) and reused by every point, of any sweep, with the same settings. Other
points use the config's data.shard_dir as it is.

OUT/table.md and OUT/table.csv, and the same two tables beside the sweep file (SWEEP_FILE's stem
.md and .csv, to be committed), rewritten atomically when a point starts and ends (the markdown
is also printed): point, status, overrides, vocabulary size and type, updates, epochs, train
wall time (s, summed over
every train process of the point, from metrics.jsonl), mean target tokens/s, best val loss and
nll, val BLEU (averaged checkpoint, beam 5), val lc-tok BLEU, and the CPU model the point
trained on.

Rerunning the same command continues the sweep: finished points are skipped (their files are
not touched), and so are points the committed table beside the sweep file has finished with the
same config, common line and overrides, so that a sweep goes on on another machine where OUT is
gone (the table keeps their rows as committed); an interrupted point resumes with `train --resume auto` (or is only evaluated if
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

Needs only Python's standard library.
"""
import argparse
import csv
import ctypes
import datetime
import glob
import hashlib
import io
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field

from nmtrain_dirs import nmtrain_content  # tools/, beside this script

PROG = "sweep.py"
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
NAME_RE = re.compile(r"[A-Za-z0-9_.-]+\Z")
OVERRIDE_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*)=(.*)\Z", re.S)
UPDATE_FILE_RE = re.compile(r"update_(\d+)\.pt\Z")
AVERAGE_LAST = 5
BEAM = 5
LOG_TAIL_LINES = 12
RESULT, STATE = "result.json", "sweep_point.json"
SCORER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "score_lc_tok.py")
COLUMNS = ("point", "status", "overrides", "vocab_size", "spm_model_type", "updates", "epochs", "train_wall_s",
           "tgt_tokens_per_s", "best_valid_loss", "best_valid_nll", "val_bleu", "val_lc_tok_bleu", "cpu")
HEADERS = ("point", "status", "overrides", "vocab", "spm type", "updates", "epochs", "train wall s", "tgt tok/s",
           "best val loss", "best val nll", "val BLEU (avg, beam 5)", "val lc-tok BLEU", "CPU")
# The committed table (SWEEP_FILE's stem .csv beside it) also says what each row was run with,
# so that a sweep continued on another machine knows which points it need not train again.
CSV_COLUMNS = COLUMNS + ("config", "common")
# The data.* keys whose value changes what `preprocess` writes. A point that overrides one gets
# shards of its own, made once under --shards and shared by every point with the same values.
PREPROCESS_KEYS = ("data.raw_dir", "data.src_lang", "data.tgt_lang", "data.train_split", "data.valid_split",
                   "data.test_split", "data.spm_model", "data.vocab_size", "data.spm_model_type",
                   "data.num_shards", "data.max_len")


class SweepError(Exception):
    """Bad input: one message, exit 2, nothing run or written."""


class PointFailed(Exception):
    """A program of the point failed: message and the log to show the end of."""

    def __init__(self, message, log):
        super().__init__(message)
        self.log = log


class Interrupted(Exception):
    """SIGINT/SIGTERM reached the sweep: exit 128 + signal after the child stopped."""

    def __init__(self, signum):
        super().__init__(f"signal {signum}")
        self.signum = signum


@dataclass
class Point:
    name: str
    line: int
    overrides: list


@dataclass
class Sweep:
    path: str
    config: str = None
    common: list = field(default_factory=list)
    points: list = field(default_factory=list)

    def where(self, line):
        return f"{self.path}:{line}"

    def overrides(self, point):
        return self.common + point.overrides


# ---------------------------------------------------------------- the sweep file

def parse_overrides(words, where):
    """The key=value words of one line, checked for form and for keys the sweep owns."""
    seen = set()
    for word in words:
        m = OVERRIDE_RE.match(word)
        if not m:
            raise SweepError(f"{where}: '{word}' is not an override of the form section.key=value")
        key = m.group(1)
        if key == "train.save_dir":
            raise SweepError(f"{where}: train.save_dir is set by the sweep (OUT/NAME); remove it")
        if key in seen:
            raise SweepError(f"{where}: {key} given twice on this line")
        seen.add(key)
    return list(words)


def directive_config(sweep, args, line):
    where = sweep.where(line)
    if sweep.config is not None:
        raise SweepError(f"{where}: a second 'config' line (the base config is given once)")
    if len(args) != 1:
        raise SweepError(f"{where}: 'config' takes one path, got {len(args)} words")
    if not os.path.isfile(args[0]):
        raise SweepError(f"{where}: config file '{args[0]}' does not exist")
    sweep.config = args[0]


def directive_common(sweep, args, line):
    where = sweep.where(line)
    if not args:
        raise SweepError(f"{where}: 'common' without overrides")
    sweep.common += parse_overrides(args, where)


def directive_point(sweep, args, line):
    where = sweep.where(line)
    if not args:
        raise SweepError(f"{where}: 'point' needs a name")
    name = args[0]
    if not NAME_RE.match(name):
        raise SweepError(f"{where}: point name '{name}' may only have letters, digits, '_', '.' and '-'")
    if not name.strip("."):  # OUT/. is OUT itself, OUT/.. the folder above it
        raise SweepError(f"{where}: point name '{name}' names no directory of its own under OUT")
    for other in sweep.points:
        if other.name == name:
            raise SweepError(f"{where}: point '{name}' is already defined at line {other.line}")
    sweep.points.append(Point(name, line, parse_overrides(args[1:], where)))


DIRECTIVES = {"config": directive_config, "common": directive_common, "point": directive_point}


def budget_number(key, value, where):
    """The limit a budget override sets (0: none); SweepError when it is not a number."""
    try:
        number = int(value) if key == "train.max_updates" else float(value)
    except ValueError:
        raise SweepError(f"{where}: {key}={value} is not a number") from None
    return number if math.isfinite(number) and number > 0 else 0


def check_budget(sweep, point):
    """Refuse a point whose common + own overrides set neither max_updates nor max_minutes > 0."""
    budget = {}
    for word in sweep.overrides(point):
        key, value = word.split("=", 1)
        if key in ("train.max_updates", "train.max_minutes"):
            budget[key] = value  # the last one given wins, as in train
    where = sweep.where(point.line)
    if not any([budget_number(key, value, where) for key, value in budget.items()]):
        raise SweepError(f"{where}: point '{point.name}' has no budget: give train.max_updates=N and/or "
                         f"train.max_minutes=M (> 0) on a 'common' line or on the point")


def parse_sweep(path):
    """Sweep from a sweep file; SweepError naming FILE:LINE on any bad line."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise SweepError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    sweep = Sweep(path)
    for number, text in enumerate(lines, 1):
        where = sweep.where(number)
        try:
            words = shlex.split(text, comments=True)
        except ValueError as e:
            raise SweepError(f"{where}: {e}") from None
        if not words:
            continue
        handler = DIRECTIVES.get(words[0])
        if handler is None:
            raise SweepError(f"{where}: unknown directive '{words[0]}' (expected config, common or point)")
        handler(sweep, words[1:], number)
    end = sweep.where(max(len(lines), 1))
    if sweep.config is None:
        raise SweepError(f"{end}: no 'config' line (the base config, e.g. 'config configs/multi30k_de_en.yaml')")
    if not sweep.points:
        raise SweepError(f"{end}: no 'point' line")
    for point in sweep.points:
        check_budget(sweep, point)
    return sweep


# ---------------------------------------------------------------- files

def write_atomic(path, text):
    """Write beside the target and rename: a reader (or a kill) never sees half a file."""
    tmp = f"{os.path.join(os.path.dirname(path) or '.', '.' + os.path.basename(path))}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def is_sweep_out(out, entries):
    """True when the directory out holds what a sweep writes: its table.csv, or a point
    directory with sweep_point.json or result.json."""
    try:
        with open(os.path.join(out, "table.csv"), encoding="utf-8") as f:
            if f.readline().startswith("point,status,"):
                return True
    except (OSError, UnicodeDecodeError):
        pass
    return any(os.path.isfile(os.path.join(out, e, name)) for e in entries for name in (STATE, RESULT))


def check_out(out):
    """Refuse an --out that exists but was not written by a sweep: the tables and point
    directories must not land among a run's checkpoints, shards, raw data or anyone's files
    (a table.md there would be replaced)."""
    if not os.path.exists(out):
        return
    if not os.path.isdir(out):
        raise SweepError(f"--out {out}: exists and is not a directory")
    entries = os.listdir(out)
    if not entries or is_sweep_out(out, entries):
        return
    what = nmtrain_content(entries) or f"'{sorted(entries)[0]}'"
    raise SweepError(f"--out {out}: exists and holds {what}, but no sweep wrote there (no table.csv or "
                     f"NAME/{STATE}): choose another --out, or an empty or new directory")


def read_json(path):
    """The JSON object in path, or None when there is no such file."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise SweepError(f"{path}: unreadable ({e}); remove it to rerun that point") from None


def tail(path, lines=LOG_TAIL_LINES):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def cpu_model():
    """The "model name" of /proc/cpuinfo with its family and model: speeds in the table depend on
    it, and one name ("AMD EPYC" in a VM) can cover CPUs of twice the speed of one another."""
    fields = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if not key.strip():
                    break  # the first processor's block is enough
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name", "unknown")
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']}, model {fields['model']})"
    return name


# ---------------------------------------------------------------- metrics.jsonl

def read_metrics(path):
    """The records of metrics.jsonl in file order; a line a kill cut short is skipped."""
    try:
        with open(path, "rb") as f:
            raw_lines = f.read().split(b"\n")
    except FileNotFoundError:
        return None
    records = []
    for raw in raw_lines:
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("update"), int):
            records.append(rec)
    return records


def numbers(records, key):
    return [r[key] for r in records if isinstance(r.get(key), (int, float))]  # JSON null = NaN: skipped


def summarize_metrics(path):
    """What the table shows of a run, or None before its metrics.jsonl exists.

    A {"event": "start"} record begins a train process: wall_s restarts at 0 there, so the
    time spent is the sum of each process's largest wall_s; records of earlier processes from
    the start's update on were rolled back by the resume and leave the history (as plot_run).
    """
    records = read_metrics(path)
    if records is None:
        return None
    history, walls = [], []
    for rec in records:
        event = rec.get("event")
        if event == "start":
            history = [r for r in history if r["update"] < rec["update"]]
            walls.append(0.0)
        elif event in ("train", "valid"):
            if not walls:
                walls.append(0.0)
            walls[-1] = max([walls[-1]] + numbers([rec], "wall_s"))
            history.append(rec)
    train = [r for r in history if r["event"] == "train"]
    valid = [r for r in history if r["event"] == "valid"]
    speeds = numbers(train, "tgt_tokens_per_s")
    return {
        "updates": max((r["update"] for r in history), default=0),
        "epochs": history[-1].get("epoch") if history else None,
        "train_wall_s": sum(walls),
        "train_processes": len(walls),
        "tgt_tokens_per_s": sum(speeds) / len(speeds) if speeds else None,
        "best_valid_loss": min(numbers(valid, "valid_loss"), default=None),
        "best_valid_nll": min(numbers(valid, "valid_nll"), default=None),
    }


# ---------------------------------------------------------------- running programs

def _load_libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _load_libc()
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """In the child: SIGTERM when the sweep dies (even by SIGKILL), so that train checkpoints
    and stops rather than running on unwatched and holding its save_dir's lock."""
    if _LIBC is not None and sys.platform.startswith("linux"):
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Runner:
    """Runs one program at a time; SIGINT/SIGTERM to the sweep become one SIGTERM to it."""

    def __init__(self):
        self.child = None
        self.signum = None

    def install(self):
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum, _frame):
        self.signum = self.signum or signum
        self._forward()

    def _forward(self):
        try:
            if self.child is not None and self.child.returncode is None:
                os.kill(self.child.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass

    def run(self, cmd, stdout, stderr):
        """Exit status of cmd (negative: killed by that signal); Interrupted if we were signalled,
        whatever the status: train exits 0 when stopped by a signal, and is not finished."""
        if self.signum:
            raise Interrupted(self.signum)
        # Its own session: a Ctrl-C at the terminal reaches only the sweep, which forwards
        # one SIGTERM (a second SIGINT would make train die at once, without a checkpoint).
        self.child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                      start_new_session=True, preexec_fn=_die_with_parent)
        if self.signum:
            self._forward()  # the signal came while the child was being started
        rc = self.child.wait()
        self.child = None
        if self.signum:
            raise Interrupted(self.signum)
        return rc


def say(message):
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    print(f"[sweep {stamp}] {message}", flush=True)


# ---------------------------------------------------------------- the sweep's state

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
    status: dict = field(default_factory=dict)    # point name -> "running" / "failed" in this run
    failures: list = field(default_factory=list)
    cpu: str = field(default_factory=cpu_model)
    scorer_python: str = None  # a Python that runs tools/score_lc_tok.py; None: no lc-tok column

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

    def committed_table(self):
        """The table committed beside the sweep file: SWEEP_FILE's stem + .csv / .md."""
        return os.path.splitext(self.sweep.path)[0]


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


def resolve_points(ctx):
    """Every point's resolved config, by train itself: a bad key or value is refused before
    anything runs, and the sweep learns the budget, raw_dir and languages train will use."""
    train = ctx.binary("trainer", "train")
    for point in ctx.sweep.points:
        cmd = ctx.base_command(train, point) + ["--print-config"]
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if proc.returncode != 0:
            lines = [l for l in proc.stderr.splitlines() if l.strip()] or [f"exit {proc.returncode}"]
            raise SweepError(f"{ctx.sweep.where(point.line)}: point '{point.name}': {lines[-1]}")
        ctx.resolved[point.name] = parse_printed_config(proc.stdout)


def data_settings(resolved):
    """The preprocessing settings of a resolved config, in PREPROCESS_KEYS order."""
    return {key: resolved.get(key) for key in PREPROCESS_KEYS}


def own_shard_dir(ctx, point):
    """SHARDS/<src>-<tgt>_<type><vocab>_<hash of every preprocessing setting>: one directory per
    distinct data setting, so points (and sweeps) that agree on them share one preprocess."""
    settings = data_settings(ctx.resolved[point.name])
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]
    name = (f"{settings['data.src_lang']}-{settings['data.tgt_lang']}_{settings['data.spm_model_type']}"
            f"{settings['data.vocab_size']}_{digest}")
    return os.path.join(ctx.shards, re.sub(r"[^A-Za-z0-9_.-]", "_", name))


def assign_shard_dirs(ctx):
    """Points whose overrides change what preprocess writes, and name no data.shard_dir of their
    own, get SHARDS/<settings>; the others use the config's shard_dir as it is."""
    for point in ctx.sweep.points:
        keys = {word.split("=", 1)[0] for word in ctx.sweep.overrides(point)}
        if keys & set(PREPROCESS_KEYS) and "data.shard_dir" not in keys:
            ctx.shard_dirs[point.name] = own_shard_dir(ctx, point)


def preprocess_command(ctx, point):
    """preprocess's command for the point's own shards, or None when it has none or they exist."""
    shard_dir = ctx.shard_dirs.get(point.name)
    if shard_dir is None or os.path.isfile(os.path.join(shard_dir, "manifest.json")):
        return None  # preprocess publishes manifest.json last: with it, the shards are complete
    return ctx.base_command(ctx.binary("data", "preprocess"), point)


def ensure_shards(ctx, point):
    cmd, log = preprocess_command(ctx, point), ctx.path(point, "preprocess.out")
    if cmd is None:
        return
    say(f"point {point.name}: preprocessing its data settings: {shlex.join(cmd)} > {log}")
    with open(log, "wb") as out:
        rc = ctx.runner.run(cmd, out, subprocess.STDOUT)
    if rc != 0:
        raise PointFailed(f"preprocess ended with {describe_exit(rc)}", log)


# ---------------------------------------------------------------- the committed table

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


# ---------------------------------------------------------------- one point

def describe_exit(rc):
    return f"signal {-rc}" if rc < 0 else f"exit status {rc}"


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


def train_point(ctx, point, state):
    cmd = train_command(ctx, point)
    log = ctx.path(point, "train.out")
    if cmd is None:
        say(f"point {point.name}: its time budget is spent (metrics.jsonl); evaluating what it trained")
    else:
        if ctx.cpu not in state["cpus"]:
            state["cpus"].append(ctx.cpu)
        save_state(ctx, point, state)
        say(f"point {point.name}: training: {shlex.join(cmd)} >> {log}")
        with open(log, "ab") as out:
            rc = ctx.runner.run(cmd, out, subprocess.STDOUT)
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


def evaluate_command(ctx, point, checkpoint):
    return ctx.base_command(ctx.binary("eval", "evaluate"), point) + [
        "--checkpoint", checkpoint, "--split", "val", "--beam", str(BEAM), "--output", ctx.path(point, "val.hyp")]


def first_bleu(path, program):
    """(score, line) from the first line of a scorer's stdout, "BLEU = 37.09 ..."."""
    with open(path, encoding="utf-8", errors="replace") as f:
        line = f.readline().strip()
    m = re.match(r"BLEU = (\d+(?:\.\d+)?)", line)
    if not m:
        raise PointFailed(f"{program} printed no 'BLEU = ' line first", path)
    return float(m.group(1)), line


def evaluate_point(ctx, point, checkpoint):
    cmd = evaluate_command(ctx, point, checkpoint)
    stdout, stderr = ctx.path(point, "evaluate.out"), ctx.path(point, "evaluate.err")
    say(f"point {point.name}: evaluating on val: {shlex.join(cmd)}")
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        rc = ctx.runner.run(cmd, out, err)
    if rc != 0:
        raise PointFailed(f"evaluate ended with {describe_exit(rc)}", stderr)
    return first_bleu(stdout, "evaluate")


def raw_val_reference(resolved):
    """data.raw_dir/<valid_split>.<tgt_lang>, or its .gz; None when neither exists."""
    base = os.path.join(resolved.get("data.raw_dir", ""),
                        f"{resolved.get('data.valid_split', 'val')}.{resolved.get('data.tgt_lang', 'en')}")
    for path in (base, base + ".gz"):
        if os.path.isfile(path):
            return path
    return None


def can_score(python):
    probe = [python, "-c", "import sacrebleu, sacremoses"]
    return subprocess.run(probe, stdin=subprocess.DEVNULL, capture_output=True).returncode == 0


def find_scorer_python():
    """This Python when it has the scorer's packages, else the project's venv (launch/setup.sh):
    a sweep started with a bare python3 must not fail every point after training it."""
    if not os.path.isfile(SCORER):
        return None
    if can_score(sys.executable):
        return sys.executable
    cache = os.environ.get("NMTRAIN_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "nmtrain")
    for python in sorted(glob.glob(os.path.join(cache, "venv-torch*", "bin", "python")), reverse=True):
        if can_score(python):
            return python
    say("warning: the lc-tok BLEU column stays empty: tools/score_lc_tok.py needs sacrebleu and sacremoses, "
        "which neither this Python nor the project's venv has (launch/setup.sh installs them)")
    return None


def lc_tok_command(ctx, point):
    """tools/score_lc_tok.py's command (it reads .gz too), or None without a reference."""
    resolved = ctx.resolved[point.name]
    ref = raw_val_reference(resolved)
    if ref is None:
        return None
    return [ctx.scorer_python, SCORER, "--hyp", ctx.path(point, "val.hyp"), "--ref", ref,
            "--lang", resolved.get("data.tgt_lang", "en")]


def lc_tok_point(ctx, point):
    """lc-tok BLEU of val.hyp by tools/score_lc_tok.py; None when that tool is absent."""
    if ctx.scorer_python is None:
        return None
    cmd, log = lc_tok_command(ctx, point), ctx.path(point, "lc_tok.out")
    if cmd is None:
        raise PointFailed("no raw val reference for the lc-tok BLEU (data.raw_dir, data.valid_split)", log)
    with open(log, "wb") as out:
        rc = ctx.runner.run(cmd, out, subprocess.STDOUT)
    if rc != 0:
        raise PointFailed(f"score_lc_tok.py ended with {describe_exit(rc)}", log)
    return first_bleu(log, "score_lc_tok.py")[0]


def run_point(ctx, point):
    """Train (or resume), average, evaluate on val, then record result.json: last, so that
    its presence means the point is finished."""
    state = load_state(ctx, point)
    save_state(ctx, point, state)
    ensure_shards(ctx, point)
    if not state["trained"]:
        train_point(ctx, point, state)
    checkpoint, averaged = average_point(ctx, point)
    bleu, bleu_line = evaluate_point(ctx, point, checkpoint)
    lc_tok = lc_tok_point(ctx, point)
    result = {"point": point.name, "config": ctx.sweep.config, "overrides": ctx.sweep.overrides(point),
              "point_overrides": point.overrides, **summarize_metrics(ctx.path(point, "metrics.jsonl")),
              "checkpoint": os.path.basename(checkpoint), "averaged_last": averaged, "beam": BEAM,
              "val_bleu": bleu, "val_bleu_line": bleu_line, "val_lc_tok_bleu": lc_tok, "cpus": state["cpus"],
              "finished": datetime.datetime.now().isoformat(timespec="seconds")}
    write_atomic(ctx.path(point, RESULT), json.dumps(result, indent=1) + "\n")
    return result


# ---------------------------------------------------------------- the table

def table_row(ctx, point):
    """The row's values: result.json's when finished, else what metrics.jsonl has so far."""
    result = read_json(ctx.path(point, RESULT))
    state = read_json(ctx.path(point, STATE)) or {}
    resolved = ctx.resolved.get(point.name, {})
    if finished_elsewhere(ctx, point):
        return {**ctx.committed[point.name], "status": "finished"}  # as committed: trained elsewhere
    if result is not None:
        status, values = "finished", result
    else:
        values = summarize_metrics(ctx.path(point, "metrics.jsonl")) or {}
        started = os.path.isdir(ctx.point_dir(point))
        status = ctx.status.get(point.name) or ("interrupted" if started else "pending")
    row = {key: values.get(key) for key in COLUMNS}
    row.update(point=point.name, status=status, overrides=shlex.join(point.overrides),
               vocab_size=resolved.get("data.vocab_size"), spm_model_type=resolved.get("data.spm_model_type"),
               cpu=" + ".join(values.get("cpus") or state.get("cpus") or []),
               config=ctx.sweep.config, common=shlex.join(ctx.sweep.common))
    return row


def format_cell(key, value):
    if value is None or value == "":
        return ""
    formats = {"train_wall_s": "{:.1f}", "tgt_tokens_per_s": "{:.0f}", "best_valid_loss": "{:.4f}",
               "best_valid_nll": "{:.4f}", "val_bleu": "{:.2f}", "val_lc_tok_bleu": "{:.2f}"}
    text = formats[key].format(float(value)) if key in formats else str(value)  # a committed row: text
    return text.replace("|", "\\|")


def markdown_table(ctx, rows):
    sweep = ctx.sweep
    lines = [f"# Sweep {sweep.path}", "",
             f"Config `{sweep.config}`, common overrides `{shlex.join(sweep.common)}`, run directories "
             f"{ctx.out}/NAME. Selection is on val only: BLEU of the average of the last min({AVERAGE_LAST}, "
             f"available) update_N.pt (last.pt when fewer than 2), beam {BEAM}; the test set is not scored.", "",
             "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for row in rows:
        lines.append("| " + " | ".join(format_cell(key, row[key]) for key in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def csv_table(rows):
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow(["" if row[key] is None else row[key] for key in CSV_COLUMNS])
    return buffer.getvalue()


def write_tables(ctx, show):
    rows = [table_row(ctx, point) for point in ctx.sweep.points]
    markdown, table = markdown_table(ctx, rows), csv_table(rows)
    for stem in (os.path.join(ctx.out, "table"), ctx.committed_table()):
        write_atomic(stem + ".md", markdown)
        write_atomic(stem + ".csv", table)
    if show:
        print(markdown, flush=True)


# ---------------------------------------------------------------- main

def run_one(ctx, point, show):
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
        say(f"point {point.name}: finished: {result['updates']} updates, val BLEU {result['val_bleu']:.2f}")
    write_tables(ctx, show)


def run_sweep(ctx):
    ctx.runner.install()
    os.makedirs(ctx.out, exist_ok=True)
    say(f"{ctx.sweep.path}: {len(ctx.sweep.points)} points into {ctx.out} on {ctx.cpu}")
    current = None
    try:
        for current in ctx.sweep.points:
            run_one(ctx, current, show=current is not ctx.sweep.points[-1])  # the last: below
    except Interrupted as e:
        ctx.status[current.name] = "interrupted"
        write_tables(ctx, show=False)
        say(f"stopped by signal {e.signum} during point {current.name}; it is not finished. "
            f"Run the same command again to continue")
        return 128 + e.signum
    write_tables(ctx, show=True)
    if ctx.runner.signum:
        return 128 + ctx.runner.signum
    if ctx.failures:
        say(f"{len(ctx.failures)} of {len(ctx.sweep.points)} points failed:\n  " + "\n  ".join(ctx.failures))
        return EXIT_FAILED
    say(f"all {len(ctx.sweep.points)} points finished; table: {os.path.join(ctx.out, 'table.md')}")
    return 0


def dry_run(ctx):
    """Print what a run would do now, given what OUT holds; write nothing."""
    for point in ctx.sweep.points:
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
        print(shlex.join(evaluate_command(ctx, point, averaged)) + "  # last.pt when fewer than 2 update_N.pt")
        if ctx.scorer_python:
            cmd = lc_tok_command(ctx, point)
            print(shlex.join(cmd) if cmd else "# no raw val reference for the lc-tok BLEU")
    return 0


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
        check_out(ctx.out)
        for folder, name in (("trainer", "train"), ("trainer", "average"), ("eval", "evaluate"),
                             ("data", "preprocess")):
            if not os.access(ctx.binary(folder, name), os.X_OK):
                raise SweepError(f"{ctx.binary(folder, name)}: no such program (build first, or pass --build DIR)")
        resolve_points(ctx)
        assign_shard_dirs(ctx)
        ctx.committed = read_committed(ctx)
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
