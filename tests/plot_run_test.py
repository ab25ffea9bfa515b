#!/usr/bin/env python3
"""tools/plot_run on synthetic metrics.jsonl files: the data it plots, the PNG it writes, its refusals.

    plot_run_test.py SOURCE_DIR

1. load_run on a resumed run (a crash: update and wall_s go back; a signal stop: only wall_s
   drops; a "skipped" event; a duplicated update; a record rolled back and never repeated; an
   optional field that appears late and a JSON null) and on a plain run, against hand-computed
   arrays; the figure's lines hold exactly those arrays (updates and wall time, in the unit chosen).
2. The command: exit 0, a valid PNG of the size the layout gives, at RUN_DIR/report.png by
   default, replacing an existing one, no temporary file left.
3. Refusals: exit 2, one message naming the file (and line), an existing PNG unchanged (sha256).
4. Multilingual runs (valid records with "valid_loss/de-en", "valid_bleu/de-en", ... keys): rows
   of validation loss and BLEU per direction, one line per (run, direction) in the run's colour
   and the direction's style (the same in every run), a legend naming the directions; a
   bilingual run beside them draws no per-direction line.
"""
import hashlib
import importlib.machinery
import importlib.util
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # importing tools/plot_run must not leave tools/__pycache__
import numpy as np  # noqa: E402

SRC = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1]).resolve()
TOOL = SRC / "tools" / "plot_run"
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def load_tool():
    loader = importlib.machinery.SourceFileLoader("plot_run", str(TOOL))
    spec = importlib.util.spec_from_loader("plot_run", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def train(u, wall, loss, lr, tps, **extra):
    rec = {"epoch": 1, "event": "train", "loss": loss, "lr": lr, "nll": loss - 0.1, "ppl": math.exp(loss - 0.1),
           "tgt_tokens_per_s": tps, "update": u, "updates": 1, "wall_s": wall}
    rec.update(extra)
    return json.dumps(rec)


def valid(u, wall, loss, **extra):
    rec = {"epoch": 1, "event": "valid", "update": u, "valid_loss": loss, "valid_nll": loss - 0.1,
           "valid_ppl": math.exp(loss - 0.1), "wall_s": wall}
    rec.update(extra)
    return json.dumps(rec)


# Resumed run, with BLEU. Segment 1 (lines 1-6) crashes after update 20; the checkpoint was at
# update 10, so segment 2 (lines 7-9) starts at update 11 with wall_s from 0: update 15 (never
# logged again) and update 20 (logged again) of segment 1 are rolled back. Segment 2 is stopped
# by a signal after update 25 (checkpoint there), so segment 3 (lines 10-12) starts at update 26:
# only wall_s drops. grad_norm appears in segment 3 only, once as null (the writer's NaN).
RESUMED = [
    train(1, 1.0, 5.0, 1e-4, 100.0),                        # 1
    train(10, 10.0, 4.0, 1e-3, 200.0),                      # 2
    valid(10, 12.0, 4.5, valid_bleu=1.0),                   # 3
    train(15, 15.0, 3.5, 9.5e-4, 250.0),                    # 4  rolled back, never repeated
    json.dumps({"event": "skipped", "update": 17, "reason": "non-finite loss", "in_a_row": 1}),  # 5
    train(20, 20.0, 3.0, 9e-4, 300.0),                      # 6  repeated by line 8
    train(11, 2.0, 3.9, 9.9e-4, 150.0),                     # 7  segment 2: offset 20
    train(20, 5.0, 3.1, 9e-4, 310.0),                       # 8  the later update 20 wins
    valid(20, 6.0, 3.5, valid_bleu=2.5),                    # 9
    train(26, 0.5, 2.9, 8e-4, 320.0, grad_norm=None),       # 10 segment 3: offset 20 + 6 = 26
    train(30, 3.0, 2.5, 7e-4, 330.0, grad_norm=0.7),        # 11
    valid(30, 4.0, 3.0, valid_bleu=4.0),                    # 12
]
EXPECT_RESUMED = {
    "train": {"update": [1, 10, 11, 20, 26, 30], "wall": [1, 10, 22, 25, 26.5, 29],
              "wall_s": [1, 10, 2, 5, 0.5, 3], "loss": [5.0, 4.0, 3.9, 3.1, 2.9, 2.5],
              "lr": [1e-4, 1e-3, 9.9e-4, 9e-4, 8e-4, 7e-4], "tgt_tokens_per_s": [100, 200, 150, 310, 320, 330],
              "grad_norm": [math.nan] * 5 + [0.7]},
    "valid": {"update": [10, 20, 30], "wall": [12, 26, 30], "valid_loss": [4.5, 3.5, 3.0],
              "valid_bleu": [1.0, 2.5, 4.0]},
    "segments": [{"first_line": 1, "first_update": 1, "offset_s": 0.0},
                 {"first_line": 7, "first_update": 11, "offset_s": 20.0},
                 {"first_line": 10, "first_update": 26, "offset_s": 26.0}],
}
# Plain run: no BLEU, no resume, long enough (6600 s) that the wall axis is in minutes.
PLAIN = [
    train(1, 0.5, 4.0, 2e-4, 1000.0),
    train(50, 3000.0, 3.0, 1e-3, 1200.0),
    valid(50, 3300.0, 3.2),
    train(100, 6300.0, 2.0, 7e-4, 1300.0),
    valid(100, 6600.0, 2.4),
]
EXPECT_PLAIN = {
    "train": {"update": [1, 50, 100], "wall": [0.5, 3000, 6300], "loss": [4.0, 3.0, 2.0],
              "lr": [2e-4, 1e-3, 7e-4], "tgt_tokens_per_s": [1000, 1200, 1300]},
    "valid": {"update": [50, 100], "wall": [3300, 6600], "valid_loss": [3.2, 2.4]},
}




def per_direction(**values):
    """valid(...) keywords from loss_de_en=4.5, bleu_en_de=1.0, ...: "valid_loss/de-en": 4.5, ..."""
    out = {}
    for key, v in values.items():
        metric, src, tgt = key.split("_")
        out[f"valid_{metric}/{src}-{tgt}"] = v
    return out


# Multilingual run (de-en, en-de): at update 20 en-de's loss is null (the writer's NaN) and its
# BLEU missing; update 30 is logged twice (the later record wins).
MULTI = [
    train(1, 1.0, 5.0, 1e-4, 100.0),
    valid(10, 10.0, 4.6, valid_bleu=1.5, **per_direction(loss_de_en=4.5, loss_en_de=4.7, nll_de_en=4.4,
                                                          nll_en_de=4.6, bleu_de_en=2.0, bleu_en_de=1.0)),
    train(20, 20.0, 3.0, 9e-4, 300.0),
    valid(20, 21.0, 3.5, valid_bleu=3.0, **per_direction(loss_de_en=3.5, loss_en_de=None, bleu_de_en=3.0)),
    valid(30, 30.0, 9.9, valid_bleu=9.9, **per_direction(loss_de_en=9.9, loss_en_de=9.9, bleu_de_en=9.9, bleu_en_de=9.9)),
    valid(30, 31.0, 3.1, valid_bleu=3.0, **per_direction(loss_de_en=3.0, loss_en_de=3.2, bleu_de_en=4.0, bleu_en_de=2.0)),
]
EXPECT_MULTI = {"update": [10, 20, 30], "wall": [10, 21, 31],
                "valid_loss/de-en": [4.5, 3.5, 3.0], "valid_loss/en-de": [4.7, math.nan, 3.2],
                "valid_nll/de-en": [4.4, math.nan, math.nan], "valid_bleu/de-en": [2.0, 3.0, 4.0],
                "valid_bleu/en-de": [1.0, math.nan, 2.0]}
# A second multilingual run (en-de, fr-en): the rows' directions are the union de-en, en-de, fr-en.
MULTI2 = [train(1, 1.0, 5.0, 1e-4, 100.0), valid(10, 12.0, 4.0, **per_direction(loss_en_de=4.1, loss_fr_en=3.9))]


def same(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True)


def write_run(root, name, lines, trailing="\n"):
    d = root / name
    d.mkdir(parents=True)
    (d / "metrics.jsonl").write_text("\n".join(lines) + trailing)
    return d


def sha(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def tool(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=120)


def check_png(path, size, what):
    data = pathlib.Path(path).read_bytes() if os.path.exists(path) else b""
    check(data[:8] == b"\x89PNG\r\n\x1a\n", f"{what}: {path} is a PNG")
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.image as mpimg
    img = mpimg.imread(path)
    check(img.shape[:2] == (size[1], size[0]), f"{what}: {img.shape[1]}x{img.shape[0]} pixels, expected {size[0]}x{size[1]}")
    check(float(img[..., :3].std()) > 0.05, f"{what}: the image is not blank")


def no_temporaries(folder, what):
    left = [p.name for p in pathlib.Path(folder).iterdir() if p.name.endswith(".tmp")]
    check(not left, f"{what}: no temporary file left in {folder} ({left})")


def test_load_run(pr, root):
    run = pr.load_run(write_run(root, "resumed", RESUMED))
    check(run.name == "resumed", "the run is named by its directory")
    for series in ("train", "valid"):
        for field, want in EXPECT_RESUMED[series].items():
            got = getattr(run, series)[field]
            check(same(got, want), f"resumed {series}.{field} = {list(got)}, expected {want}")
    check(run.segments == EXPECT_RESUMED["segments"], f"resumed segments {run.segments}")
    check(not run.has("train", "loss_scale"), "loss_scale absent: not offered")
    check(run.has("valid", "valid_bleu") and run.has("train", "grad_norm"), "valid_bleu and grad_norm present")

    plain = pr.load_run(write_run(root, "plain", PLAIN, trailing="\n\n"))
    for series in ("train", "valid"):
        for field, want in EXPECT_PLAIN[series].items():
            got = getattr(plain, series)[field]
            check(same(got, want), f"plain {series}.{field} = {list(got)}, expected {want}")
    check(len(plain.segments) == 1 and not plain.has("valid", "valid_bleu"), "plain: one segment, no BLEU")

    # The same update twice in a row within one process's segment: the later line still wins.
    dup = pr.load_run(write_run(root, "dup", [train(1, 1.0, 4.0, 1e-4, 10.0), train(5, 2.0, 3.8, 2e-4, 20.0),
                                              train(5, 2.5, 3.6, 3e-4, 30.0)]))
    check(same(dup.train["update"], [1, 5]) and same(dup.train["loss"], [4.0, 3.6]) and same(dup.train["wall"], [1, 2.5]),
          f"a repeated update: the later line wins ({list(dup.train['loss'])})")

    # Trailing slash, "." components: still named by the directory.
    check(pr.load_run(str(root / "plain") + "/./").name == "plain", "RUN_DIR/./ is named 'plain'")
    (root / "a").mkdir()
    (root / "b").mkdir()
    a, b = write_run(root / "a", "run", PLAIN), write_run(root / "b", "run", PLAIN)
    labels = pr.run_labels([pr.load_run(a), pr.load_run(b), plain])
    check(labels == ["a/run", "b/run", "plain"], f"runs sharing a name are told apart: {labels}")
    return run, plain


def test_figure(pr, run, plain):
    fig, axes = pr.build_figure([run, plain], "both")
    check(sorted({k for k, _ in axes}) == sorted(["loss", "bleu", "lr", "tps", "grad_norm"]),
          f"rows: {sorted({k for k, _ in axes})}")
    check(fig.get_size_inches().tolist() == [13.0, 13.3] and fig.dpi == 100, f"figure {fig.get_size_inches()} in")

    def line(row, x, gid):
        found = [ln for ln in axes[(row, x)].get_lines() if ln.get_gid() == gid]
        return found[0] if len(found) == 1 else None

    minutes = 60.0  # the longest run lasts 6600 s: minutes
    xlabel = axes[("grad_norm", "wall")].get_xlabel()  # the bottom row carries the x label
    check("wall time (min" in xlabel and "resumed" in xlabel, f"wall axis label: {xlabel!r}")
    check(axes[("grad_norm", "updates")].get_xlabel() == "update", "updates axis label")
    tr, va = EXPECT_RESUMED["train"], EXPECT_RESUMED["valid"]
    cases = [
        ("loss", "0:loss", tr["update"], tr["wall"], tr["loss"]),
        ("loss", "0:valid_loss", va["update"], va["wall"], va["valid_loss"]),
        ("bleu", "0:valid_bleu", va["update"], va["wall"], va["valid_bleu"]),
        ("lr", "0:lr", tr["update"], tr["wall"], tr["lr"]),
        ("tps", "0:tgt_tokens_per_s", tr["update"], tr["wall"], tr["tgt_tokens_per_s"]),
        ("grad_norm", "0:grad_norm", tr["update"], tr["wall"], tr["grad_norm"]),
        ("loss", "1:loss", EXPECT_PLAIN["train"]["update"], EXPECT_PLAIN["train"]["wall"], EXPECT_PLAIN["train"]["loss"]),
        ("loss", "1:valid_loss", EXPECT_PLAIN["valid"]["update"], EXPECT_PLAIN["valid"]["wall"],
         EXPECT_PLAIN["valid"]["valid_loss"]),
    ]
    for row, gid, xu, xw, y in cases:
        for x, want_x in (("updates", xu), ("wall", [w / minutes for w in xw])):
            ln = line(row, x, gid)
            ok = ln is not None and same(ln.get_xdata(), want_x) and same(ln.get_ydata(), y)
            check(ok, f"panel {row} against {x}: line {gid} plots the expected points")
    check(line("bleu", "updates", "1:valid_bleu") is None, "the run without BLEU draws no BLEU line")
    resumes = sorted(float(ln.get_xdata()[0]) for ln in axes[("loss", "updates")].get_lines() if ln.get_gid() == "0:resume")
    check(resumes == [11.0, 26.0], f"resume markers at updates {resumes}")
    resumes = sorted(float(ln.get_xdata()[0]) for ln in axes[("loss", "wall")].get_lines() if ln.get_gid() == "0:resume")
    check(same(resumes, [20 / minutes, 26 / minutes]), f"resume markers at wall {resumes}")
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_command(pr, root):
    resumed, plain = root / "resumed", root / "plain"
    r = tool(resumed, plain, "--output", root / "both.png")
    check(r.returncode == 0, f"two runs: exit {r.returncode} {r.stderr.strip()}")
    check_png(root / "both.png", pr.figure_size(5, 2), "two runs, --x both")
    check(pr.figure_size(5, 2) == (1300, 1330), f"layout: 5 rows x 2 columns is {pr.figure_size(5, 2)}")

    old = os.umask(0o022)
    (plain / "report.png").write_bytes(b"old report")
    r = tool(plain)
    check(r.returncode == 0 and r.stdout.strip() == str(plain / "report.png"),
          f"one run: exit {r.returncode}, prints {r.stdout.strip()!r}")
    check_png(plain / "report.png", (1300, 3 * 250 + 80), "one run without BLEU (3 rows), default output replaced")
    check((os.stat(plain / "report.png").st_mode & 0o777) == 0o644, "the report's mode follows the umask (0644)")
    os.umask(old)

    r = tool(resumed, "--x", "updates")
    check(r.returncode == 0, f"--x updates: exit {r.returncode} {r.stderr.strip()}")
    check_png(resumed / "report.png", (650, 1330), "--x updates (one column)")
    r = tool(plain, "--x", "wall", "-o", root / "wall.png")
    check(r.returncode == 0, f"--x wall: exit {r.returncode} {r.stderr.strip()}")
    check_png(root / "wall.png", (650, 830), "--x wall (one column)")
    for d in (root, plain, resumed):
        no_temporaries(d, "after success")


def test_refusals(root):
    bad = root / "bad"
    bad.mkdir()
    existing = bad / "existing.png"
    existing.write_bytes(b"\x89PNG keep me")
    keep = sha(existing)

    def refused(what, args, needles, output=existing):
        before = sha(output) if os.path.exists(output) else None
        r = tool(*args)
        err = r.stderr.strip()
        ok = r.returncode == 2 and all(n in err for n in needles) and len(err.splitlines()) == 1
        check(ok, f"{what}: exit {r.returncode}, message {err!r} names {needles}")
        check((sha(output) if os.path.exists(output) else None) == before, f"{what}: {output.name} unchanged")
        no_temporaries(output.parent, what)

    good = root / "plain"
    refused("missing directory", [root / "nowhere", "-o", existing], [str(root / "nowhere"), "no such directory"])
    refused("a file for RUN_DIR", [good / "metrics.jsonl", "-o", existing], [str(good / "metrics.jsonl"), "not a directory"])
    d = bad / "nofile"
    d.mkdir()
    refused("no metrics.jsonl", [d, "-o", existing], [str(d / "metrics.jsonl"), "no such file"])

    def case(name, text, needles, line=None):
        d = bad / name
        d.mkdir()
        f = d / "metrics.jsonl"
        f.write_bytes(text if isinstance(text, bytes) else text.encode())
        (d / "report.png").write_bytes(b"\x89PNG old report of " + name.encode())
        where = f"{f}:{line}:" if line else str(f)
        # Default output (RUN_DIR/report.png) and, with a good run first, --output.
        refused(f"{name} (default output)", [d], [where, *needles], output=d / "report.png")
        refused(f"{name} (second of two runs, --output)", [good, d, "-o", existing], [where, *needles])

    case("empty", "", ["empty"])
    case("blank", "\n \n", ["empty"])
    case("only_skipped", json.dumps({"event": "skipped", "update": 3}) + "\n", ["no \"train\" or \"valid\" records"])
    case("truncated_line", "\n".join(PLAIN[:2]) + "\n" + PLAIN[2][:25] + "\n" + PLAIN[3] + "\n", ["not valid JSON"], 3)
    case("two_records_one_line", PLAIN[0] + PLAIN[1] + "\n", ["not valid JSON"], 1)
    case("not_an_object", PLAIN[0] + "\n[1, 2]\n", ["expected a JSON object"], 2)
    case("no_event", PLAIN[0] + "\n" + json.dumps({"update": 3}) + "\n", ["no \"event\""], 2)
    case("missing_field", PLAIN[0] + "\n" + json.dumps({"event": "train", "update": 2, "wall_s": 1, "loss": 3,
                                                        "tgt_tokens_per_s": 5}) + "\n", ["\"lr\""], 2)
    case("text_value", "\n".join(PLAIN[:3]) + "\n" + PLAIN[3].replace('"loss": 2.0', '"loss": "abc"') + "\n",
         ["\"loss\"", "expected a number"], 4)
    case("direction_text", PLAIN[0] + "\n" + valid(10, 1.0, 3.0, **{"valid_loss/de-en": "abc"}) + "\n",
         ["\"valid_loss/de-en\"", "expected a number"], 2)
    case("direction_bool", PLAIN[0] + "\n" + valid(10, 1.0, 3.0, **{"valid_bleu/de-en": True}) + "\n",
         ["\"valid_bleu/de-en\"", "expected a number"], 2)
    case("fractional_update", json.dumps(json.loads(PLAIN[0]) | {"update": 1.5}) + "\n", ["\"update\""], 1)
    case("not_utf8", PLAIN[0].encode() + b"\n\xff\xfe\n", ["not UTF-8"], 2)

    r = tool(good, root / "resumed")
    check(r.returncode == 2 and "--output" in r.stderr, f"two runs without --output: exit {r.returncode} {r.stderr.strip()!r}")
    refused("--output in a missing folder", [good, "-o", root / "nowhere" / "x.png"], ["no such directory"])
    refused("--output not .png", [good, "-o", bad / "x.jpg"], ["ending in .png"])
    check(sha(existing) == keep, "the existing PNG was never touched")


def test_multilingual(pr, root, plain):
    multi = pr.load_run(write_run(root, "multi", MULTI))
    for field, want in EXPECT_MULTI.items():
        check(same(multi.valid[field], want), f"multi valid.{field} = {list(multi.valid[field])}, expected {want}")
    check(multi.directions("valid_loss") == ["de-en", "en-de"] and multi.directions("valid_bleu") == ["de-en", "en-de"],
          f"multi directions {multi.directions('valid_loss')}")
    check(plain.directions("valid_loss") == [] and not any("/" in f for f in plain.valid),
          f"a bilingual run has no per-direction series: {sorted(plain.valid)}")
    multi2 = pr.load_run(write_run(root, "multi2", MULTI2))
    fig, axes = pr.build_figure([multi, plain, multi2], "both")
    rows = [k for k, x in axes if x == "updates"]
    check(rows == ["loss", "loss_dir", "bleu", "bleu_dir", "lr", "tps"], f"multilingual rows: {rows}")

    def line(row, x, gid):
        found = [ln for ln in axes[(row, x)].get_lines() if ln.get_gid() == gid]
        return found[0] if len(found) == 1 else None

    cases = [("loss_dir", f"0:valid_loss/{d}", EXPECT_MULTI[f"valid_loss/{d}"]) for d in ("de-en", "en-de")]
    cases += [("bleu_dir", f"0:valid_bleu/{d}", EXPECT_MULTI[f"valid_bleu/{d}"]) for d in ("de-en", "en-de")]
    for row, gid, y in cases:
        # The plain run lasts 6600 s: the wall axis is in minutes.
        for x, want_x in (("updates", EXPECT_MULTI["update"]), ("wall", [w / 60 for w in EXPECT_MULTI["wall"]])):
            ln = line(row, x, gid)
            check(ln is not None and same(ln.get_xdata(), want_x) and same(ln.get_ydata(), y),
                  f"panel {row} against {x}: line {gid} plots the expected points")
    ln = line("loss_dir", "updates", "2:valid_loss/fr-en")
    check(ln is not None and same(ln.get_xdata(), [10]) and same(ln.get_ydata(), [3.9]), "the second run's fr-en line")
    for row in ("loss_dir", "bleu_dir"):
        gids = sorted(ln.get_gid() for ln in axes[(row, "updates")].get_lines())
        check(not any(g.startswith("1:") for g in gids), f"{row}: the bilingual run draws no line ({gids})")
    check(line("bleu_dir", "updates", "2:valid_bleu/en-de") is None, "a run without per-direction BLEU draws none")

    style = {}
    for row, gids in (("loss", ("0:loss", "2:loss")), ("loss_dir", ("0:valid_loss/de-en", "0:valid_loss/en-de",
                                                                  "2:valid_loss/en-de", "2:valid_loss/fr-en"))):
        for g in gids:
            ln = line(row, "updates", g)
            style[g] = (ln.get_color(), ln.get_marker(), ln.get_linestyle()) if ln else None
    check(len({s[1:] for g, s in style.items() if "/" in g and g != "2:valid_loss/en-de"}) == 3,
          f"each direction its own marker and line style: {style}")
    check(style["0:valid_loss/en-de"][1:] == style["2:valid_loss/en-de"][1:], "a direction's style is the same in every run")
    check(style["0:valid_loss/de-en"][0] == style["0:loss"][0] != style["2:valid_loss/fr-en"][0] == style["2:loss"][0],
          "per-direction lines take their run's colour")
    for row in ("loss_dir", "bleu_dir"):
        for x in ("updates", "wall"):
            legend = axes[(row, x)].get_legend()
            names = [t.get_text() for t in legend.get_texts()] if legend else []
            want = ["de-en", "en-de", "fr-en"] if row == "loss_dir" else ["de-en", "en-de"]
            check(names == want, f"panel {row} against {x}: legend names the directions {names}")
    import matplotlib.pyplot as plt
    plt.close(fig)

    r = tool(root / "multi")
    check(r.returncode == 0, f"a multilingual run: exit {r.returncode} {r.stderr.strip()}")
    check_png(root / "multi" / "report.png", pr.figure_size(6, 2), "a multilingual run (6 rows)")
    no_temporaries(root / "multi", "after a multilingual report")


def main():
    pr = load_tool()
    with tempfile.TemporaryDirectory(prefix="plot_run_test.") as tmp:
        root = pathlib.Path(tmp)
        run, plain = test_load_run(pr, root)
        test_figure(pr, run, plain)
        test_command(pr, root)
        test_multilingual(pr, root, plain)
        test_refusals(root)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all plot_run checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
