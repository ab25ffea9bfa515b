"""Scores translations with the BLEU that Multi30k papers report ("lc-tok"), for comparison
with our detokenized sacreBLEU:

  python tools/score_lc_tok.py --hyp HYP --ref REF [--lang en]

HYP and REF are plain text (or .gz), one detokenized sentence a line, as `translate` writes
and as the raw Multi30k files are: e.g. --ref ../shared/data/multi30k/test_2016_flickr.en.gz,
not data/task1/tok/*.lc.norm.tok.* (those are already processed; processing them again splits
their &apos; entities). Both sides go through the pipeline of the Multi30k repository's
scripts/task1-tokenize.sh:

  lowercase.perl | normalize-punctuation.perl -l LANG | tokenizer.perl -l LANG

here Python's str.lower(), sacremoses' MosesPunctNormalizer(LANG, perl_parity=True) and
MosesTokenizer(LANG).tokenize(escape=True), then BLEU on the resulting tokens with no further
tokenization, as multi-bleu.perl computes it (4-grams, one reference, clipped counts, no
smoothing, brevity penalty from the total lengths): sacrebleu.corpus_bleu(hyps, [refs],
tokenize="none", smooth_method="none", force=True). Prints sacreBLEU's score line, then a
signature line naming every setting and version.

Exit 0 done, 2 input refused (one line on stderr: a missing or unreadable file, a file that
is not UTF-8, line counts that differ, an empty reference), 1 anything else (one line too)."""
import argparse
import gzip
import sys
import zlib

from nmtrain_cli import run_cli

PROG = "score_lc_tok.py"
# tokenizer.perl escapes by default (& ' " < > | [ ] -> &amp; &apos; &quot; ...) and the
# Multi30k references papers score against (data/task1/tok/*.lc.norm.tok.*) were made that
# way: lowercase + normalize + tokenize with escaping reproduces test_2016_flickr.lc.norm.tok.en
# byte for byte (1,000 of 1,000 lines; train.lc.norm.tok.en 29,000 of 29,000); without
# escaping 23 of the 1,000 differ.
# For BLEU the choice is immaterial: escaping runs after the splitting, maps characters
# one-to-one (& first, so "&apos;" in the text becomes "&amp;apos;", distinct from an escaped
# "'") and adds no spaces, so every token and n-gram matches exactly when it did unescaped
# (tests/lc_tok_test.py checks that). We escape so that the tokens are those of the Multi30k files.
ESCAPE = True
# normalize-punctuation.perl as of the Moses commit the Multi30k scripts used (3a0631a) maps a
# lone right single quote to '"' ("hook ’em horns" -> &quot; em); perl_parity does the same.
# English lines are equal either way on Multi30k; German train lines come closer (6 differ, not 7).
PERL_PARITY = True

_pipelines = {}


class BadInput(ValueError):  # a ValueError for callers of lc_tok_bleu() (an unknown lang)
    pass


def _pipeline(lang):
    """(normalizer, tokenizer) for `lang`, built once: MosesTokenizer loads its
    nonbreaking-prefix list."""
    if lang not in _pipelines:
        from sacremoses import MosesPunctNormalizer, MosesTokenizer
        from sacremoses.corpus import NonbreakingPrefixes

        # tokenizer.perl falls back to English prefixes with a warning; sacremoses silently.
        # A typo in --lang would change the tokens unnoticed, so refuse codes without a list.
        known = sorted(set(NonbreakingPrefixes().available_langs.values()))
        if lang not in known:
            raise BadInput(f"--lang {lang}: sacremoses has no Moses nonbreaking prefixes for it "
                           f"(known: {' '.join(known)})")
        _pipelines[lang] = (MosesPunctNormalizer(lang=lang, perl_parity=PERL_PARITY), MosesTokenizer(lang=lang))
    return _pipelines[lang]


def lc_tok(lines, lang="en"):
    """The Multi30k preprocessing of each line: lowercase, Moses punctuation normalisation,
    Moses tokenisation; tokens joined by single spaces."""
    normalizer, tokenizer = _pipeline(lang)
    return [tokenizer.tokenize(normalizer.normalize(line.lower()), escape=ESCAPE, return_str=True)
            for line in lines]


def _bleu():
    from sacrebleu.metrics import BLEU

    # force: the text is tokenized on purpose (sacreBLEU would warn about lines ending in " .").
    # lowercase=False: lc_tok() has lowercased already.
    return BLEU(tokenize="none", smooth_method="none", force=True, lowercase=False)


def lc_tok_bleu(hyps, refs, lang="en"):
    """sacrebleu's BLEUScore of detokenized hypotheses `hyps` against one reference per line
    `refs` (equal-length lists of str), both preprocessed by lc_tok(). .score, .counts,
    .totals, .bp, .sys_len, .ref_len as sacrebleu; str() is sacreBLEU's score line."""
    return _scored(hyps, refs, lang)[0]


def _scored(hyps, refs, lang):
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    metric = _bleu()
    return metric.corpus_score(lc_tok(hyps, lang), [lc_tok(refs, lang)]), metric


def signature(lang="en", metric=None):
    """One line naming the processing and versions behind lc_tok_bleu()'s score. `metric`:
    the sacrebleu BLEU that scored (default: one set up as lc_tok_bleu() sets it up)."""
    import sacremoses

    if metric is None:
        metric = _bleu()
        metric.num_refs = 1  # corpus_score() sets it from the references: lc_tok_bleu() gives one stream
    return (f"lc-tok: lowercase + sacremoses {sacremoses.__version__} "
            f"normalize (perl_parity={PERL_PARITY}) + tokenize (escape={ESCAPE}) lang:{lang} | "
            f"sacrebleu {metric.get_signature().format()}")


def read_lines(path):
    """Lines as data::read_lines() and tools/ct2_translate.py read them: plain or gzip, split
    at "\\n", a trailing "\\r" dropped. Refusals are BadInput naming the file."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file")
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory")
    except (OSError, EOFError, zlib.error) as e:  # permissions, a truncated or corrupt gzip stream
        raise BadInput(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise BadInput(f"{path}:{line}: not UTF-8 (byte 0x{raw[e.start]:02x})")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [l[:-1] if l.endswith("\r") else l for l in lines]


def score(args):
    hyps = read_lines(args.hyp)
    refs = read_lines(args.ref)
    if not refs:
        raise BadInput(f"{args.ref}: no lines")
    if len(hyps) != len(refs):
        raise BadInput(f"{args.hyp} has {len(hyps)} lines, {args.ref} has {len(refs)}: "
                       "hypotheses and references must be parallel")
    bleu, metric = _scored(hyps, refs, args.lang)
    sys.stdout.write(f"{bleu}\n{signature(args.lang, metric)}\n")


def main():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--hyp", required=True, help="translations, one detokenized sentence a line (.gz too)")
    parser.add_argument("--ref", required=True, help="references, parallel to --hyp, detokenized (.gz too)")
    parser.add_argument("--lang", default="en", help="target language code for the Moses rules (default: en)")
    args = parser.parse_args()  # usage errors: argparse's message, exit 2
    return run_cli(PROG, score, args, BadInput)


if __name__ == "__main__":
    sys.exit(main())
