"""Writes a small synthetic German->English corpus in Multi30k layout (train, val,
test_2016_flickr) where each target word is the image of a source word, so tiny models
learn it in seconds.   python tests/make_toy_corpus.py OUT_DIR [TRAIN_PAIRS]"""
import os
import random
import sys

out = sys.argv[1]
n_train = int(sys.argv[2]) if len(sys.argv) > 2 else 200
os.makedirs(out, exist_ok=True)
rng = random.Random(3)
de = "ein Hund läuft im Park zwei Kinder spielen mit Ball".split()
en = "a dog runs in park two children play with ball".split()
for split, n in (("train", n_train), ("val", 20), ("test_2016_flickr", 20)):
    with open(os.path.join(out, f"{split}.de"), "w") as s, open(os.path.join(out, f"{split}.en"), "w") as t:
        for _ in range(n):
            idx = [rng.randrange(10) for _ in range(rng.randint(2, 7))]
            s.write(" ".join(de[i] for i in idx) + " .\n")
            t.write(" ".join(en[i] for i in idx) + " .\n")
