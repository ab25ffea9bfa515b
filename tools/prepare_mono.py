#!/usr/bin/env python3
"""Monolingual text for back-translation and self-training, the two filters around
`translate --output` (README "Monolingual data"):

  python tools/prepare_mono.py clean INPUT --output OUT [--exclude FILE ...] [--max-chars N]
  python tools/prepare_mono.py pairs --src SRC --tgt TGT --out-prefix PREFIX --src-lang L1 --tgt-lang L2
                                     [--min-words N] [--max-words N] [--ratio R]

clean: INPUT (plain or .gz) as `translate --output` takes it: each line stripped of "\\r" and
surrounding whitespace; lines dropped when empty, not UTF-8, longer than --max-chars (default
1000), equal to a line of an --exclude file (the parallel data's side in that language, the
validation and test sets; compared with runs of whitespace as one space), or equal to an
earlier line (the first is kept). Prints one line of counts on stderr.

pairs: a synthetic corpus in Multi30k layout, PREFIX.L1 and PREFIX.L2, from two aligned files
(the translations and their sources), keeping the pairs fairseq's
examples/backtranslation/extract_bt_data.py keeps: both sides of --min-words to --max-words
words (split on spaces; default 1 to 250) and the longer at most --ratio (default 1.5) times
the shorter.

Both write their outputs atomically and never over an existing file. Exit 0 done, 2 bad input
(one line on stderr: a missing or unreadable file, an output that exists, files whose line
counts differ, nothing left), 1 anything else (one line too). Standard library only."""
import argparse
import gzip
import os
import sys

from nmtrain_cli import run_cli
from sweeplib.files import write_atomic

PROG = "prepare_mono.py"


class BadInput(Exception):
    pass


def normalized(text):
    return " ".join(text.split())


def exclusions(paths):
    out = set()
    for path in paths:
        for raw in lines_of_whole(path):
            try:
                out.add(normalized(raw.decode("utf-8")))
            except UnicodeDecodeError:
                continue
    return out


def lines_of_whole(path):
    """Every line, the last one included when it has no newline."""
    if not os.path.isfile(path):
        raise BadInput(f"{path}: file does not exist")
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:
        raise BadInput(f"{path}: cannot read: {e}") from None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def refuse_existing(*paths):
    for p in paths:
        if os.path.exists(p):
            raise BadInput(f"{p}: exists; {PROG} never overwrites (remove it or choose another name)")
        if not os.path.isdir(os.path.dirname(p) or "."):
            raise BadInput(f"{p}: directory {os.path.dirname(p)} does not exist")


def clean(args):
    refuse_existing(args.output)
    excluded = exclusions(args.exclude)
    seen, kept = set(), []
    counts = dict(read=0, empty=0, not_utf8=0, too_long=0, excluded=0, duplicate=0, crlf=0)
    for raw in lines_of_whole(args.input):
        counts["read"] += 1
        if raw.endswith(b"\r"):
            counts["crlf"] += 1
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            counts["not_utf8"] += 1
            continue
        key = normalized(text)
        reason = ("empty" if not key else "too_long" if len(text) > args.max_chars else
                  "excluded" if key in excluded else "duplicate" if key in seen else None)
        if reason:
            counts[reason] += 1
            continue
        seen.add(key)
        kept.append(text)
    summary = (f"kept {len(kept)} of {counts['read']} lines; dropped {counts['empty']} empty, "
               f"{counts['not_utf8']} not UTF-8, {counts['too_long']} over {args.max_chars} characters, "
               f"{counts['excluded']} in --exclude, {counts['duplicate']} duplicates; {counts['crlf']} ended in \\r\\n")
    if not kept:
        raise BadInput(f"{args.input}: no line left after cleaning ({summary})")
    write_atomic(args.output, "".join(t + "\n" for t in kept))
    print(f"{PROG}: {args.output}: {summary}", file=sys.stderr)


def keep_pair(src, tgt, args):
    """fairseq's extract_bt_data.py validate(): word counts within bounds, ratio at most --ratio."""
    s, t = len(src.split()), len(tgt.split())
    if s < args.min_words or t < args.min_words or s > args.max_words or t > args.max_words:
        return False
    return max(s, t) / min(s, t) <= args.ratio


def pairs(args):
    src_out, tgt_out = f"{args.out_prefix}.{args.src_lang}", f"{args.out_prefix}.{args.tgt_lang}"
    refuse_existing(src_out, tgt_out)
    if args.src_lang == args.tgt_lang:
        raise BadInput(f"--src-lang and --tgt-lang are both '{args.src_lang}'")
    sides = []
    for path in (args.src, args.tgt):
        try:
            sides.append([line.decode("utf-8").rstrip("\r") for line in lines_of_whole(path)])
        except UnicodeDecodeError as e:
            raise BadInput(f"{path}: not UTF-8 ({e})") from None
    if len(sides[0]) != len(sides[1]):
        raise BadInput(f"{args.src} has {len(sides[0])} lines but {args.tgt} has {len(sides[1])}: not aligned")
    kept = [(s, t) for s, t in zip(*sides) if keep_pair(s, t, args)]
    if not kept:
        raise BadInput(f"{args.src}: no pair left after filtering")
    write_atomic(src_out, "".join(s + "\n" for s, _ in kept))
    try:
        write_atomic(tgt_out, "".join(t + "\n" for _, t in kept))
    except BaseException:
        os.remove(src_out)  # both or neither
        raise
    print(f"{PROG}: {src_out}, {tgt_out}: kept {len(kept)} of {len(sides[0])} pairs "
          f"({args.min_words}-{args.max_words} words a side, ratio <= {args.ratio})", file=sys.stderr)


def positive(kind):
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a {kind.__name__}") from None
        if not v > 0 or v != v or v == float("inf"):
            raise argparse.ArgumentTypeError(f"'{text}' must be a finite number > 0")
        return v
    return parse


def main(argv):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("clean", help="drop empty, broken, overlong, excluded and repeated lines")
    c.add_argument("input")
    c.add_argument("--output", required=True)
    c.add_argument("--exclude", action="append", default=[], help="a file whose lines to drop (repeatable)")
    c.add_argument("--max-chars", type=positive(int), default=1000)
    c.set_defaults(action=clean)
    p = sub.add_parser("pairs", help="a synthetic corpus of the aligned pairs that pass the length filters")
    p.add_argument("--src", required=True, help="the source side (the translations, for back-translation)")
    p.add_argument("--tgt", required=True, help="the target side (the monolingual text they were translated from)")
    p.add_argument("--out-prefix", required=True)
    p.add_argument("--src-lang", required=True)
    p.add_argument("--tgt-lang", required=True)
    p.add_argument("--min-words", type=positive(int), default=1)
    p.add_argument("--max-words", type=positive(int), default=250)
    p.add_argument("--ratio", type=positive(float), default=1.5)
    p.set_defaults(action=pairs)
    args = parser.parse_args(argv)
    return run_cli(PROG, args.action, args, BadInput)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
