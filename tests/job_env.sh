# Sourced by the multi-process job scripts after `build` is set: the executables of
# BUILD_DIR, the mpirun flags this machine needs (root, more ranks than cores, no pinning),
# a scratch directory that is the working directory and is removed on exit, fail(), and
# same() (needs `python`).
TRAIN=$build/trainer/train PRE=$build/data/preprocess EVAL=$build/eval/evaluate
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
# refused NAME EXPECTED-TEXT COMMAND...: exit 2 and one line on stderr holding the text (a tool's
# or executable's refusal of bad input); its files in the working directory: out.txt, err.txt.
refused() {
  local name=$1 want=$2; shift 2
  "$@" > out.txt 2> err.txt
  local rc=$?
  [ $rc = 2 ] || { cat err.txt; fail "$name: exit $rc, expected 2"; }
  grep -qF -- "$want" err.txt || { cat err.txt; fail "$name: message lacks '$want'"; }
  [ "$(grep -c . err.txt)" = 1 ] || { cat err.txt; fail "$name: not one line"; }
  echo "ok: refused $name: $(cut -c1-160 err.txt)"
}
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

# cluster_toy_job LOG_INTERVAL: the multi-host jobs' toy corpus (raw/), config (c.yaml: 20
# updates, deterministic reduction, a checkpoint every 3 updates, dist.timeout_s=$timeout_s)
# and shards (shards/), shared by tests/multihost_jobs.sh and tests/slurm_jobs.sh so that a
# Slurm launch and an mpirun launch train the same job. Needs python, here and timeout_s.
cluster_toy_job() {
  "$python" "$here/make_toy_corpus.py" raw 400
  cat > c.yaml <<YAML
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 3, max_tokens: 120}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0}
schedule: {type: inverse_sqrt, lr: 0.002, warmup_updates: 5}
optim: {clip_norm: 1.0}
train: {max_updates: 20, threads: 1, log_interval: $1, validate_interval_updates: 10, save_interval_updates: 3, keep_last: 0}
dist: {bucket_mb: 0.01, deterministic_reduce: true, timeout_s: $timeout_s}
YAML
  "$PRE" --config c.yaml > /dev/null 2>&1 || fail preprocess
}

# derived_split_toy_job MAX_UPDATES: the toy corpus (raw/, 300 pairs) and config (c.yaml, shards
# in plain/, a log line and corpus tokens every update) of the jobs that test a split preprocess
# derives from the training corpus (tests/reversed_corpus_jobs.sh, tests/concat_corpus_jobs.sh).
# Needs python and here.
derived_split_toy_job() {
  "$python" "$here/make_toy_corpus.py" raw 300
  cat > c.yaml <<YAML
data: {raw_dir: raw, shard_dir: plain, vocab_size: 40, num_shards: 2, max_tokens: 100}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1}
train: {max_updates: $1, threads: 1, log_interval: 1, validate_interval_updates: $1, save_dir: run, tensorboard: false}
YAML
}
