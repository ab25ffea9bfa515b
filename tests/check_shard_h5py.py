"""Reads shards written by the C++ writer with h5py, independently of our reader, and
checks the ids, offsets, attributes and manifest checksums against the expected text."""
import hashlib
import json
import os
import sys

import h5py
import numpy as np

d = sys.argv[1]
manifest = json.load(open(os.path.join(d, "manifest.json")))
pairs = []
for entry in manifest["splits"]["train"]["shards"]:
    path = os.path.join(d, entry["file"])
    assert hashlib.sha256(open(path, "rb").read()).hexdigest() == entry["sha256"], path
    with h5py.File(path, "r") as f:
        assert int(f.attrs["format_version"]) == 1
        assert int(f.attrs["num_examples"]) == entry["examples"]
        assert f["src/tokens"].dtype == np.int32 and f["src/offsets"].dtype == np.int64
        sides = []
        for side in ("src", "tgt"):
            tok, off = f[side + "/tokens"][:], f[side + "/offsets"][:]
            assert off[0] == 0 and off[-1] == len(tok) and len(off) == entry["examples"] + 1
            sides.append([tok[off[i]:off[i + 1]].tolist() for i in range(len(off) - 1)])
        pairs += list(zip(*sides))
expected = []
for line in open(os.path.join(d, "expected.txt")):
    s, t = line.rstrip("\n").split("|")
    expected.append(([int(x) for x in s.split()], [int(x) for x in t.split()]))
assert pairs == [tuple(p) for p in expected], "ids read by h5py differ from what was written"
print(f"h5py read {len(pairs)} pairs from {len(manifest['splits']['train']['shards'])} shards: identical")
