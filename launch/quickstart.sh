#!/usr/bin/env bash
# The main job on a fresh machine: install, build, preprocess Multi30k, train a recipe,
# average its last eval.average_last checkpoints (at most train.keep_last are kept), and score
# test_2016_flickr with beam search: detokenized sacreBLEU (evaluate) and the papers'
# lowercased, Moses-tokenized BLEU (tools/score_lc_tok.py).
#
#   bash launch/quickstart.sh [RAW_DIR]                              # 10-minute De->En recipe
#   CONFIG=configs/multi30k_de_en.yaml bash launch/quickstart.sh     # the 60-minute De->En recipe
#   CONFIG=configs/multi30k_en_de.yaml bash launch/quickstart.sh     # the 60-minute En->De recipe
#
# RAW_DIR defaults to ../shared/data/multi30k. A recipe's length is its update budget
# (train.max_updates in its config), so that it is the same model on every machine; README.md
# says how long each took here. RUN_DIR (default runs/<config name>) receives the checkpoints,
# train.log, metrics.jsonl and the test hypotheses; run again, it resumes the run there from
# its newest valid checkpoint. SHARD_DIR overrides the config's data.shard_dir. EXTRA="key=value
# ..." adds overrides (not train.save_dir or data.raw_dir: RUN_DIR and RAW_DIR set those).
# Relative paths are taken from the directory it is run in. SPLIT=val scores the validation set
# instead of test_2016_flickr (what a search compares; the test set is scored once per recipe).
#
# SEEDS="1 2 3" trains the recipe once per seed (train.seed=S, in RUN_DIR/seed<S>, each
# averaged as above) and scores the ensemble of the members (evaluate with one --checkpoint
# each: the mean of their probabilities), as fairseq's --path a:b:c or Marian's --models:
#   SEEDS="1 2 3" CONFIG=configs/multi30k_de_en_3h.yaml bash launch/quickstart.sh
# (the 3-hour De->En recipe; En->De's: configs/multi30k_en_de_3h.yaml, README.md).
# JOBS=N trains N members at once, each pinned to its own equal share of the CPUs this script
# may use (its affinity; `taskset -c` to narrow it) with train.threads set to that share's size,
# starting the next seed where one ends; each member's console goes to RUN_DIR/seed<S>/train.out.
# Two 1-thread processes use 2 cores better than one 2-thread one (no threads waiting for each
# other): bench/README.md, "Members at once", has the figures. A member that fails stops the
# others (SIGTERM: they write last.pt), and so does a SIGTERM or Ctrl-C to this script; run
# again, each resumes.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=launch/common.sh
source "$root/launch/common.sh"
help_requested_then_exit "${BASH_SOURCE[0]}" "$@"
raw=${1:-$root/../shared/data/multi30k}
config=${CONFIG:-$root/configs/quickstart_de_en.yaml}
[ -f "$config" ] || { echo "quickstart.sh: error: CONFIG '$config' is not a file" >&2; exit 2; }
# Words split at spaces, tabs and newlines alike (EXTRA may span lines), never globbed.
read -r -d '' -a seeds <<< "${SEEDS:-}" || true
read -r -d '' -a extra <<< "${EXTRA:-}" || true
for o in "${extra[@]}"; do
  case $o in
    train.save_dir=* | data.raw_dir=*)
      echo "quickstart.sh: error: EXTRA '$o': set RUN_DIR or give RAW_DIR instead (averaging and scoring read those)" >&2; exit 2 ;;
  esac
done
for seed in "${seeds[@]}"; do
  [[ $seed =~ ^[0-9]+$ ]] || { echo "quickstart.sh: error: SEEDS '${SEEDS}': '$seed' is not a non-negative integer" >&2; exit 2; }
done
if [ ${#seeds[@]} -gt 0 ] && [ "$(printf '%s\n' "${seeds[@]}" | sort -u | wc -l)" != "${#seeds[@]}" ]; then
  echo "quickstart.sh: error: SEEDS '${SEEDS}': a seed is given twice (members must differ)" >&2; exit 2
fi
split=${SPLIT:-test}
case $split in
  test) split_name=test_2016_flickr ;;
  val) split_name=val ;;
  *) echo "quickstart.sh: error: SPLIT '$split': expected val or test" >&2; exit 2 ;;
esac
jobs=${JOBS:-1}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "quickstart.sh: error: JOBS '$jobs': not a positive integer (the members trained at once)" >&2; exit 2; }
if [ "$jobs" -gt 1 ]; then
  [ "$jobs" -le ${#seeds[@]} ] ||
    { echo "quickstart.sh: error: JOBS '$jobs': more than the ${#seeds[@]} member(s) SEEDS gives (JOBS trains SEEDS' members at once)" >&2; exit 2; }
  cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)  # its affinity (nproc obeys those two)
  [ "$jobs" -le "$cpus" ] ||
    { echo "quickstart.sh: error: JOBS '$jobs': this script may use only $cpus CPU(s), fewer than one a member" >&2; exit 2; }
fi
[ -d "$raw" ] || { echo "quickstart.sh: error: raw data directory '$raw' does not exist (give Multi30k's as the first argument)" >&2; exit 2; }
[ -n "$(find "$raw/" -maxdepth 1 -name 'train.*' -print -quit)" ] ||
  { echo "quickstart.sh: error: raw data directory '$raw' has no train.<lang> files (Multi30k's layout: train, val, test_2016_flickr)" >&2; exit 2; }
# Absolute before the cd to the checkout below, so that they mean what they meant where run
# (overrides inside EXTRA are read from the checkout, as the configs' own paths are).
config=$(realpath -ms -- "$config") raw=$(realpath -ms -- "$raw")
name=$(basename "$config" .yaml)
run=$(realpath -ms -- "${RUN_DIR:-$root/runs/$name}")
shard_dir=${SHARD_DIR:+$(realpath -ms -- "$SHARD_DIR")}
load_build_env quickstart.sh "$root" "preprocess train average evaluate"  # only what it runs
b=$NMTRAIN_BUILD
cd "$root"
common=(data.raw_dir="$raw")
[ -n "$shard_dir" ] && common+=(data.shard_dir="$shard_dir")

echo "== preprocess $raw (config $config)"
"$b/data/preprocess" --config "$config" "${common[@]}" "${extra[@]}"
# member_command RUN_DIR OVERRIDE...: sets `cmd` to the command that trains the recipe into
# RUN_DIR. --resume auto: run again after a preemption or a kill, the quickstart continues the run
# in RUN_DIR from its newest valid checkpoint (fairseq's and Marian's habit) instead of starting over.
member_command() {
  local dir=$1; shift
  cmd=("$b/trainer/train" --config "$config" "${common[@]}" train.save_dir="$dir" "${extra[@]}" "$@" --resume auto)
}

# train_member RUN_DIR OVERRIDE...: trains as member_command says. train exits 0 also when a
# signal stopped it (last.pt written, for a supervisor to resume): its log's last line tells, and
# a run stopped before its budget ends the script (143) instead of being averaged and scored.
train_member() {
  local dir=$1
  member_command "$@"
  "${cmd[@]}"
  if tail -n 1 "$dir/train.log" | grep -qE "\| stopped (by signal|after update)"; then
    echo "quickstart.sh: training in $dir was stopped by a signal before its budget; run again to resume it" >&2
    exit 143
  fi
}

# average_member RUN_DIR: average its last eval.average_last checkpoints; sets `ckpt` to what
# evaluate should load.
average_member() {
  local dir=$1 n
  echo "== average the last checkpoints of $dir (up to eval.average_last = $average_last)"
  n=$(find "$dir" -maxdepth 1 -name 'update_*.pt' | wc -l)
  n=$(( n > average_last ? average_last : n ))
  ckpt=$dir/last.pt
  if [ "$n" -ge 2 ]; then
    "$b/trainer/average" --output "$dir/averaged.pt" --last "$n" "$dir"
    ckpt=$dir/averaged.pt
  fi
}

# stop_members: SIGTERM, once, to the members still training (each writes last.pt and stops;
# a second signal would stop train at once, without one).
stop_members() {
  [ -z "${members_stopped:-}" ] || return 0
  members_stopped=1
  [ ${#cpus_of[@]} = 0 ] || kill -TERM "${!cpus_of[@]}" 2> /dev/null || true
}

# train_members_at_once: SEEDS' members JOBS at a time, each on its own CPU slice (train.threads
# = the slice's size), console in RUN_DIR/seed<S>/train.out. The first member to fail, or a
# SIGTERM or Ctrl-C here, sends SIGTERM to the others (they write last.pt and stop) and ends the
# script, once they have stopped, with that member's exit status (143 or 130 for a signal).
train_members_at_once() {
  local -a free
  # The slices of tools/sweep.py --jobs: equal disjoint runs of the affinity's CPUs.
  mapfile -t free < <(PYTHONPATH=$root/tools "$NMTRAIN_VENV/bin/python" -c 'import sys
from sweeplib.jobs import cpu_slices, format_cpus
print(*map(format_cpus, cpu_slices(int(sys.argv[1]))), sep="\n")' "$jobs")
  declare -gA cpus_of=() seed_of=()  # global: the EXIT trap stops the members left on any exit
  local next=0 status=0 stopped_by="" pid rc cpus dir
  trap 'stopped_by=${stopped_by:-SIGTERM} status=143' TERM
  trap 'stopped_by=${stopped_by:-SIGINT} status=130' INT
  trap 'stop_members' EXIT
  while :; do
    while [ -z "$stopped_by" ] && [ "$next" -lt ${#seeds[@]} ] && [ ${#free[@]} -gt 0 ]; do
      cpus=${free[0]} free=("${free[@]:1}") dir=$run/seed${seeds[$next]}
      mkdir -p "$dir"
      echo "== train $name -> $dir on CPUs $cpus (log: $dir/train.log, console: $dir/train.out)"
      member_command "$dir" train.seed="${seeds[$next]}" train.threads="$(tr ',' '\n' <<< "$cpus" | wc -l)"
      taskset -c "$cpus" "${cmd[@]}" > "$dir/train.out" 2>&1 &
      cpus_of[$!]=$cpus seed_of[$!]=${seeds[$next]} next=$((next + 1))
    done
    [ ${#cpus_of[@]} -gt 0 ] || break
    pid="" rc=0
    wait -n -p pid "${!cpus_of[@]}" || rc=$?
    if [ -z "${pid:-}" ]; then  # a signal interrupted the wait (the trap set stopped_by): stop them all
      stop_members
      continue
    fi
    free+=("${cpus_of[$pid]}")
    if [ "$rc" != 0 ] && [ -z "$stopped_by" ]; then
      stopped_by="member seed ${seed_of[$pid]} (exit $rc)" status=$rc
      echo "quickstart.sh: error: member seed ${seed_of[$pid]} exited $rc; the end of $run/seed${seed_of[$pid]}/train.out:" >&2
      tail -n 5 "$run/seed${seed_of[$pid]}/train.out" >&2
    fi
    unset "cpus_of[$pid]" "seed_of[$pid]"
    [ -z "$stopped_by" ] || stop_members
  done
  trap - INT TERM EXIT
  if [ -n "$stopped_by" ]; then
    echo "quickstart.sh: stopped by $stopped_by; the members that were training wrote last.pt: run again to resume" >&2
    exit "$status"
  fi
}

resolved=$("$b/trainer/train" --config "$config" "${common[@]}" "${extra[@]}" --print-config)
tgt=$(sed -n 's/^  tgt_lang: "\(.*\)"$/\1/p' <<< "$resolved")
average_last=$(sed -n 's/^  average_last: \([0-9]*\)$/\1/p' <<< "$resolved")
checkpoints=()
if [ ${#seeds[@]} = 0 ]; then
  echo "== train $name -> $run (log: $run/train.log, metrics: $run/metrics.jsonl)"
  train_member "$run"
  average_member "$run"
  checkpoints=(--checkpoint "$ckpt")
else
  if [ "$jobs" -gt 1 ]; then
    train_members_at_once
  else
    for seed in "${seeds[@]}"; do
      echo "== train $name -> $run/seed$seed (log: $run/seed$seed/train.log, metrics: $run/seed$seed/metrics.jsonl)"
      train_member "$run/seed$seed" train.seed="$seed"
    done
  fi
  for seed in "${seeds[@]}"; do
    average_member "$run/seed$seed"
    checkpoints+=(--checkpoint "$ckpt")
  done
fi
# score DIRECTION_ARGS... : evaluate (sacreBLEU) and the lc-tok score of one direction's
# hypotheses; `tgt` and `hyp` name its target language and hypothesis file.
score() {
  echo "== evaluate ${checkpoints[*]} on $split_name $* (beam and length penalty: the config's eval section)"
  "$b/eval/evaluate" --config "$config" "${common[@]}" "${extra[@]}" "${checkpoints[@]}" --split "$split" --output "$hyp" "$@"
  echo "== the same hypotheses, lowercased and Moses-tokenized (as Multi30k papers score)"
  local ref=$raw/$split_name.$tgt
  [ -f "$ref" ] || ref=$ref.gz
  "$NMTRAIN_VENV/bin/python" "$root/tools/score_lc_tok.py" --hyp "$hyp" --ref "$ref" --lang "$tgt"
}
# A multilingual config (data.directions) is scored in each of its directions.
directions=$(sed -n 's/^  directions: \[\(.*\)\]$/\1/p' <<< "$resolved" | tr -d ' ' | tr ',' ' ')
hyps=()
if [ -z "$directions" ]; then
  hyp=$run/$split_name.hyp.$tgt
  score
  hyps+=("$hyp")
else
  for direction in $directions; do
    tgt=${direction#*-} hyp=$run/$split_name.hyp.$direction
    score --direction "$direction"
    hyps+=("$hyp")
  done
fi
echo "quickstart.sh: done: run directory $run; scored ${checkpoints[*]}; $split_name hypotheses in ${hyps[*]}"
