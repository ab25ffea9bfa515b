#!/usr/bin/env bash
# tools/sweep.py --jobs 2 against the same sweep one point at a time (--jobs 1), on the toy
# corpus: 2 jobs == 1 job (every point's val.hyp, best validation loss and last.pt identical);
# each job's train runs pinned to its own CPU, and two points train at once; two points with
# the same data settings preprocess their shards once; a SIGTERM stops both running points
# (exit 143, each train checkpointed) and the rerun finishes them; the sweep SIGKILLed leaves no
# train running (each stops with a checkpoint); --jobs 0 and more jobs than CPUs are refused
# (exit 2, nothing written).
#   sweep_jobs_test.sh BUILD_DIR PYTHON
set -uo pipefail
build=$(cd "$1" && pwd) python=$2  # absolute: job_env.sh moves to a scratch directory
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"
cpus=$("$python" -c 'import os; print(len(os.sched_getaffinity(0)))')
[ "$cpus" -ge 2 ] || { echo "SKIP: the test may use $cpus CPU; 2 jobs need 2"; exit 77; }

"$python" "$here/make_toy_corpus.py" raw 150
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 2, max_tokens: 300}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.1}
schedule: {type: inverse_sqrt, lr: 0.002, warmup_updates: 10}
train: {threads: 1, log_interval: 10, validate_interval_updates: 20, save_interval_updates: 20, keep_last: 0, tensorboard: false}
YAML
"$PRE" --config c.yaml > /dev/null 2>&1 || fail preprocess
cat > s.sweep <<'EOF'
config c.yaml
common train.max_updates=100
point a schedule.lr=0.005 train.max_updates=400
point b schedule.lr=0.003 train.max_updates=400
point c data.vocab_size=36
point d data.vocab_size=36 schedule.lr=0.003
EOF

# A build directory whose train records the CPUs it may run on, then becomes the real train.
mkdir -p fake/trainer fake/eval fake/data
ln -s "$build/trainer/average" fake/trainer/average
ln -s "$build/eval/evaluate" fake/eval/evaluate
cat > fake/data/preprocess <<EOF
#!/usr/bin/env bash
echo "\$*" >> "$tmp/preprocesses.txt"; sleep 2  # long enough for a second job to try the same shards
exec "$build/data/preprocess" "\$@"
EOF
chmod +x fake/data/preprocess
cat > fake/trainer/train <<EOF
#!/usr/bin/env bash
case " \$* " in *" --resume "*) echo "\$(grep -o 'train.save_dir=[^ ]*' <<< "\$*") \$(awk '/^Cpus_allowed_list/ {print \$2}' /proc/\$\$/status)" >> "$tmp/trains.txt" ;; esac
exec "$build/trainer/train" "\$@"
EOF
chmod +x fake/trainer/train

# --- One point at a time: the reference.
"$python" "$root/tools/sweep.py" s.sweep --build "$build" --out one --shards shards1 > one.log 2>&1 \
  || { cat one.log; fail "sweep with --jobs 1"; }

# --- Two jobs, stopped by SIGTERM once a and b have both written update_20.pt.
cp s.sweep s2.sweep  # its own committed table (s2.csv): the two runs must not share one
"$python" "$root/tools/sweep.py" s2.sweep --build fake --out two --shards shards2 --jobs 2 > two1.log 2>&1 &
pid=$!
for _ in $(seq 1 1200); do [ -e two/a/update_20.pt ] && [ -e two/b/update_20.pt ] && break; sleep 0.05; done
[ -e two/a/update_20.pt ] && [ -e two/b/update_20.pt ] || { cat two1.log; fail "a and b never both wrote update_20.pt"; }
kill -TERM $pid; wait $pid; rc=$?
[ $rc -eq 143 ] || { cat two1.log; fail "--jobs 2 stopped by SIGTERM: exit $rc, expected 143"; }
for p in a b; do
  grep -q "stopped by signal 15 after update" two/$p/train.out || { tail two/$p/train.out; fail "$p's train did not get the SIGTERM"; }
  [ ! -e two/$p/result.json ] || fail "point $p finished before the SIGTERM: the test lost its race"
done
grep -q "stopped by signal 15 during point a, b; they are not finished" two1.log || { cat two1.log; fail "stop message"; }
[ ! -e two/c ] && [ ! -e two/d ] || fail "c or d started after the SIGTERM"
"$python" - <<'PY' || fail "table after the stop"
import csv
status = {r["point"]: r["status"] for r in csv.DictReader(open("two/table.csv"))}
assert status == {"a": "interrupted", "b": "interrupted", "c": "pending", "d": "pending"}, status
PY
echo "ok: SIGTERM with 2 jobs: exit 143, a and b both stopped with a checkpoint, c and d not started"

"$python" "$root/tools/sweep.py" s2.sweep --build fake --out two --shards shards2 --jobs 2 > two2.log 2>&1 \
  || { cat two2.log; fail "rerun with --jobs 2"; }
grep -q "4 points into two on .*, 2 at once on CPUs" two2.log || { cat two2.log; fail "no jobs line"; }

# --- 2 jobs == 1 job, point by point.
for p in a b c d; do
  cmp -s one/$p/val.hyp two/$p/val.hyp || fail "point $p: val.hyp of 2 jobs differs from 1 job's"
  same one/$p/last.pt two/$p/last.pt > /dev/null
done
"$python" - <<'PY' || fail "tables of 1 and 2 jobs"
import csv
one, two = ({r["point"]: r for r in csv.DictReader(open(f"{d}/table.csv"))} for d in ("one", "two"))
for p in "abcd":
    assert one[p]["status"] == two[p]["status"] == "finished", (one[p], two[p])
    for key in ("updates", "best_valid_loss", "best_valid_nll", "val_bleu", "vocab_size"):
        assert one[p][key] == two[p][key], (p, key, one[p][key], two[p][key])
PY
echo "ok: 2 jobs == 1 job: val.hyp, last.pt and the table's loss, nll and BLEU of a, b, c, d identical"

# --- Pinning and overlap: each training process on one CPU of its own job's.
"$python" - "$tmp/trains.txt" <<'PY' || fail "pinning"
import os, sys
cpus = sorted(os.sched_getaffinity(0))
size = len(cpus) // 2
slices = {",".join(map(str, cpus[:size])), ",".join(map(str, cpus[size:2 * size]))}
def expand(text):  # "0-1,3" -> "0,1,3"
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return ",".join(map(str, out))
runs = [line.split() for line in open(sys.argv[1])]
seen = {}
for save_dir, allowed in runs:
    assert expand(allowed) in slices, (save_dir, allowed, slices)
    seen.setdefault(save_dir.split("/")[-1], set()).add(expand(allowed))
assert sorted(seen) == ["a", "b", "c", "d"], seen
first_a, first_b = (next(expand(a) for s, a in runs if s.endswith("/" + p)) for p in "ab")
assert first_a != first_b, ("a and b trained at once on the same CPUs", first_a)
print(f"ok: {len(runs)} train processes, each on one job's CPUs ({' / '.join(sorted(slices))}); a on {first_a}, b on {first_b}")
PY
# a and b trained at once: both started before either stopped (the first run's log).
started=$(grep -c "point [ab]: training:" two1.log)
[ "$started" -eq 2 ] || { cat two1.log; fail "a and b did not both start training in the first run"; }

# --- Two points of the same data settings started at once (the 2 jobs' first points): one
# preprocess (which takes 2 s here), the other point waits for it and trains on its shards.
rm -f preprocesses.txt
printf 'config c.yaml\ncommon train.max_updates=100\npoint c data.vocab_size=36\npoint d data.vocab_size=36 schedule.lr=0.003\n' > s4.sweep
"$python" "$root/tools/sweep.py" s4.sweep --build fake --out same --shards shards4 --jobs 2 > same.log 2>&1 \
  || { cat same.log; fail "c and d at once"; }
made=$(wc -l < preprocesses.txt)
[ "$made" -eq 1 ] || { cat preprocesses.txt; fail "c and d, started at once, preprocessed $made times, expected once"; }
[ "$(ls -d shards4/*/ | wc -l)" -eq 1 ] || fail "shards4 should hold one shard directory"
cmp -s same/c/val.hyp one/c/val.hyp && cmp -s same/d/val.hyp one/d/val.hyp || fail "c and d at once differ from one job's"
echo "ok: c and d (same data settings) started at once: one preprocess, the other waited; val.hyp as one job's"

# --- The sweep killed (SIGKILL) while two jobs train: each train gets SIGTERM from the death of
# the job thread that started it (PR_SET_PDEATHSIG), checkpoints and exits; none runs on.
cp s.sweep s3.sweep
"$python" "$root/tools/sweep.py" s3.sweep --build "$build" --out killed --shards shards3 --jobs 2 > killed.log 2>&1 &
pid=$!
for _ in $(seq 1 1200); do [ -e killed/a/update_20.pt ] && [ -e killed/b/update_20.pt ] && break; sleep 0.05; done
[ -e killed/a/update_20.pt ] && [ -e killed/b/update_20.pt ] || { cat killed.log; fail "killed: a and b never both wrote update_20.pt"; }
kill -KILL $pid; wait $pid 2> /dev/null
for p in a b; do
  for _ in $(seq 1 200); do grep -q "stopped by signal 15 after update" killed/$p/train.out && break; sleep 0.05; done
  grep -q "stopped by signal 15 after update" killed/$p/train.out || { tail killed/$p/train.out; fail "$p's train got no SIGTERM within 10 s of the sweep's death"; }
done
for _ in $(seq 1 200); do pgrep -f "train.save_dir=killed/" > /dev/null || break; sleep 0.05; done
! pgrep -f "train.save_dir=killed/" > /dev/null || fail "a train of the killed sweep still runs"
echo "ok: the sweep SIGKILLed with 2 jobs training: both trains stopped with a checkpoint, none left running"

# --- Bad --jobs: exit 2, one message, nothing written.
for bad in 0 $((cpus + 1)); do
  "$python" "$root/tools/sweep.py" s.sweep --build "$build" --out bad$bad --jobs $bad > bad.out 2> bad.err; rc=$?
  [ $rc -eq 2 ] || { cat bad.err; fail "--jobs $bad: exit $rc, expected 2"; }
  [ "$(wc -l < bad.err)" -eq 1 ] && grep -q "^sweep.py: error: --jobs $bad: " bad.err || { cat bad.err; fail "--jobs $bad: message"; }
  [ ! -e bad$bad ] || fail "--jobs $bad wrote bad$bad"
  echo "ok: --jobs $bad -> $(cat bad.err)"
done
echo "PASS"
