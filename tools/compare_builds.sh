#!/usr/bin/env bash
# Proof for a change that must not change behaviour (a refactor): two builds of the
# executables, run on the same toy corpus, must write the same things.
#
#   tools/compare_builds.sh OLD_BUILD NEW_BUILD [PYTHON]
#
# Each BUILD is a directory with data/preprocess, trainer/train, trainer/average,
# eval/evaluate and eval/translate (a build tree, or a copy of those five). PYTHON (default:
# the project's venv from launch/setup.sh) needs torch. Compared:
#   - shards, manifest and SentencePiece model: byte for byte;
#   - --print-config and every executable's --help (the build's path made BUILD): byte for byte;
#   - last.pt and the averaged checkpoint of a run with dropout: every field (tensors with
#     torch.equal, the rest with ==; the config text as a diff; the validation history
#     without its wall-clock times);
#   - evaluate's hypotheses and BLEU lines, translate's n-best: byte for byte.
# Prints one line per comparison ("same" or "DIFFERENT" with the difference) and exits 1
# if anything differs, 2 on bad usage.
set -uo pipefail
usage() { echo "usage: compare_builds.sh OLD_BUILD NEW_BUILD [PYTHON]" >&2; exit 2; }
[ $# -ge 2 ] && [ $# -le 3 ] || usage
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for b in "$1" "$2"; do
  for exe in data/preprocess trainer/train trainer/average eval/evaluate eval/translate; do
    [ -x "$b/$exe" ] || { echo "compare_builds.sh: error: $b/$exe: not an executable" >&2; exit 2; }
  done
done
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd)
python=${3:-}
if [ -z "$python" ]; then
  eval "$(bash "$root/launch/setup.sh" 2>/dev/null)" || { echo "compare_builds.sh: error: launch/setup.sh failed" >&2; exit 2; }
  python=$NMTRAIN_VENV/bin/python
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 2
differences=0
report() {  # report WHAT STATUS [DETAIL]
  if [ "$2" = 0 ]; then echo "same:      $1"; else echo "DIFFERENT: $1${3:+: $3}"; differences=$((differences + 1)); fi
}
same_file() { cmp -s "$1" "$2"; report "$3" $? "$(diff <(head -c 4000 "$1") <(head -c 4000 "$2") | head -5)"; }

"$python" "$root/tests/make_toy_corpus.py" raw > /dev/null
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 2, max_tokens: 300}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.1,
        source_word_dropout: 0.1, decoder_layerdrop: 0.1}
schedule: {type: cosine, lr: 0.003, warmup_updates: 10}
train: {max_updates: 60, threads: 1, log_interval: 20, validate_interval_updates: 20, save_interval_updates: 20,
        keep_last: 3, save_dir: run}
eval: {beam: 3, nbest: 2}
YAML
for side in old new; do
  b=${!side}
  mkdir -p "$side" && cp c.yaml "$side/" && ln -s "$tmp/raw" "$side/raw"
  (
    cd "$side" || exit 1
    "$b/data/preprocess" --config c.yaml > preprocess.out 2>&1 &&
    "$b/trainer/train" --config c.yaml > train.out 2>&1 &&
    "$b/trainer/average" --output avg.pt --last 3 run > average.out 2>&1 &&
    "$b/eval/evaluate" --config c.yaml --checkpoint avg.pt --split test --output hyp.txt > bleu.txt 2> evaluate.err &&
    head -5 raw/test_2016_flickr.de | "$b/eval/translate" --config c.yaml --checkpoint avg.pt --nbest 2 > nbest.txt 2> translate.err &&
    "$b/trainer/train" --config c.yaml train.seed=7 --print-config > print_config.yaml 2>&1
  ) || { echo "compare_builds.sh: error: the $side build failed on the toy corpus (see above)" >&2; tail -5 "$side"/*.out "$side"/*.err >&2; exit 2; }
  for exe in data/preprocess trainer/train trainer/average eval/evaluate eval/translate; do
    "$b/$exe" --help 2>&1 | sed "s|$b/|BUILD/|g" > "$side/help.$(basename "$exe")"  # the usage line names argv[0]
  done
done

for f in $(cd old/shards && ls); do same_file "old/shards/$f" "new/shards/$f" "shards/$f"; done
[ "$(cd old/shards && ls)" = "$(cd new/shards && ls)" ]; report "the shard directory's file list" $?
same_file old/print_config.yaml new/print_config.yaml "train --print-config"
for h in old/help.*; do same_file "$h" "new/${h#old/}" "--help of ${h#old/help.}"; done
same_file old/hyp.txt new/hyp.txt "evaluate's hypotheses"
same_file old/bleu.txt new/bleu.txt "evaluate's BLEU lines"
same_file old/nbest.txt new/nbest.txt "translate --nbest 2"
for ckpt in run/last.pt avg.pt; do
  detail=$("$python" - "old/$ckpt" "new/$ckpt" <<'PY'
import difflib, json, sys, torch
a, b = (torch.load(p, weights_only=True) for p in sys.argv[1:3])
for c in (a, b):  # the validation history's wall-clock times differ from run to run
    if isinstance(c.get("metrics"), str):
        c["metrics"] = [{k: v for k, v in r.items() if k != "wall_s"} for r in json.loads(c["metrics"])]
def diff(x, y, where):
    if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
        ok = isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.dtype == y.dtype and torch.equal(x, y)
        return [] if ok else [where]
    if isinstance(x, dict) and isinstance(y, dict):
        out = [f"{where}.{k}: only in one" for k in set(x) ^ set(y)]
        for k in sorted(set(x) & set(y), key=str):
            out += diff(x[k], y[k], f"{where}.{k}")
        return out
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)) and len(x) == len(y):
        return [d for i, (u, v) in enumerate(zip(x, y)) for d in diff(u, v, f"{where}[{i}]")]
    if x == y:
        return []
    if isinstance(x, str) and isinstance(y, str) and "\n" in x:
        lines = [l for l in difflib.unified_diff(x.splitlines(), y.splitlines(), lineterm="", n=0) if l[:1] in "+-" and l[:3] not in ("+++", "---")]
        return [f"{where}: " + " | ".join(lines)]
    return [f"{where}: {x!r} != {y!r}"]
problems = diff(a, b, "checkpoint")
print("; ".join(problems))
sys.exit(1 if problems else 0)
PY
)
  report "$ckpt (every field)" $? "$detail"
done
echo "compare_builds.sh: $differences difference(s) between $old and $new"
[ "$differences" = 0 ]
