#!/usr/bin/env python3
"""tools/score_lc_tok.py against cases worked out by hand: the Multi30k preprocessing, BLEU, refusals.

    lc_tok_test.py SOURCE_DIR

1. lc_tok() on hand-written sentences against the tokens the Moses rules give, worked out in
   the comments; without escaping the same tokens unescaped.
2. lc_tok_bleu() on a two-sentence corpus whose clipped n-gram counts, lengths and brevity
   penalty are counted by hand below (multi-bleu.perl's formula: no smoothing); a corpus with
   no 4-gram scores 0; escaping does not change any count.
3. The command: its two lines (sacreBLEU's score line, the signature with the pinned
   sacremoses version), a gzip reference; refusals: exit 2, one line `score_lc_tok.py: error:`
   naming the file, nothing on stdout, no traceback.
"""
import gzip
import importlib.util
import math
import pathlib
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # importing tools/score_lc_tok.py must not leave tools/__pycache__

SRC = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1]).resolve()
TOOL = SRC / "tools" / "score_lc_tok.py"
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def load_tool():
    sys.path.insert(0, str(TOOL.parent))  # as when run as a script: its sibling modules (nmtrain_cli)
    spec = importlib.util.spec_from_file_location("score_lc_tok", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# Each sentence -> lowercase -> normalize-punctuation (en) -> tokenizer (en), by hand:
TOKENS = [
    # lowercase: a man, in "blue" shirt's.  Normalisation changes nothing (no unicode, no
    # brackets, no space before ':' or ';', no '"' before ',' or '.'). Tokenizer: '"' is
    # neither alphanumeric nor one of . ' ` , - so it is padded with spaces; ',' not between
    # digits is split off; English apostrophe between letters: "shirt's" -> "shirt 's"; the
    # last token's '.' is split off; escaping: " -> &quot;, ' -> &apos;.
    ('A Man, in "Blue" Shirt\'s.', "a man , in &quot; blue &quot; shirt &apos;s ."),
    # Normalisation: “ and ” -> ", ’ between letters -> ', … -> ...; '(' gets a space before,
    # ')' after, then repeated spaces collapse. Tokenizer: ( ) ! padded; "..." stays one token
    # (multidots), split from "shirt's" like the apostrophe; "5,300": a comma between digits stays.
    ("Two Men (and a DOG) in “Blue” Shirt’s… at 5,300 m!",
     "two men ( and a dog ) in &quot; blue &quot; shirt &apos;s ... at 5,300 m !"),
    # Lowercasing first (as the Multi30k script does) keeps "man." whole: the tokenizer splits
    # a non-final word's '.' only when the next word does not start with a lowercase letter.
    ("A man. A dog.", "a man. a dog ."),
    # Escaping, in tokenizer.perl's order (& first): & | [ ] < > are padded, then escaped.
    ("A & B | [c] <d>", "a &amp; b &#124; &#91; c &#93; &lt; d &gt;"),
]
UNESCAPED = ['a man , in " blue " shirt \'s .', 'two men ( and a dog ) in " blue " shirt \'s ... at 5,300 m !',
             "a man. a dog .", "a & b | [ c ] < d >"]


def test_preprocessing(m):
    for (raw, want), plain in zip(TOKENS, UNESCAPED):
        got = m.lc_tok([raw])[0]
        check(got == want, f"lc_tok({raw!r}) = {got!r}")
        m.ESCAPE = False
        try:
            got = m.lc_tok([raw])[0]
        finally:
            m.ESCAPE = True
        check(got == plain, f"unescaped: {got!r}")


# Two sentences, processed as above:
#   hyp 1 "the dog runs on the dog ."           (7 tokens)  ref 1 "a dog runs on the green grass ."   (8)
#   hyp 2 "a man , in &quot; blue &quot; shirt ." (9)       ref 2 "a man , in &quot; blue &quot; shirt &apos;s ." (10)
# Matches, counts clipped to the reference's counts per sentence:
#   1-grams: 1: the x2 (ref: 1) -> 1, dog x2 (ref: 1) -> 1, runs, on, . -> 5 of 7;
#            2: all 9 (&quot; x2 in both) -> 9 of 9.                                total 14/16
#   2-grams: 1: "dog runs", "runs on", "on the" (not "the dog" x2, "dog .") -> 3 of 6;
#            2: all but "shirt ." -> 7 of 8.                                       total 10/14
#   3-grams: 1: "dog runs on", "runs on the" -> 2 of 5; 2: all but "&quot; shirt ." -> 6 of 7.  8/12
#   4-grams: 1: "dog runs on the" -> 1 of 4; 2: all but "blue &quot; shirt ." -> 5 of 6.       6/10
# Lengths: hypotheses 7 + 9 = 16 < references 8 + 10 = 18: BP = exp(1 - 18/16) = exp(-1/8).
# BLEU = 100 * BP * (14/16 * 10/14 * 8/12 * 6/10)^(1/4) = 100 * exp(-1/8) * 0.25^(1/4)
#      = 100 * exp(-1/8) / sqrt(2) = 62.40195...
HYPS = ["The dog runs on the dog.", 'A man, in "blue" shirt.']
REFS = ["A dog runs on the green grass.", 'A Man, in "Blue" Shirt\'s.']
COUNTS, TOTALS = [14, 10, 8, 6], [16, 14, 12, 10]
BP = math.exp(1 - 18 / 16)
EXPECTED = 100 * BP * math.exp(sum(math.log(c / t) for c, t in zip(COUNTS, TOTALS)) / 4)
SCORE_LINE = "BLEU = 62.40 87.5/71.4/66.7/60.0 (BP = 0.882 ratio = 0.889 hyp_len = 16 ref_len = 18)"


def test_bleu(m):
    check(abs(EXPECTED - 100 * math.exp(-1 / 8) / math.sqrt(2)) < 1e-12, f"hand BLEU {EXPECTED!r}")
    b = m.lc_tok_bleu(HYPS, REFS, "en")
    check(abs(b.score - EXPECTED) <= 1e-9 * EXPECTED, f"BLEU {b.score!r} == hand {EXPECTED!r} (1e-9 relative)")
    check(list(b.counts) == COUNTS and list(b.totals) == TOTALS, f"counts {b.counts} totals {b.totals}")
    check((b.sys_len, b.ref_len) == (16, 18) and abs(b.bp - BP) < 1e-15, f"lengths {b.sys_len}/{b.ref_len}, BP {b.bp}")
    check(str(b) == SCORE_LINE, f"score line {str(b)!r}")

    # "a dog ." against "a dog runs .": 1-grams 3/3, 2-grams 1/2, 3-grams 0/1, no 4-gram. No
    # smoothing: a zero precision makes BLEU 0 (multi-bleu.perl's log(0) = -9999999999);
    # sacreBLEU's default (exp) would give 100 * exp(1 - 4/3) * (1 * 1/2 * 1/2 * 1/4)^(1/4) ~ 30.
    z = m.lc_tok_bleu(["A dog."], ["A dog runs."])
    check(z.score == 0.0 and list(z.counts) == [3, 1, 0, 0] and list(z.totals) == [3, 2, 1, 0],
          f"no 4-gram: {z} counts {z.counts} totals {z.totals}")

    # Escaping maps characters one-to-one after the splitting: every count is the same without it.
    hyps = HYPS + ["A & B | [c] <d> 'e' \"f\"", "x &amp; y"]
    refs = REFS + ["A & B | [c] <d> \"e\" 'f'", "x & y"]
    esc = m.lc_tok_bleu(hyps, refs)
    m.ESCAPE = False
    try:
        plain = m.lc_tok_bleu(hyps, refs)
    finally:
        m.ESCAPE = True
    check((esc.counts, esc.totals, esc.sys_len, esc.ref_len, esc.score)
          == (plain.counts, plain.totals, plain.sys_len, plain.ref_len, plain.score),
          f"escaped and unescaped BLEU equal: {esc} / {plain}")

    try:
        m.lc_tok_bleu(HYPS, REFS[:1])
        check(False, "lc_tok_bleu with 2 hypotheses and 1 reference raises ValueError")
    except ValueError as e:
        check("2 hypotheses but 1 references" in str(e), f"lc_tok_bleu, 2 vs 1 lines: ValueError {e}")


def run(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=120)


def pinned_sacremoses():
    for line in (SRC / "launch" / "versions.env").read_text().splitlines():
        if line.startswith("SACREMOSES_VERSION="):
            return line.split("=", 1)[1]
    return None


def test_command(m, root):
    hyp, ref = root / "hyp.en", root / "ref.en"
    hyp.write_text("\n".join(HYPS) + "\n", encoding="utf-8")
    ref.write_text("\n".join(REFS) + "\n", encoding="utf-8")
    version = pinned_sacremoses()
    want_sig = (f"lc-tok: lowercase + sacremoses {version} normalize (perl_parity=True) + tokenize (escape=True) "
                "lang:en | sacrebleu nrefs:1|case:mixed|eff:no|tok:none|smooth:none|version:2.6.0")
    r = run("--hyp", hyp, "--ref", ref)
    check(r.returncode == 0 and r.stderr == "", f"command: exit {r.returncode}, stderr {r.stderr.strip()!r}")
    check(r.stdout == f"{SCORE_LINE}\n{want_sig}\n", f"command prints:\n{r.stdout}")
    check(m.signature("en") == want_sig, f"signature() = {m.signature('en')!r}")

    # A gzip reference (the raw Multi30k files are .gz), CRLF line ends in the hypotheses.
    gz, crlf = root / "ref.en.gz", root / "hyp_crlf.en"
    gz.write_bytes(gzip.compress(ref.read_bytes()))
    crlf.write_bytes(hyp.read_bytes().replace(b"\n", b"\r\n"))
    r = run("--hyp", crlf, "--ref", gz, "--lang", "en")
    check(r.returncode == 0 and r.stdout.split("\n")[0] == SCORE_LINE, f"gzip reference, CRLF: {r.stdout!r} {r.stderr!r}")


def test_refusals(root):
    hyp, ref = root / "hyp.en", root / "ref.en"
    short, empty, latin1, badgz = root / "short.en", root / "empty.en", root / "latin1.en", root / "bad.en.gz"
    short.write_text(HYPS[0] + "\n", encoding="utf-8")
    empty.write_bytes(b"")
    latin1.write_bytes(b"a dog .\nein sch\xf6ner hund .\n")
    badgz.write_bytes(gzip.compress(b"a dog .\n" * 50)[:30])
    corruptgz = root / "corrupt.en.gz"  # a gzip header, then no deflate stream: zlib's "invalid block type"
    corruptgz.write_bytes(gzip.compress(b"a dog .\n")[:10] + b"\xff" * 20)

    def refused(name, args, needles, code=2):
        r = run(*args)
        err = r.stderr.strip()
        one_line = r.stderr.endswith("\n") and "\n" not in err
        check(r.returncode == code and r.stdout == "" and "Traceback" not in r.stderr and one_line
              and err.startswith("score_lc_tok.py: error: ") and all(n in err for n in needles),
              f"{name}: exit {r.returncode}, {err!r}")

    refused("missing hypotheses", ["--hyp", root / "nope.en", "--ref", ref], [f"{root / 'nope.en'}: no such file"])
    refused("missing reference", ["--hyp", hyp, "--ref", root / "nope.en"], [f"{root / 'nope.en'}: no such file"])
    refused("a directory", ["--hyp", root, "--ref", ref], [f"{root}: is a directory"])
    refused("line counts differ", ["--hyp", short, "--ref", ref], [f"{short} has 1 lines, {ref} has 2"])
    refused("line counts differ (reference shorter)", ["--hyp", hyp, "--ref", short], [f"{hyp} has 2 lines, {short} has 1"])
    refused("not UTF-8", ["--hyp", latin1, "--ref", ref], [f"{latin1}:2: not UTF-8 (byte 0xf6)"])
    refused("empty reference", ["--hyp", empty, "--ref", empty], [f"{empty}: no lines"])
    refused("corrupt gzip", ["--hyp", hyp, "--ref", badgz], [f"{badgz}: cannot read"])
    refused("gzip with a corrupt deflate stream", ["--hyp", hyp, "--ref", corruptgz], [f"{corruptgz}: cannot read"])
    refused("unknown --lang", ["--hyp", hyp, "--ref", ref, "--lang", "xx"], ["--lang xx", "no Moses nonbreaking prefixes"])

    # Usage errors are argparse's: its usage line, then one error line; exit 2, no traceback.
    r = run("--hyp", hyp)
    lines = r.stderr.strip().split("\n")
    check(r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr and len(lines) == 2
          and lines[0].startswith("usage: score_lc_tok.py") and lines[1].startswith("score_lc_tok.py: error: ")
          and "--ref" in lines[1], f"no --ref: exit {r.returncode}, {r.stderr.strip()!r}")


def main():
    m = load_tool()
    test_preprocessing(m)
    test_bleu(m)
    with tempfile.TemporaryDirectory(prefix="lc_tok_test.") as tmp:
        root = pathlib.Path(tmp)
        test_command(m, root)
        test_refusals(root)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all score_lc_tok checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
