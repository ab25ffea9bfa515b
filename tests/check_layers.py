#!/usr/bin/env python3
"""The folders' include graph stays a DAG of layers (README, "Code map"), and each library
folder's code declares only its own namespace: nmt::<folder, '/' written '::'> (base/ is
nmt::base, model/kernels/ is nmt::model::kernels) and namespaces under it, plus anonymous ones,
so that a call site names the floor it comes from.

    check_layers.py SOURCE_DIR            check every #include "folder/..." against the layers,
                                          and every namespace a library folder opens
    check_layers.py SOURCE_DIR --self-test  copy the sources, plant upward includes and foreign
                                            namespaces, expect refusals

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
import argparse
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
        if floor in LIBRARIES:  # bench/ and tests/ are no library: their own namespaces are free
            found += namespace_violations(rel, floor, text)
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


def namespace_of(floor: str) -> str:
    """'model/kernels' -> 'nmt::model::kernels': the one namespace a library folder declares in."""
    return "nmt::" + floor.replace("/", "::")


# Comments, string and character literals (raw strings too) and preprocessor lines: blanked
# (newlines kept) before namespaces are read, so that neither text nor #include counts.
CODE_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|R"([^(\s]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|'
                        r'^[ \t]*#(?:\\\n|[^\n])*', re.S | re.M)
NS_TOKEN = re.compile(r'\b(?:inline\s+)?namespace\s+([A-Za-z_][\w:]*)?\s*([{=])|[{}]|[^\s{}]+')


def strip_noise(text: str) -> str:
    return CODE_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


UNDER = "(and the namespaces under it that are no other folder's)"


def owner_of(namespace: str):
    """The library folder whose namespace holds `namespace` (the longest match), or None."""
    owners = [f for f in LIBRARIES if namespace == namespace_of(f) or namespace.startswith(namespace_of(f) + "::")]
    return max(owners, key=len, default=None)


def namespace_violations(rel: str, floor: str, text: str):
    """Each named namespace `rel` opens must be its floor's own one or under it (and not a
    sub-floor's: model/ may not open nmt::model::kernels); anonymous ones may be anywhere.
    `namespace nmt {` ... `namespace model {` forms are followed: a namespace on the way to
    the floor's own one (nmt, nmt::model) may hold only namespaces."""
    own = namespace_of(floor)
    code = strip_noise(text)
    found = []
    # One entry per open brace: the namespace path it opens ("" for an anonymous namespace
    # at file scope), or None for any other brace (a class, a function, an initialiser).
    stack = []
    reported = set()  # brace depths whose "declares in a prefix" was already reported

    def line_of(pos):
        return code.count("\n", 0, pos) + 1

    def enclosing():
        return next((e for e in reversed(stack) if e is not None), "")

    for m in NS_TOKEN.finditer(code):
        if m.group(2) == "{":  # namespace NAME {, or namespace {
            outer = enclosing()
            name = m.group(1)
            full = outer if not name else (f"{outer}::{name}" if outer else name)
            stack.append(full)
            if not name or own.startswith(full + "::") or owner_of(full) == floor:
                continue
            found.append(f"{rel}:{line_of(m.start())}: {floor}/ opens namespace {full}, "
                         f"but {floor}/'s code may declare only in {own} {UNDER}")
        elif m.group(0) == "{":
            stack.append(None)
        elif m.group(0) == "}":
            if stack:
                stack.pop()
        elif stack and stack[-1] and own.startswith(stack[-1] + "::") and len(stack) not in reported:
# a declaration (or alias) directly in nmt, or in nmt::model from model/kernels/
            reported.add(len(stack))
            found.append(f"{rel}:{line_of(m.start())}: {floor}/ declares in namespace {stack[-1]}, "
                         f"but {floor}/'s code may declare only in {own} {UNDER}")
    return found


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
        print("namespaces OK: each library folder declares only in its own,",
              ", ".join(namespace_of(f) for f in LIBRARIES))
    return 1 if bad else 0


# (file, the include planted at its top): each must be refused on its own.
PLANTS = [("data/batch.h", "trainer/trainer.h"),                # a floor includes one above it
          ("base/sha256.h", "data/batch.h"),                    # base includes something of ours
          ("model/kernels/fast_exp.h", "model/transformer.h")]  # a kernel includes the model
# (file, the namespace code planted at its top, the namespace the refusal names): each must be
# refused on its own.
NAMESPACE_PLANTS = [
    ("optim/adam.h", "namespace nmt::trainer { struct Planted; }",  # another floor's
     "opens namespace nmt::trainer"),
    ("base/sha256.h", "namespace nmt { namespace data { struct Planted; } }",  # the nested form
     "opens namespace nmt::data"),
    ("model/attention.h", "namespace nmt::model::kernels { struct Planted; }",  # a sub-floor's
     "opens namespace nmt::model::kernels"),
    ("model/kernels/gemm.h", "namespace nmt::model { struct Planted; }",  # its parent floor's
     "declares in namespace nmt::model"),
    ("data/batch.h", "namespace nmt { struct Planted; }",  # nmt itself
     "declares in namespace nmt"),
]


def refused(copy: pathlib.Path, file: str, planted_text: str, expected: str, what: str) -> bool:
    """Plants `planted_text` as line 1 of `file` in the copy, runs the check, puts the file back;
    True when the check failed with `expected` at file:1."""
    planted = copy / file
    clean = planted.read_text()
    planted.write_text(planted_text + "  // planted\n" + clean)
    result = subprocess.run([sys.executable, __file__, str(copy)], capture_output=True, text=True)
    planted.write_text(clean)
    print(result.stdout.strip())
    if result.returncode == 0 or f"{file}:1: {floor_of(file)}/ {expected}" not in result.stdout:
        print(f"self-test FAILED: the planted {what} was not refused")
        return False
    print(f"self-test: the planted {what} was refused")
    return True


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
            if not refused(copy, file, f'#include "{target}"', f"includes {target}",
                           f"upward include {file} -> {target}"):
                return 1
        for file, code, expected in NAMESPACE_PLANTS:
            if not refused(copy, file, code, expected, f"namespace in {file} ({code})"):
                return 1
    return 0


def parse_args(argv):
    """SOURCE_DIR and --self-test; exit 2 with one message naming what is wrong, so that a
    mistyped path is not a tree with nothing in it, which would pass."""
    parser = argparse.ArgumentParser(prog="check_layers.py", description=__doc__.split("\n")[0])
    parser.add_argument("source_dir", metavar="SOURCE_DIR", help="the project's source tree")
    parser.add_argument("--self-test", action="store_true", help="plant violations in a copy and expect refusals")
    args = parser.parse_args(argv)
    root = pathlib.Path(args.source_dir).resolve()
    if not root.is_dir():
        parser.error(f"SOURCE_DIR '{args.source_dir}' is not a directory")
    missing = sorted(f"{folder}/" for folder in TOP if not (root / folder).is_dir())
    if missing:
        parser.error(f"SOURCE_DIR '{args.source_dir}' lacks {', '.join(missing)}: not the project's source tree")
    return root, args.self_test


if __name__ == "__main__":
    src, run_self_test = parse_args(sys.argv[1:])
    sys.exit(self_test(src) if run_self_test else check(src))
