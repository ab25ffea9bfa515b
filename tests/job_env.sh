# Sourced by the multi-process job scripts after `build` is set: the executables of
# BUILD_DIR, the mpirun flags this machine needs (root, more ranks than cores, no pinning),
# a scratch directory that is the working directory and is removed on exit, fail(), and
# same() (needs `python`).
TRAIN=$build/trainer/train PRE=$build/data/preprocess EVAL=$build/eval/evaluate
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
same() {  # same A B: model, optimizer state and update equal bit for bit
  "$python" - "$1" "$2" <<'PY' || fail "$1 and $2 differ"
import sys, torch
a, b = (torch.load(p, weights_only=True) for p in sys.argv[1:3])
assert a["update"] == b["update"], (a["update"], b["update"])
bad = [k for k in a["model"] if not torch.equal(a["model"][k], b["model"][k])]
bad += [k + "." + s for k in a["optimizer"] for s in a["optimizer"][k] if not torch.equal(a["optimizer"][k][s], b["optimizer"][k][s])]
assert not bad, bad[:5]
print(f"identical at update {a['update']}: {sys.argv[1]} == {sys.argv[2]}")
PY
}
