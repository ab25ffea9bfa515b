"""Subword regularisation's shards, read with h5py and checked against Python's SentencePiece
(independent of our reader and of the C++ library's build):

    check_subword_samples.py SHARD_DIR RAW_DIR SAMPLES NBEST ALPHA

1. Every training pair of every train.sample<k> split is a segmentation of its raw line's
   sides that Python's SentencePiece lists among the line's NBEST best, decoding to the same
   text as the best segmentation (kept in train) does; the samples keep exactly train's pairs.
2. The draws follow P(x)^ALPHA over the n best: how often the best segmentation was drawn
   matches its expected count (each line's probability from the pieces' log-probabilities,
   sp.get_score) within 5 standard deviations, and some draws are not the best.
"""
import json
import math
import os
import sys

import sentencepiece as spm

from shard_pairs import split_pairs

shard_dir, raw_dir, samples, nbest, alpha = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
manifest = json.load(open(os.path.join(shard_dir, "manifest.json")))
sp = spm.SentencePieceProcessor(model_file=os.path.join(shard_dir, "spm.model"))


def read_split(name):
    return split_pairs(shard_dir, name)


entry = manifest["splits"]["train"]
assert entry["skipped_empty"] == 0 and entry["skipped_too_long"] == 0, "the check aligns example i with raw line i"
raw = [[line.rstrip("\n") for line in open(os.path.join(raw_dir, f"train.{lang}"), encoding="utf-8")]
       for lang in (manifest["src_lang"], manifest["tgt_lang"])]
best = read_split("train")
assert len(best) == len(raw[0]), (len(best), len(raw[0]))
expected_best, variance, drawn_best, draws = 0.0, 0.0, 0, 0
for k in range(1, samples + 1):
    sampled = read_split(f"train.sample{k}")
    assert len(sampled) == len(best), f"train.sample{k} has {len(sampled)} pairs, train {len(best)}"
    for i, pair in enumerate(sampled):
        for side in (0, 1):
            line, ids = raw[side][i], pair[side]
            candidates = [tuple(c) for c in sp.nbest_encode(line, nbest_size=nbest)]
            assert ids in candidates, f"train.sample{k}[{i}] side {side}: {ids} is not among the {nbest} best of {line!r}"
            assert sp.decode(list(ids)) == sp.decode(list(best[i][side])), f"train.sample{k}[{i}] decodes differently"
            scores = [sum(sp.get_score(t) for t in c) for c in candidates]
            weights = [math.exp(alpha * (s - max(scores))) for s in scores]
            p_best = weights[scores.index(max(scores))] / sum(weights)
            expected_best += p_best
            variance += p_best * (1 - p_best)
            drawn_best += ids == candidates[scores.index(max(scores))]
            draws += 1
sd = math.sqrt(variance)
print(f"{draws} draws: the best segmentation {drawn_best} times, expected {expected_best:.1f} (sd {sd:.1f})")
assert abs(drawn_best - expected_best) <= 5 * sd + 1e-9, "the draws do not follow P(x)^alpha over the n best"
assert drawn_best < draws, "every draw was the best segmentation"
print("ok: every sampled segmentation is among SentencePiece's n best, decodes to its line, and the draws follow P^alpha")
