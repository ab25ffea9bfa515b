"""A split's sentence pairs as h5py reads them from a shard directory, in the manifest's shard
order, each pair a (src ids, tgt ids) tuple of tuples, every shard's `split` attribute checked:
the tests' reader, independent of our C++ one.
Shared by check_subword_samples.py and the derived-split job scripts (PYTHONPATH=tests)."""
import json
import os

import h5py


def split_pairs(shard_dir, split):
    manifest = json.load(open(os.path.join(shard_dir, "manifest.json")))
    pairs = []
    for entry in manifest["splits"][split]["shards"]:
        with h5py.File(os.path.join(shard_dir, entry["file"]), "r") as f:
            assert f.attrs["split"] in (split, split.encode()), (entry["file"], f.attrs["split"])
            sides = []
            for side in ("src", "tgt"):
                tok, off = f[side + "/tokens"][:], f[side + "/offsets"][:]
                sides.append([tuple(tok[off[i]:off[i + 1]].tolist()) for i in range(len(off) - 1)])
            pairs += list(zip(*sides))
    return pairs
