#!/usr/bin/env python3
"""docs/USAGE.md's table of configuration keys, generated so that it cannot drift:

  python tools/config_keys.py [--train build/trainer/train] [--usage docs/USAGE.md] [--check]

Each key's type, default and accepted values come from `train --config-keys` (the C++ field
table that loads and validates the configuration: config/config_loader.cpp); its description
from the comment on its member in the config structs (config/config.h, data/data_config.h,
model/model_config.h, dist/dist_config.h): the member's own trailing comment with its
continuation lines, else the comment block right above it. The table replaces what stands
between the markers <!-- config-keys:begin --> and <!-- config-keys:end --> in USAGE.md.

--check writes nothing and exits 1 naming what differs: a key without a description, or a
table that is not the generated one (a key added, removed or changed since it was last
written). Exit 2: bad input (a missing file or marker). Standard library only."""
import argparse
import os
import re
import subprocess
import sys

from nmtrain_cli import run_cli

PROG = "config_keys.py"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADERS = {"data": ("data/data_config.h", "DataConfig"), "model": ("model/model_config.h", "ModelConfig"),
           "optim": ("config/config.h", "OptimConfig"), "schedule": ("config/config.h", "ScheduleConfig"),
           "train": ("config/config.h", "TrainConfig"), "dist": ("dist/dist_config.h", "DistConfig"),
           "eval": ("config/config.h", "EvalConfig"), "debug": ("config/config.h", "DebugConfig")}
BEGIN, END = "<!-- config-keys:begin -->", "<!-- config-keys:end -->"
MEMBER = re.compile(r"^(\s+)[A-Za-z_][\w:<>, ]*?\s(\w+)\s*(?:=\s*[^;]*)?;\s*(?://\s?(.*))?$")
COMMENT = re.compile(r"^(\s*)//\s?(.*)$")


class BadInput(Exception):
    pass


def struct_lines(path, struct):
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    m = re.search(r"^struct %s \{\n(.*?)^\};" % struct, text, re.S | re.M)
    if not m:
        raise BadInput(f"{path}: no struct {struct}")
    return m.group(1).split("\n")


def descriptions(section):
    """member name -> its description, from the struct's comments."""
    path, struct = HEADERS[section]
    lines, out, block = struct_lines(path, struct), {}, []
    i = 0
    while i < len(lines):
        line = lines[i]
        c = COMMENT.match(line)
        if c:
            block.append(c.group(2).strip())
            i += 1
            continue
        m = MEMBER.match(line)
        if not m:
            block = []
            i += 1
            continue
        indent, name, trailing = len(m.group(1)), m.group(2), m.group(3)
        text = []
        if trailing:
            text.append(trailing.strip())
            while i + 1 < len(lines) and (c := COMMENT.match(lines[i + 1])) and len(c.group(1)) > indent:
                text.append(c.group(2).strip())
                i += 1
        text = text or block
        out[name] = " ".join(t for t in text if t)
        block = []
        i += 1
    return out


def table(train):
    rows = subprocess.run([train, "--config-keys"], check=True, capture_output=True, text=True).stdout
    described = {s: descriptions(s) for s in HEADERS}
    lines = ["| key | type | default | accepted | what it does |", "|---|---|---|---|---|"]
    missing = []
    for row in rows.splitlines():
        key, kind, default, allowed = row.split("\t")
        section, name = key.split(".", 1)
        what = described[section].get(name, "")
        if not what:
            missing.append(key)
        cell = lambda t: t.replace("|", "\\|")  # noqa: E731
        lines.append(f"| `{key}` | {kind} | `{cell(default)}` | {cell(allowed) or 'any'} | {cell(what)} |")
    return "\n".join(lines) + "\n", missing


def main(args):
    usage = open(args.usage, encoding="utf-8").read() if os.path.isfile(args.usage) else None
    if usage is None:
        raise BadInput(f"{args.usage}: file does not exist")
    if BEGIN not in usage or END not in usage:
        raise BadInput(f"{args.usage}: no {BEGIN} ... {END} markers")
    generated, missing = table(args.train)
    head, rest = usage.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{generated}{END}{tail}"
    if args.check:
        problems = [f"{k} has no description (a comment on its member)" for k in missing]
        if new != usage:
            problems.append(f"{args.usage}'s key table is not the generated one: run python tools/config_keys.py")
        if problems:
            print(f"{PROG}: " + "; ".join(problems), file=sys.stderr)
            sys.exit(1)
        print(f"{PROG}: {args.usage}: the table of {generated.count(chr(10)) - 2} keys is up to date")
        return
    if missing:
        print(f"{PROG}: warning: no description for {', '.join(missing)}", file=sys.stderr)
    with open(args.usage + ".tmp", "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(args.usage + ".tmp", args.usage)


if __name__ == "__main__":
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--train", default=os.path.join(os.environ.get("NMTRAIN_BUILD", os.path.join(ROOT, "build")),
                                                   "trainer", "train"))
    p.add_argument("--usage", default=os.path.join(ROOT, "docs", "USAGE.md"))
    p.add_argument("--check", action="store_true")
    sys.exit(run_cli(PROG, main, p.parse_args(), BadInput))
