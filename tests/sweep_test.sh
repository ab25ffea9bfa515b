#!/usr/bin/env bash
# tools/sweep.py on the toy corpus: a 2-point sweep stopped by SIGTERM while its second point
# trains, then rerun: the finished point is skipped untouched, the other resumes bit-exactly
# (its last.pt equals an uninterrupted run's) with the rest of its time budget; the table's
# numbers are checked against metrics.jsonl and a direct `evaluate`. Also: a point whose
# overrides changed after it finished, a failing point, and bad sweep files (exit 2, FILE:LINE,
# nothing written); --only; a multilingual sweep (per-direction evaluation, mean BLEU, own shards);
# own shards reused only while their raw files are the same (by content).
#   sweep_test.sh BUILD_DIR PYTHON
set -uo pipefail
build=$(cd "$1" && pwd) python=$2  # absolute: job_env.sh moves to a scratch directory
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"
SWEEP=("$python" "$root/tools/sweep.py" --build "$build")

"$python" "$here/make_toy_corpus.py" raw 150
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 2, max_tokens: 300}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.1, attention_dropout: 0.1}
schedule: {type: inverse_sqrt, lr: 0.002, warmup_updates: 10}
train: {threads: 1, log_interval: 10, validate_interval_updates: 20, save_interval_updates: 20, keep_last: 0, tensorboard: false}
YAML
"$PRE" --config c.yaml > /dev/null 2>&1 || fail preprocess

# Point b's budget is 200 updates or 10 minutes, whichever comes first: its resumed process
# must get the 10 minutes less the time already spent. (200: room to stop it after update 20.)
cat > s.sweep <<'EOF'
# two learning rates
config c.yaml
common train.max_updates=100   # every point
point a schedule.lr=0.005 train.save_interval_updates=10   # averages updates 60-100
point b schedule.lr=0.003 train.max_updates=200 train.max_minutes=10
EOF

# --- Stop the sweep while point b trains.
"${SWEEP[@]}" s.sweep --out sw > sweep1.log 2>&1 &
pid=$!
for _ in $(seq 1 1200); do [ -e sw/b/update_20.pt ] && break; sleep 0.05; done
[ -e sw/b/update_20.pt ] || { cat sweep1.log; fail "point b never wrote update_20.pt"; }
kill -TERM $pid; wait $pid; rc=$?
[ $rc -eq 143 ] || { cat sweep1.log; fail "sweep stopped by SIGTERM: exit $rc, expected 143"; }
[ -e sw/a/result.json ] || fail "point a finished but has no result.json"
[ ! -e sw/b/result.json ] || fail "point b was stopped but has a result.json"
grep -q "stopped by signal 15 after update" sw/b/train.out || { tail sw/b/train.out; fail "train did not get the SIGTERM"; }
stopped=$("$python" -c "import torch; print(torch.load('sw/b/last.pt', weights_only=True)['update'])") || fail "sw/b/last.pt"
[ "$stopped" -lt 200 ] || fail "point b finished before the SIGTERM (update $stopped): the test lost its race"
echo "ok: SIGTERM during point b: exit 143, a finished, b stopped at update $stopped without result.json"

# --- Dry run now: a skipped, b resumed with the rest of its 10 minutes; nothing written.
wall() {  # wall DIR: training seconds of every process of a run, summed (metrics.jsonl)
  "$python" - "$1/metrics.jsonl" <<'PY'
import json, sys
walls = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["event"] == "start":
        walls.append(0.0)
    elif r["event"] in ("train", "valid"):
        walls[-1] = max(walls[-1], r["wall_s"])
print(repr(sum(walls)))
PY
}
listing() { find sw -printf '%p %s %T@\n' | sort; }
listing > before.txt
"${SWEEP[@]}" s.sweep --out sw --dry-run > dry.txt 2>&1 || { cat dry.txt; fail "dry run"; }
listing | cmp -s - before.txt || fail "--dry-run changed sw/"
left=$("$python" -c "print(f'{10 - $(wall sw/b) / 60:.3f}')")
grep -q "^# point a: finished" dry.txt || { cat dry.txt; fail "dry run: a not skipped"; }
grep -q "train.max_minutes=$left train.save_dir=sw/b --resume auto" dry.txt || { cat dry.txt; fail "dry run: no train.max_minutes=$left"; }
echo "ok: --dry-run writes nothing, skips a, resumes b with train.max_minutes=$left"

# --- Rerun: a untouched, b resumed and finished.
keep() { for f in sw/a/result.json sw/a/averaged.pt sw/a/val.hyp; do echo "$f $(stat -c %y "$f") $(sha256sum < "$f")"; done; }
keep > a_before.txt
"${SWEEP[@]}" s.sweep --out sw > sweep2.log 2>&1 || { cat sweep2.log; fail "rerun of the sweep"; }
grep -q "point a: finished (sw/a/result.json), skipped" sweep2.log || { cat sweep2.log; fail "a not skipped"; }
keep | cmp -s - a_before.txt || fail "the rerun touched point a's files"
grep -q "resumed from sw/b/last.pt at update $stopped" sw/b/train.out || { tail sw/b/train.out; fail "b not resumed from last.pt"; }
grep -q "train.max_minutes=$left train.save_dir=sw/b --resume auto" sweep2.log || fail "b resumed without the rest of its budget"
"$python" - <<'PY' || fail "metrics.jsonl of b: expected a first and a resumed start"
import json
starts = [r for r in map(json.loads, open("sw/b/metrics.jsonl")) if r["event"] == "start"]
assert [s["resumed"] for s in starts] == [False, True], starts
PY
echo "ok: rerun skipped a (files unchanged) and resumed b at update $stopped"

# b's last.pt against the same point trained without a stop.
"$TRAIN" --config c.yaml train.max_updates=100 schedule.lr=0.003 train.max_updates=200 train.max_minutes=10 \
  train.save_dir=straight > straight.log 2>&1 || { tail straight.log; fail "uninterrupted run of b"; }
same straight/last.pt sw/b/last.pt

# --- The table against metrics.jsonl and a direct evaluate of each averaged.pt.
for p in a b; do
  read -ra own <<< "$(grep "^point $p " s.sweep | sed 's/ *#.*//' | cut -d' ' -f3-)"  # the point's overrides
  "$EVAL" --config c.yaml train.max_updates=100 "${own[@]}" train.save_dir=sw/$p \
    --checkpoint sw/$p/averaged.pt --split val --beam 5 > eval_$p.txt 2> /dev/null || fail "evaluate $p"
done
"$python" - "$root/tools/score_lc_tok.py" "$(wall sw/a)" "$(wall sw/b)" <<'PY' || fail "table"
import csv, json, os, subprocess, sys
scorer, walls = sys.argv[1], {"a": float(sys.argv[2]), "b": float(sys.argv[3])}
rows = list(csv.DictReader(open("sw/table.csv")))
assert [r["point"] for r in rows] == ["a", "b"] and all(r["status"] == "finished" for r in rows), rows
info = dict((k.strip(), v.strip()) for k, _, v in (l.partition(":") for l in open("/proc/cpuinfo").read().split("\n\n")[0].splitlines()))
cpu = f"{info['model name']} (family {info['cpu family']}, model {info['model']})"
for row, max_updates in zip(rows, (100, 200)):
    p = row["point"]
    valid = [r for r in map(json.loads, open(f"sw/{p}/metrics.jsonl")) if r["event"] == "valid"]
    bleu = float(open(f"eval_{p}.txt").readline().split()[2])  # "BLEU = 12.34 ..."
    assert int(row["updates"]) == max_updates, (p, row["updates"])
    assert float(row["best_valid_loss"]) == min(r["valid_loss"] for r in valid), (p, row["best_valid_loss"])
    assert float(row["best_valid_nll"]) == min(r["valid_nll"] for r in valid), (p, row["best_valid_nll"])
    assert float(row["val_bleu"]) == bleu, (p, row["val_bleu"], bleu)
    assert float(row["train_wall_s"]) == walls[p], (p, row["train_wall_s"], walls[p])
    assert float(row["tgt_tokens_per_s"]) > 0 and int(row["epochs"]) >= 1 and row["cpu"] == cpu, row
    if os.path.exists(scorer):  # the lc-tok column is filled exactly when the scorer is there
        out = subprocess.run([sys.executable, scorer, "--hyp", f"sw/{p}/val.hyp", "--ref", "raw/val.en"],
                             capture_output=True, text=True, check=True).stdout
        assert float(row["val_lc_tok_bleu"]) == float(out.split()[2]), (p, row["val_lc_tok_bleu"], out)
    else:
        assert row["val_lc_tok_bleu"] == "", row
    print(f"ok: table row {p}: {max_updates} updates, best val loss {row['best_valid_loss']}, "
          f"BLEU {row['val_bleu']} = evaluate's, wall {row['train_wall_s']} s, lc-tok '{row['val_lc_tok_bleu']}'")
md = open("sw/table.md").read().splitlines()
assert sum(l.startswith("| a |") or l.startswith("| b |") for l in md) == 2, md
PY

# --- Changed overrides of a finished point: refused, nothing touched.
sed 's/^point a schedule.lr=0.005/point a schedule.lr=0.02/' s.sweep > s2.sweep
keep > a_before.txt
"${SWEEP[@]}" s2.sweep --out sw > s2.out 2> s2.err; rc=$?
[ $rc -eq 2 ] || { cat s2.err; fail "changed overrides of a finished point: exit $rc, expected 2"; }
grep -q "sweep.py: error: s2.sweep:4: point 'a': finished in sw/a with config c.yaml and overrides" s2.err \
  || { cat s2.err; fail "changed overrides: message"; }
keep | cmp -s - a_before.txt || fail "refused sweep touched point a"
echo "ok: changed overrides of a finished point -> $(head -c 160 s2.err)"

# --- The committed table beside the sweep file (s.csv, s.md) equals OUT's, and lets the sweep
# go on elsewhere: with an empty --out (a new machine, runs/ gone) both points are skipped, none
# is trained, and the rows stay as committed.
cmp -s s.csv sw/table.csv && cmp -s s.md sw/table.md || fail "committed table differs from sw/table.*"
cp s.csv committed_before.csv
"${SWEEP[@]}" s.sweep --out sw_elsewhere > elsewhere.log 2>&1 || { cat elsewhere.log; fail "sweep on a new machine"; }
grep -q "point a: finished in s.csv" elsewhere.log && grep -q "point b: finished in s.csv" elsewhere.log \
  || { cat elsewhere.log; fail "committed points not skipped"; }
[ ! -e sw_elsewhere/a ] && [ ! -e sw_elsewhere/b ] || fail "a committed point was run again"
cmp -s s.csv committed_before.csv || { diff s.csv committed_before.csv; fail "committed rows changed"; }
echo "ok: a sweep with an empty --out skips the points its committed table has finished, rows unchanged"
# A committed row run with other overrides than the sweep file now gives: refused, exit 2.
sed 's/^point b schedule.lr=0.003/point b schedule.lr=0.03/' s.sweep > s3.sweep
cp s.csv s3.csv
"${SWEEP[@]}" s3.sweep --out sw3 > s3.out 2> s3.err; rc=$?
[ $rc -eq 2 ] && grep -q "s3.sweep:5: point 'b': finished in s3.csv with config c.yaml" s3.err \
  || { cat s3.err; fail "changed overrides of a committed point: exit $rc"; }
[ ! -e sw3 ] && cmp -s s3.csv s.csv || fail "refused sweep wrote sw3 or changed s3.csv"
echo "ok: changed overrides of a committed point -> $(head -c 120 s3.err)"

# --- Points that set data.* keys: their own shards, preprocessed once and shared by both; the
# config's shards untouched; the table has the data columns.
printf 'config c.yaml\ncommon train.max_updates=10\npoint v1 data.vocab_size=36\n%s\npoint base\n' \
  'point v2 data.vocab_size=36 schedule.lr=0.003' > d.sweep
"${SWEEP[@]}" d.sweep --out dw --shards dshards > d.log 2>&1 || { cat d.log; fail "data-key sweep"; }
[ "$(grep -c 'preprocessing its data settings' d.log)" = 1 ] || { cat d.log; fail "expected one preprocess"; }
own=$(ls -d dshards/*) && [ "$(echo "$own" | wc -l)" = 1 ] || fail "expected one shard directory: $own"
case $own in dshards/de-en_unigram36_*) ;; *) fail "shard directory name: $own" ;; esac
for p in v1 v2; do
  grep -q "point $p: training: .* data.shard_dir=$own train.save_dir=dw/$p" d.log || { cat d.log; fail "$p not on $own"; }
  grep -q "point $p: evaluating on val: .* data.shard_dir=$own train.save_dir=dw/$p" d.log || fail "$p not evaluated on $own"
done
grep "point base: training:" d.log | grep -q "data.shard_dir" && fail "point base given other shards"
"$python" - "$own" <<'PY' || fail "data-key points: shards and table"
import csv, json, sys
assert json.load(open(f"{sys.argv[1]}/manifest.json"))["vocab_size"] == 36
assert json.load(open("shards/manifest.json"))["vocab_size"] == 40  # the config's own shards
rows = {r["point"]: r for r in csv.DictReader(open("d.csv"))}
assert [rows[p]["vocab_size"] for p in ("v1", "v2", "base")] == ["36", "36", "40"], rows
assert all(r["status"] == "finished" and r["spm_model_type"] == "unigram" for r in rows.values()), rows
PY
echo "ok: two points with data.vocab_size=36 share one preprocess into $own; the table has the data columns"
# Those shards record their raw files by content: reused only while the files are the same.
# Another text under the same raw_dir is refused, naming the file, and the shards stay as they are.
[ -f "$own/raw-files.json" ] || fail "no raw-files.json in $own"
cp raw/train.de train.de.kept && sed -i '1s/^/noch /' raw/train.de
sum_before=$(cat "$own"/* | sha256sum)
printf 'config c.yaml\ncommon train.max_updates=10\npoint v3 data.vocab_size=36\n' > d2.sweep
"${SWEEP[@]}" d2.sweep --out dw2 --shards dshards > d2.log 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q "point v3: FAILED: $own was preprocessed from other raw files (changed: train.de; " d2.log ||
  { cat d2.log; fail "shards of other raw files reused: exit $rc"; }
[ "$(cat "$own"/* | sha256sum)" = "$sum_before" ] && [ ! -e dw2/v3/result.json ] || fail "a refused reuse changed $own or ran v3"
echo "ok: shards of other raw files refused: $(grep -o 'FAILED: .*' d2.log | cut -c1-150)"
cp train.de.kept raw/train.de && rm "$own/raw-files.json"  # made before records were kept: recorded now
"${SWEEP[@]}" d2.sweep --out dw3 --shards dshards > d3.log 2>&1 || { cat d3.log; fail "shards without a record"; }
grep -q "point v3: $own had no record of its raw files; recorded them as they are now" d3.log && [ -f "$own/raw-files.json" ] ||
  { cat d3.log; fail "a shard directory without a record"; }
echo "ok: a shard directory without a record is recorded once and reused"

# --- A point that fails: reported with its log, the next point still runs, exit 1.
printf 'config c.yaml\ncommon train.max_updates=20\npoint broken data.shard_dir=no_shards\npoint fine\n' > f.sweep
"${SWEEP[@]}" f.sweep --out fw > f.log 2>&1; rc=$?
[ $rc -eq 1 ] || { cat f.log; fail "failed point: exit $rc, expected 1"; }
grep -q "point broken: FAILED: train ended with exit status 2" f.log && grep -q "no_shards" f.log \
  || { cat f.log; fail "failure report"; }
[ -e fw/fine/result.json ] && [ ! -e fw/broken/result.json ] || fail "failed point: result files"
grep -q "^| broken | failed |" fw/table.md && grep -q "^| fine | finished |" fw/table.md || { cat fw/table.md; fail "failed row"; }
echo "ok: a failing point is reported with its log's end, the next one runs, exit 1"
# --only: a point this machine cannot run is passed over, not failed: it stays pending in the
# table, the selected one runs, exit 0. A name that is no point of the file: exit 2, nothing run.
cp f.sweep o.sweep  # a sweep file of its own: f.csv, beside f.sweep, has both points already
"${SWEEP[@]}" o.sweep --out ow --only fine > o.log 2>&1 || { cat o.log; fail "--only fine: exit $?"; }
grep -q "point broken: not among --only's, passed over" o.log && grep -q "all 1 selected points finished" o.log \
  || { cat o.log; fail "--only: messages"; }
[ -e ow/fine/result.json ] && [ ! -e ow/broken ] || fail "--only: ran the wrong points"
grep -q "^| broken | pending |" ow/table.md && grep -q "^| fine | finished |" ow/table.md || { cat ow/table.md; fail "--only: table"; }
"${SWEEP[@]}" o.sweep --out ow2 --only fine,nosuch > o2.log 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "sweep.py: error: --only: o.sweep has no point named 'nosuch' (its points: broken, fine)" o2.log \
  || { cat o2.log; fail "--only with an unknown point: exit $rc"; }
[ ! -e ow2 ] || fail "--only with an unknown point wrote ow2"
"${SWEEP[@]}" o.sweep --out ow3 --only , > o3.log 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "sweep.py: error: --only: no point named (expected NAME\[,NAME...\])" o3.log \
  || { cat o3.log; fail "--only with no name: exit $rc"; }
[ ! -e ow3 ] || fail "--only with no name wrote ow3"
echo "ok: --only runs the named points, passes over the others (pending), refuses an unknown name"
# --only keeps what another machine recorded of the points it passes over: o.csv (beside o.sweep)
# now has fine finished and broken pending; as if another machine had stopped broken at update 7:
edit_row() {  # edit_row CSV POINT KEY=VALUE...: set fields of one row of a committed table
  "$python" - "$@" <<'PY'
import csv, sys
path, point, changes = sys.argv[1], sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:])
with open(path, newline="") as f:
    rows = list(csv.DictReader(f))
for row in rows:
    if row["point"] == point:
        row.update(changes)
with open(path, "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
PY
}
edit_row o.csv broken status=interrupted updates=7 "cpu=another CPU"
cp o.csv o_before.csv
"${SWEEP[@]}" o.sweep --out ow4 --only fine > o4.log 2>&1 || { cat o4.log; fail "--only fine beside a committed table: exit $?"; }
grep -q "point fine: finished in o.csv" o4.log && [ ! -e ow4/fine ] || { cat o4.log; fail "--only: a committed finished point trained again"; }
cmp -s o.csv o_before.csv || { diff o_before.csv o.csv; fail "--only: another machine's rows changed"; }
grep -q "^| broken | interrupted |" ow4/table.md || { cat ow4/table.md; fail "--only: the interrupted row is gone"; }
echo "ok: --only keeps another machine's interrupted row of a point it passes over, and its finished one"
# A committed finished point that OUT holds a start of (as a run this CPU refused leaves): skipped,
# not trained again, its row as committed.
mkdir -p ow5/fine && cp ow/fine/sweep_point.json ow5/fine/
"${SWEEP[@]}" o.sweep --out ow5 --only fine > o5.log 2>&1 || { cat o5.log; fail "--only fine with a start in OUT: exit $?"; }
grep -q "point fine: finished in o.csv" o5.log && [ ! -e ow5/fine/metrics.jsonl ] \
  || { cat o5.log; fail "a committed finished point with a start in OUT was trained again"; }
cmp -s o.csv o_before.csv || { diff o_before.csv o.csv; fail "the committed finished row changed"; }
echo "ok: a committed finished point is not trained again where OUT holds a start of it"
# A point record of the wrong shape: refused like unreadable JSON, before anything runs.
for bad in '[1]' '{"config": "c.yaml", "overrides": 5}'; do
  mkdir -p ow7/fine && echo "$bad" > ow7/fine/sweep_point.json
  "${SWEEP[@]}" o.sweep --out ow7 --only fine --dry-run > o7.log 2>&1; rc=$?
  [ $rc = 2 ] && grep -q "ow7/fine/sweep_point.json: unreadable" o7.log && [ "$(grep -c . o7.log)" = 1 ] \
    || { cat o7.log; fail "sweep_point.json $bad: exit $rc"; }
  [ "$(cat ow7/fine/sweep_point.json)" = "$bad" ] || fail "sweep_point.json $bad was changed"
done
echo "ok: a sweep_point.json of the wrong shape is refused: $(cat o7.log)"
# An unfinished committed row made with other overrides than the sweep file gives now (the point
# was revised before it started): pending.
edit_row o.csv broken "overrides=train.seed=9"
"${SWEEP[@]}" o.sweep --out ow6 --only fine > o6.log 2>&1 || { cat o6.log; fail "--only fine, revised point: exit $?"; }
grep -q "^broken,pending," o.csv || { cat o.csv; fail "an unfinished row of other settings was kept"; }
echo "ok: an unfinished committed row of other settings becomes pending"
# Training ended but no result.json (as if stopped during evaluation): evaluated again, not trained.
rm fw/fine/result.json
starts=$(grep -c '"event":"start"' fw/fine/metrics.jsonl)
"${SWEEP[@]}" f.sweep --out fw > f2.log 2>&1
grep -q "point fine: evaluating on val" f2.log && ! grep -q "point fine: training" f2.log || { cat f2.log; fail "re-evaluation"; }
[ -e fw/fine/result.json ] && [ "$(grep -c '"event":"start"' fw/fine/metrics.jsonl)" = "$starts" ] || fail "re-evaluation trained again"
echo "ok: a point whose training had ended is only evaluated again"

# --- Bad sweep files: exit 2, one message with FILE:LINE, no output directory.
bad() {  # bad WHAT NEEDLE TEXT
  printf '%b' "$3" > bad.sweep
  "${SWEEP[@]}" bad.sweep --out badout > bad.out 2> bad.err; rc=$?
  [ $rc -eq 2 ] || { cat bad.err; fail "$1: exit $rc, expected 2"; }
  [ "$(wc -l < bad.err)" -eq 1 ] && grep -qF -- "sweep.py: error: bad.sweep:$2" bad.err || { cat bad.err; fail "$1: message"; }
  [ ! -e badout ] || fail "$1: wrote badout"
  echo "ok: $1 -> $(cat bad.err)"
}
bad "unknown directive" "2: unknown directive 'pont'" 'config c.yaml\npont a train.max_updates=5\n'
bad "duplicate point" "3: point 'a' is already defined at line 2" \
  'config c.yaml\npoint a train.max_updates=5\npoint a train.max_updates=6\n'
bad "point without budget" "3: point 'b' has no budget" \
  'config c.yaml\npoint a train.max_updates=5\npoint b schedule.lr=0.1 train.max_updates=0\n'
bad "missing config" "1: config file 'nope.yaml' does not exist" 'config nope.yaml\npoint a train.max_updates=5\n'
bad "unknown config key" "2: point 'a': train: error: unknown config key 'model.d_modl'" \
  'config c.yaml\npoint a train.max_updates=5 model.d_modl=8\n'
# A committed table of another version (no config column) beside the sweep file: refused, exit 2,
# the table untouched and nothing run.
printf 'config c.yaml\npoint a train.max_updates=5\n' > old.sweep
printf 'point,status,overrides\na,finished,\n' > old.csv
cp old.csv old_before.csv
"${SWEEP[@]}" old.sweep --out oldout > old.out 2> old.err; rc=$?
[ $rc -eq 2 ] && grep -q "sweep.py: error: old.csv: not a sweep table of this version (no column" old.err \
  || { cat old.err; fail "old committed table: exit $rc"; }
cmp -s old.csv old_before.csv && [ ! -e oldout ] || fail "old committed table: something was written"
echo "ok: a committed table of another version -> $(cat old.err)"

# --- A multilingual base config (data.directions): each point evaluated direction by direction
# (evaluate --direction D into val.D.hyp, lc-tok against raw/val.<D's target>); the table's val
# BLEU and lc-tok are the means over the directions, beside a column of each direction's BLEU,
# which equal evaluate --all-directions'. A point that sets data.lang_tag gets shards of its own
# (multi2_*); one that sets data.sampling_temperature (training only) does not. The committed
# table, extra column and all, lets the sweep go on elsewhere. A bilingual table has no such column.
"$python" - <<'PY' || fail "a bilingual sweep's table gained a column"
header = "point,status,overrides,vocab_size,spm_model_type,updates,epochs,train_wall_s,tgt_tokens_per_s," \
         "best_valid_loss,best_valid_nll,val_bleu,val_lc_tok_bleu,cpu,config,common\n"
assert open("sw/table.csv").readline() == header and "by direction" not in open("sw/table.md").read()
PY
cat > m.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: mshards, vocab_size: 40, num_shards: 2, max_tokens: 300, directions: [de-en, en-de], lang_tag: source}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0}
schedule: {type: inverse_sqrt, lr: 0.005, warmup_updates: 10}
train: {threads: 1, log_interval: 50, validate_interval_updates: 100, save_interval_updates: 20, keep_last: 0, tensorboard: false}
YAML
"$PRE" --config m.yaml > /dev/null 2>&1 || fail "multilingual preprocess"
printf 'config m.yaml\ncommon train.max_updates=400\npoint src\npoint dec data.lang_tag=decoder\n%s\n' \
  'point t2 data.sampling_temperature=2' > m.sweep
"${SWEEP[@]}" m.sweep --out mw --shards mshards_own > m.log 2>&1 || { cat m.log; fail "multilingual sweep"; }
own=$(ls -d mshards_own/*) && [ "$(echo "$own" | wc -l)" = 1 ] || fail "multilingual: expected one shard directory: $own"
case $own in mshards_own/multi2_unigram40_*) ;; *) fail "multilingual shard directory name: $own" ;; esac
grep -q "point dec: training: .* data.shard_dir=$own train.save_dir=mw/dec" m.log || { cat m.log; fail "dec not on $own"; }
grep "point \(src\|t2\): training:" m.log | grep -q "data.shard_dir" && fail "src or t2 given shards of their own"
"$EVAL" --config m.yaml train.max_updates=400 data.lang_tag=decoder data.shard_dir="$own" train.save_dir=mw/dec \
  --checkpoint mw/dec/averaged.pt --split val --beam 5 --all-directions > m_all.txt 2> /dev/null || fail "evaluate --all-directions"
"$python" - "$root/tools/score_lc_tok.py" <<'PY' || fail "multilingual points: files and table"
import csv, json, os, subprocess, sys
scorer, directions = sys.argv[1], ["de-en", "en-de"]
rows = {r["point"]: r for r in csv.DictReader(open("m.csv"))}
assert list(rows) == ["src", "dec", "t2"] and all(r["status"] == "finished" for r in rows.values()), rows
for p, row in rows.items():
    result = json.load(open(f"mw/{p}/result.json"))
    assert list(result["directions"]) == directions and not os.path.exists(f"mw/{p}/val.hyp"), (p, result)
    bleu, lc_tok = [], []
    for d in directions:
        scores = result["directions"][d]
        assert os.path.getsize(f"mw/{p}/val.{d}.hyp") > 0, (p, d)
        assert scores["val_bleu"] == float(open(f"mw/{p}/evaluate.{d}.out").readline().split()[2]), (p, d, scores)
        if os.path.exists(scorer):
            out = subprocess.run([sys.executable, scorer, "--hyp", f"mw/{p}/val.{d}.hyp", "--ref", f"raw/val.{d[3:]}",
                                  "--lang", d[3:]], capture_output=True, text=True, check=True).stdout
            assert scores["val_lc_tok_bleu"] == float(out.split()[2]), (p, d, scores, out)
        bleu.append(scores["val_bleu"])
        lc_tok.append(scores["val_lc_tok_bleu"])
    assert abs(float(row["val_bleu"]) - sum(bleu) / 2) < 1e-4, (p, row["val_bleu"], bleu)
    assert row["val_bleu_by_direction"] == f"de-en {bleu[0]:.2f}, en-de {bleu[1]:.2f}", row
    if os.path.exists(scorer):
        assert abs(float(row["val_lc_tok_bleu"]) - sum(lc_tok) / 2) < 1e-4, (p, row["val_lc_tok_bleu"], lc_tok)
    print(f"ok: multilingual row {p}: val BLEU {row['val_bleu']} = mean of {row['val_bleu_by_direction']}; "
          f"lc-tok {row['val_lc_tok_bleu']} = mean of {lc_tok}")
table = {l.split()[0]: float(l.split()[1]) for l in open("m_all.txt") if l.split()[0] in directions + ["mean"]}
dec = json.load(open("mw/dec/result.json"))["directions"]
assert {d: dec[d]["val_bleu"] for d in directions} == {d: table[d] for d in directions}, (dec, table)
assert abs(float(rows["dec"]["val_bleu"]) - table["mean"]) <= 0.005, (rows["dec"]["val_bleu"], table)
md = open("m.md").read()
assert "| val BLEU (avg, beam 5) | val BLEU by direction | val lc-tok BLEU |" in md, md
assert f"| {float(rows['dec']['val_bleu']):.2f} | {rows['dec']['val_bleu_by_direction']} |" in md, md
print(f"ok: point dec's directions as evaluate --all-directions gives them: {table}")
PY
# tools/tune_decoding.py on the multilingual point dec: each setting decoded in both directions;
# the last5 / beam 5 / lenpen 1 row is the sweep's own evaluation (its average of the last 5).
"$python" "$root/tools/tune_decoding.py" --build "$build" m.sweep dec --out mw --shards mshards_own --checkpoints last5 \
  --beams 5 --lenpens 1.0,1.4 > m_tune.md 2> m_tune.log || { cat m_tune.log; fail "tune_decoding of a multilingual point"; }
"$python" - <<'PY' || { cat m_tune.md; fail "tune_decoding of a multilingual point: rows against sacreBLEU and the sweep"; }
import json, re, sacrebleu
refs = {d: open(f"raw/val.{d[3:]}").read().splitlines() for d in ("de-en", "en-de")}
rows = [[c.strip().strip("*") for c in l.strip("|\n").split("|")] for l in open("m_tune.md") if re.match(r"\| \**last5", l)]
assert len(rows) == 2, rows
for ck, beam, lp, bleu, lc_tok, by_direction in rows:
    theirs = {d: sacrebleu.corpus_bleu(open(f"mw/dec/decoding/{ck}_b{beam}_lp{float(lp):g}.{d}.hyp").read().splitlines(),
                                       [ref]).score for d, ref in refs.items()}
    assert by_direction == ", ".join(f"{d} {s:.2f}" for d, s in theirs.items()), (by_direction, theirs)
    assert abs(float(bleu) - sum(theirs.values()) / 2) <= 0.01, (bleu, theirs)
sweep = json.load(open("mw/dec/result.json"))
assert rows[0][5] == ", ".join(f"{d} {s['val_bleu']:.2f}" for d, s in sweep["directions"].items()), (rows[0], sweep)
print(f"ok: tune_decoding on the multilingual point: each direction equals sacreBLEU, the BLEU their mean, "
      f"and last5 / beam 5 / lenpen 1 is the sweep's row ({rows[0][5]})")
PY
cp m.csv m_before.csv
"${SWEEP[@]}" m.sweep --out mw_elsewhere --shards mshards_own > m2.log 2>&1 || { cat m2.log; fail "multilingual sweep elsewhere"; }
[ "$(grep -c ": finished in m.csv" m2.log)" = 3 ] && [ ! -e mw_elsewhere/src ] && cmp -s m.csv m_before.csv \
  || { cat m2.log; diff m_before.csv m.csv; fail "multilingual sweep elsewhere: points run again or rows changed"; }
echo "ok: a multilingual sweep with an empty --out skips its committed points, the per-direction column unchanged"
echo "sweep: all checks passed"
