"""tools/prepare_mono.py against hand-worked cases: clean keeps exactly the lines worked out
below (CRLF stripped; empty, non-UTF-8, overlong, excluded and repeated lines dropped, in that
order of precedence, first occurrence kept); pairs keeps exactly the pairs fairseq's
extract_bt_data.py rule keeps; bad input is one line, exit 2, and leaves files as they were.
   python tests/prepare_mono_test.py SOURCE_DIR"""
import gzip
import os
import subprocess
import sys
import tempfile

src_dir = sys.argv[1]
TOOL = [sys.executable, os.path.join(src_dir, "tools", "prepare_mono.py")]


def run(*args):
    return subprocess.run(TOOL + list(args), capture_output=True, text=True)


def refused(what, pattern, *args):
    r = run(*args)
    lines = [l for l in r.stderr.splitlines() if "error:" in l]  # argparse's usage lines aside
    assert r.returncode == 2 and len(lines) == 1 and pattern in lines[0], (what, r.returncode, r.stderr)
    print(f"ok: {what} refused: {lines[0][:160]}")


os.chdir(tempfile.mkdtemp())
with gzip.open("mono.en.gz", "wb") as f:
    f.write(b"A dog runs .\r\n"        # kept (CRLF stripped)
            b"\n"                       # empty
            b"   \n"                    # empty after stripping
            b"two   children play .\n"  # in --exclude (whitespace runs as one space)
            b"bad \xff byte\n"          # not UTF-8
            + b"x" * 30 + b"\n"         # over --max-chars 25
            b"A dog runs .\n"           # a repeat of line 1
            b"  A man sits .  \n"       # kept, stripped
            b"A  man sits .\n"          # a repeat of the line before, whitespace aside
            b"the last line")          # kept, though it has no newline
with open("train.en", "w") as f:
    f.write("two children play .\n")
r = run("clean", "mono.en.gz", "--output", "clean.en", "--exclude", "train.en", "--max-chars", "25")
assert r.returncode == 0, r.stderr
got = open("clean.en", encoding="utf-8").read()
assert got == "A dog runs .\nA man sits .\nthe last line\n", repr(got)
assert "kept 3 of 10 lines; dropped 2 empty, 1 not UTF-8, 1 over 25 characters, 1 in --exclude, 2 duplicates; " \
       "1 ended in \\r\\n" in r.stderr, r.stderr
print("ok: clean keeps the 3 hand-worked lines of 10, and counts each drop")

with open("synth.de", "w") as f:
    f.write("ein Hund .\n"                           # 3 / 3 words: kept
            "ein sehr sehr großer Hund rennt .\n"    # 7 / 3: ratio 2.33 > 1.5, dropped
            "zwei Kinder spielen .\n"                # 4 / 6: ratio 1.5, kept (at most)
            "\n")                                    # 0 words: dropped (min 1)
with open("mono.en", "w") as f:
    f.write("a dog .\na dog runs .\ntwo young children play with ball\nsomething .\n")
r = run("pairs", "--src", "synth.de", "--tgt", "mono.en", "--out-prefix", "bt", "--src-lang", "de", "--tgt-lang", "en")
assert r.returncode == 0, r.stderr
assert open("bt.de").read() == "ein Hund .\nzwei Kinder spielen .\n", open("bt.de").read()
assert open("bt.en").read() == "a dog .\ntwo young children play with ball\n", open("bt.en").read()
print("ok: pairs keeps the 2 pairs of 4 that extract_bt_data's rule keeps (ratio 1.5 included, 2.33 not)")

r = run("pairs", "--src", "synth.de", "--tgt", "mono.en", "--out-prefix", "short", "--src-lang", "de",
        "--tgt-lang", "en", "--max-words", "3", "--ratio", "10")
assert r.returncode == 0 and open("short.de").read() == "ein Hund .\n", r.stderr
print("ok: --max-words 3 keeps the one pair of at most 3 words a side")

before = open("clean.en").read()
refused("an existing output", "clean.en: exists", "clean", "mono.en.gz", "--output", "clean.en")
assert open("clean.en").read() == before
refused("a missing input", "nowhere.en: file does not exist", "clean", "nowhere.en", "--output", "o.en")
refused("a missing --exclude", "nope.en: file does not exist", "clean", "mono.en.gz", "--output", "o.en",
        "--exclude", "nope.en")
refused("an output in a missing directory", "does not exist", "clean", "mono.en.gz", "--output", "no/dir/o.en")
with open("empty.en", "w") as f:
    f.write("\n\n")
refused("nothing left", "no line left after cleaning", "clean", "empty.en", "--output", "o.en")
refused("a zero --max-chars", "must be a finite number > 0", "clean", "mono.en.gz", "--output", "o.en",
        "--max-chars", "0")
with open("short.en2", "w") as f:
    f.write("one line\n")
refused("unaligned files", "not aligned", "pairs", "--src", "synth.de", "--tgt", "short.en2", "--out-prefix", "x",
        "--src-lang", "de", "--tgt-lang", "en")
refused("an existing pair output", "bt.de: exists", "pairs", "--src", "synth.de", "--tgt", "mono.en",
        "--out-prefix", "bt", "--src-lang", "de", "--tgt-lang", "en")
refused("a NaN ratio", "must be a finite number > 0", "pairs", "--src", "synth.de", "--tgt", "mono.en",
        "--out-prefix", "y", "--src-lang", "de", "--tgt-lang", "en", "--ratio", "nan")
with open("latin1.de", "wb") as f:
    f.write(b"gro\xdfer Hund\nein Hund\nzwei\nx\n")
refused("a source that is not UTF-8", "latin1.de: not UTF-8", "pairs", "--src", "latin1.de", "--tgt", "mono.en",
        "--out-prefix", "z", "--src-lang", "de", "--tgt-lang", "en")
assert not any(os.path.exists(p) for p in ("o.en", "x.de", "x.en", "y.de", "z.de", "z.en"))
print("PASS prepare_mono")
