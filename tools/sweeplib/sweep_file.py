"""The sweep file: its config, common and point directives parsed and checked (names,
override form, each point's budget) into a Sweep of Points."""
import math
import os
import re
import shlex
from dataclasses import dataclass, field

from .errors import SweepError

NAME_RE = re.compile(r"[A-Za-z0-9_.-]+\Z")
OVERRIDE_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*)=(.*)\Z", re.S)


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
        what = "is a directory, not a file" if os.path.isdir(args[0]) else "does not exist"
        raise SweepError(f"{where}: config file '{args[0]}' {what}")
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


def select_points(sweep, only):
    """--only's comma-separated names as a set (None: every point); a name that is no point of
    the sweep file is refused, naming the file's points."""
    if only is None:
        return None
    names = [name for name in only.split(",") if name]
    if not names:
        raise SweepError("--only: no point named (expected NAME[,NAME...])")
    known = [point.name for point in sweep.points]
    for name in names:
        if name not in known:
            raise SweepError(f"--only: {sweep.path} has no point named '{name}' (its points: {', '.join(known)})")
    return set(names)
