"""The val BLEU scores of a point: the first line of a scorer's output, and the lc-tok BLEU of
val.hyp by tools/score_lc_tok.py (run by a Python that has its packages)."""
import glob
import os
import re
import subprocess
import sys

from .errors import PointFailed
from .runner import describe_exit, say

SCORER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "score_lc_tok.py")


def first_bleu(path, program):
    """(score, line) from the first line of a scorer's stdout, "BLEU = 37.09 ..."."""
    with open(path, encoding="utf-8", errors="replace") as f:
        line = f.readline().strip()
    m = re.match(r"BLEU = (\d+(?:\.\d+)?)", line)
    if not m:
        raise PointFailed(f"{program} printed no 'BLEU = ' line first", path)
    return float(m.group(1)), line


def raw_val_reference(resolved, tgt=None):
    """data.raw_dir/<valid_split>.<tgt> (tgt: default data.tgt_lang), or its .gz; None when
    neither exists."""
    tgt = tgt or resolved.get("data.tgt_lang", "en")
    base = os.path.join(resolved.get("data.raw_dir", ""), f"{resolved.get('data.valid_split', 'val')}.{tgt}")
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


def val_hyp(direction=None):
    """The file a point's val translation goes to: val.hyp, or val.<direction>.hyp (multilingual)."""
    return f"val.{direction}.hyp" if direction else "val.hyp"


def lc_tok_command(ctx, point, hyp=None, direction=None):
    """tools/score_lc_tok.py's command on hyp (default the point's val.hyp, or val.<direction>.hyp
    against the raw val reference of the direction's target language; it reads .gz too), or None
    without a reference or a scorer."""
    resolved = ctx.resolved[point.name]
    tgt = direction.split("-", 1)[1] if direction else resolved.get("data.tgt_lang", "en")
    ref = raw_val_reference(resolved, tgt)
    if ref is None or ctx.scorer_python is None:
        return None
    return [ctx.scorer_python, SCORER, "--hyp", hyp or ctx.path(point, val_hyp(direction)), "--ref", ref,
            "--lang", tgt]


def lc_tok_point(ctx, point, direction=None):
    """lc-tok BLEU of val.hyp (or val.<direction>.hyp) by tools/score_lc_tok.py; None when that
    tool is absent."""
    if ctx.scorer_python is None:
        return None
    cmd = lc_tok_command(ctx, point, direction=direction)
    log = ctx.path(point, f"lc_tok.{direction}.out" if direction else "lc_tok.out")
    if cmd is None:
        raise PointFailed("no raw val reference for the lc-tok BLEU (data.raw_dir, data.valid_split)", log)
    with open(log, "wb") as out:
        rc = ctx.runner.run(cmd, out, subprocess.STDOUT)
    if rc != 0:
        raise PointFailed(f"score_lc_tok.py ended with {describe_exit(rc)}", log)
    return first_bleu(log, "score_lc_tok.py")[0]
