#!/usr/bin/env python3
"""The folders' include graph stays a DAG of layers (README, "Code map").

    check_layers.py SOURCE_DIR            check every #include "folder/..." against the layers
    check_layers.py SOURCE_DIR --self-test  copy the sources, plant upward includes, expect refusals

Layers, bottom to top: base (includes nothing of ours; every folder may use it) -> data,
model, dist (none includes another) -> config (the plain config headers of those three
only) -> checkpoint -> trainer and eval (side by side, never each other) -> cli (the mains).
bench may use any library but cli; tests may use every folder, cli's run_main too (the one
place an error becomes a message and an exit code).
"""
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

LIBRARIES = ["base", "data", "model", "dist", "config", "checkpoint", "trainer", "eval", "cli"]
ALLOWED = {
    "base": {"base"},
    "data": {"data", "base"},
    "model": {"model", "base"},
    "dist": {"dist", "base"},
    "config": {"config", "base"},  # plus the three plain config headers below
    "checkpoint": {"checkpoint", "config", "data", "model", "base"},
    "trainer": {"trainer", "checkpoint", "config", "data", "model", "dist", "base"},
    "eval": {"eval", "checkpoint", "config", "data", "model", "dist", "base"},
    "cli": set(LIBRARIES),
    "bench": set(LIBRARIES) - {"cli"} | {"bench"},
    "tests": set(LIBRARIES) | {"tests"},
}
# config/ composes the components' plain structs (no code, no LibTorch) and nothing else.
CONFIG_MAY_INCLUDE = {"data/data_config.h", "model/model_config.h", "dist/dist_config.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/([^"]+)"', re.M)


def violations(root: pathlib.Path):
    found = []
    for folder, allowed in ALLOWED.items():
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".h", ".cpp", ".cu"):
                continue
            for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m or m.group(1) not in ALLOWED:
                    continue
                target = f"{m.group(1)}/{m.group(2)}"
                ok = m.group(1) in allowed or (folder == "config" and target in CONFIG_MAY_INCLUDE)
                if not ok:
                    found.append(f"{path.relative_to(root)}:{lineno}: {folder}/ includes {target}, "
                                 f"but {folder}/ may use only {', '.join(sorted(allowed))}")
    return found


def edges(root: pathlib.Path):
    """Folder -> folders it includes (from the code), for the cycle check."""
    out = {f: set() for f in LIBRARIES}
    for folder in LIBRARIES:
        for path in (root / folder).rglob("*"):
            if path.suffix in (".h", ".cpp", ".cu"):
                for m in INCLUDE.finditer(path.read_text(errors="replace")):
                    if m.group(1) in out and m.group(1) != folder:
                        out[folder].add(m.group(1))
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
PLANTS = [("data/batch.h", "trainer/trainer.h"),  # a floor includes one above it
          ("base/sha256.h", "data/batch.h")]      # base includes something of ours


def self_test(root: pathlib.Path) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp) / "src"
        for folder in ALLOWED:
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
            folder = file.split("/")[0]
            if result.returncode == 0 or f"{file}:1: {folder}/ includes {target}" not in result.stdout:
                print(f"self-test FAILED: the planted upward include {file} -> {target} was not refused")
                return 1
            print(f"self-test: the planted upward include {file} -> {target} was refused")
    return 0


if __name__ == "__main__":
    src = pathlib.Path(sys.argv[1]).resolve()
    sys.exit(self_test(src) if "--self-test" in sys.argv[2:] else check(src))
