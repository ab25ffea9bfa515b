"""Writes BLEU test cases scored by sacreBLEU itself (the reference implementation, from
PyPI) to a JSON file that tests/bleu_test.cpp compares our BLEU against.

    python tests/bleu_reference.py OUT.json
"""
import json
import random
import sys

import sacrebleu

WORDS = ["the", "a", "dog", "man", "woman", "Dog", "runs", "is", "in", "park", ".", ",", "!", "?", "-", "'s",
         "don't", "3.14", "1,000", "1990-2000", "10-", "(", ")", "\"", "&amp;", "&quot;", "&lt;tag&gt;", "e.g.",
         "U.S.A.", "Straße", "naïve", "café", "日本語", "über", "Ünïcödé", "x-ray", "$5", "50%", "a/b", "<skipped>",
         "end.", ",start", "..", "9.", ".9", "1.", "—", "«quoted»", "@user", "#tag", "[x]", "{y}", "~", "`"]
SPACES = [" ", " ", " ", " ", "  ", "\t", "\u00a0", "\u3000", "\u2009"]


def sentence(rng, max_words):
    n = rng.randint(0, max_words)
    out = ""
    for i in range(n):
        w = rng.choice(WORDS)
        out += (rng.choice(SPACES) if i else "") + w
        if rng.random() < 0.15:  # glue punctuation to the word, as detokenized text does
            out += rng.choice([".", ",", "!", "-", ")"])
    if rng.random() < 0.1:
        out += rng.choice([" ", "  ", "\u00a0"])  # trailing whitespace (rstrip'ed by sacreBLEU)
    return out


def main():
    rng = random.Random(20261122)
    cases = []
    for k in range(260):
        segments = rng.randint(1, 6)
        refs = [sentence(rng, 12) for _ in range(segments)]
        hyps = []
        for r in refs:
            roll = rng.random()
            if roll < 0.08:
                hyps.append("")                              # empty hypothesis
            elif roll < 0.16:
                hyps.append(rng.choice(WORDS))               # single word
            elif roll < 0.5:
                words = r.split()
                rng.shuffle(words) if rng.random() < 0.3 else None
                hyps.append(" ".join(w for w in words if rng.random() < 0.85))  # close to the reference
            else:
                hyps.append(sentence(rng, 12))
        bleu = sacrebleu.corpus_bleu(hyps, [refs])
        cases.append({"hyps": hyps, "refs": refs, "score": bleu.score, "line": str(bleu)})
    # sacreBLEU's README example, one reference stream.
    hyps = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
    refs = ["The dog bit the man.", "It was not unexpected.", "The man bit him first."]
    metric = sacrebleu.BLEU()
    bleu = metric.corpus_score(hyps, [refs])
    cases.append({"hyps": hyps, "refs": refs, "score": bleu.score, "line": str(bleu)})
    signature = str(metric.get_signature())
    json.dump({"version": sacrebleu.__version__, "signature": signature, "cases": cases},
              open(sys.argv[1], "w"), ensure_ascii=False, indent=0)
    print(f"wrote {len(cases)} cases scored by sacreBLEU {sacrebleu.__version__}")


if __name__ == "__main__":
    main()
