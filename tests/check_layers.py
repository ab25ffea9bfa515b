#!/usr/bin/env python3
"""The folders' include graph stays a DAG of layers (README, "Code map").

    check_layers.py SOURCE_DIR            check every #include "folder/..." against the layers
    check_layers.py SOURCE_DIR --self-test  copy the sources, plant upward includes, expect refusals

Layers, bottom to top (README, "Code map"; docs/ARCHITECTURE.md, "The floors"):
  base           includes nothing of ours; every folder may use it
  model/kernels  the fused CPU kernels: base only
  data, model, dist   none includes another
  config         the plain config headers of those three only
  optim, metrics, runtime   side by side, none includes another
  checkpoint     may use runtime (the memory estimate), not optim or metrics
  trainer, eval  side by side, never each other
  cli            the mains
bench may use any library but cli; tests may use every folder, cli's run_main too (the one
place an error becomes a message and an exit code).
"""
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

# Floors are top-level folders, and these sub-folders, each a floor below its parent.
SUBFLOORS = ["model/kernels"]
LIBRARIES = ["base", "model/kernels", "data", "model", "dist", "config", "optim", "metrics", "runtime", "checkpoint",
             "trainer", "eval", "cli"]
MODEL = {"model", "model/kernels"}  # who may use the model may use its kernels
ALLOWED = {
    "base": {"base"},
    "model/kernels": {"model/kernels", "base"},
    "data": {"data", "base"},
    "model": MODEL | {"base"},
    "dist": {"dist", "base"},
    "config": {"config", "base"},  # plus the three plain config headers below
    "optim": {"optim", "config", "base"} | MODEL,
    "metrics": {"metrics", "dist", "base"} | MODEL,
    "runtime": {"runtime", "config", "data", "dist", "base"} | MODEL,
    "checkpoint": {"checkpoint", "runtime", "config", "data", "base"} | MODEL,
    "trainer": {"trainer", "checkpoint", "optim", "metrics", "runtime", "config", "data", "dist", "base"} | MODEL,
    "eval": {"eval", "checkpoint", "runtime", "config", "data", "dist", "base"} | MODEL,
    "cli": set(LIBRARIES),
    "bench": set(LIBRARIES) - {"cli"} | {"bench"},
    "tests": set(LIBRARIES) | {"tests"},
}
TOP = {f.split("/")[0] for f in ALLOWED}
# config/ composes the components' plain structs (no code, no LibTorch) and nothing else.
CONFIG_MAY_INCLUDE = {"data/data_config.h", "model/model_config.h", "dist/dist_config.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/([^"]+)"', re.M)


def floor_of(path: str) -> str:
    """'model/kernels/fast_exp.h' -> 'model/kernels', 'data/batch.h' -> 'data'."""
    for sub in SUBFLOORS:
        if path.startswith(sub + "/"):
            return sub
    return path.split("/", 1)[0]


def sources(root: pathlib.Path):
    """(path relative to root, floor, text) of every C++ file in the checked folders."""
    for top in sorted(TOP):
        for path in sorted((root / top).rglob("*")):
            if path.suffix in (".h", ".cpp", ".cu"):
                rel = path.relative_to(root).as_posix()
                yield rel, floor_of(rel), path.read_text(errors="replace")


def violations(root: pathlib.Path):
    found = []
    for rel, floor, text in sources(root):
        allowed = ALLOWED[floor]
        for lineno, line in enumerate(text.splitlines(), 1):
            m = INCLUDE.match(line)
            if not m or m.group(1) not in TOP:
                continue
            target = f"{m.group(1)}/{m.group(2)}"
            ok = floor_of(target) in allowed or (floor == "config" and target in CONFIG_MAY_INCLUDE)
            if not ok:
                found.append(f"{rel}:{lineno}: {floor}/ includes {target}, "
                             f"but {floor}/ may use only {', '.join(sorted(allowed))}")
    return found


def edges(root: pathlib.Path):
    """Floor -> floors it includes (from the code), for the cycle check."""
    out = {f: set() for f in LIBRARIES}
    for rel, floor, text in sources(root):
        if floor not in out:
            continue
        for m in INCLUDE.finditer(text):
            target = floor_of(f"{m.group(1)}/{m.group(2)}")
            if target in out and target != floor:
                out[floor].add(target)
    return out


def cycle(graph):
    state = {}

    def visit(n, stack):
        state[n] = 1
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                return stack + [n, m]
            if m not in state and (c := visit(m, stack + [n])):
                return c
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (c := visit(n, [])):
            return c
    return None


def check(root: pathlib.Path) -> int:
    bad = violations(root)
    loop = cycle(edges(root))
    if loop:
        bad.append("folder cycle: " + " -> ".join(loop))
    for b in bad:
        print("layering:", b)
    if not bad:
        g = edges(root)
        print("layers OK:", "; ".join(f"{f} -> {', '.join(sorted(g[f])) or '-'}" for f in LIBRARIES))
    return 1 if bad else 0


# (file, the include planted at its top): each must be refused on its own.
PLANTS = [("data/batch.h", "trainer/trainer.h"),                # a floor includes one above it
          ("base/sha256.h", "data/batch.h"),                    # base includes something of ours
          ("model/kernels/fast_exp.h", "model/transformer.h")]  # a kernel includes the model


def self_test(root: pathlib.Path) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / "src"
        for folder in TOP:
            if (root / folder).is_dir():
                shutil.copytree(root / folder, copy / folder, ignore=shutil.ignore_patterns("fixtures"))
        if check(copy) != 0:
            print("self-test: the clean copy is refused")
            return 1
        for file, target in PLANTS:
            planted = copy / file
            clean = planted.read_text()
            planted.write_text(f'#include "{target}"  // planted\n' + clean)
            result = subprocess.run([sys.executable, __file__, str(copy)], capture_output=True, text=True)
            planted.write_text(clean)
            print(result.stdout.strip())
            if result.returncode == 0 or f"{file}:1: {floor_of(file)}/ includes {target}" not in result.stdout:
                print(f"self-test FAILED: the planted upward include {file} -> {target} was not refused")
                return 1
            print(f"self-test: the planted upward include {file} -> {target} was refused")
    return 0


if __name__ == "__main__":
    src = pathlib.Path(sys.argv[1]).resolve()
    sys.exit(self_test(src) if "--self-test" in sys.argv[2:] else check(src))
