#!/usr/bin/env bash
# translate --input F --output O as a job (eval/translation_job.h) on the toy corpus:
# - the job's output equals translate's stdout for the same input (beam, and seeded sampling);
# - mpirun -np 2 gives the output of -np 1, byte for byte, for beam and for seeded sampling;
# - a job killed (SIGKILL, SIGTERM, one rank lost under mpirun) and run again continues from its
#   finished chunks, and its output is byte-identical to an uninterrupted run's;
# - the output appears only when complete; the parts directory goes;
# - bad input (an empty line, CRLF, invalid UTF-8, a 10,000-character line, an existing
#   output, a changed input on resume, sampling with a beam, a temperature <= 0) gets one
#   line, exit 2, and leaves existing files as they were.
#   translation_job_jobs.sh BUILD_DIR PYTHON
set -uo pipefail
build=$(cd "$1" && pwd) python=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"  # PRE, TRAIN, MPIRUN, a scratch working directory, fail
TRANSLATE=$build/eval/translate
"$python" "$here/make_toy_corpus.py" raw 300
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 1, max_tokens: 200}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.0, pre_norm: true}
schedule: {lr: 0.005, warmup_updates: 10}
train: {max_updates: 40, threads: 1, validate_interval_updates: 40, save_dir: run, tensorboard: false}
eval: {beam: 4, max_tokens: 64}
YAML
"$PRE" --config c.yaml > /dev/null 2>&1 || fail preprocess
"$TRAIN" --config c.yaml > train.log 2>&1 || { tail train.log; fail train; }
cat raw/train.de raw/val.de > mono.de  # 320 lines
T=("$TRANSLATE" --config c.yaml --checkpoint run/last.pt)
SAMPLE=(--sampling topk 0 --temperature 1.3 --seed 5)

# One process: the job equals stdout mode; sampling with a seed repeats, another seed differs.
"${T[@]}" --input mono.de > stdout_beam.txt || fail "translate to stdout"
"${T[@]}" --input mono.de --output beam1.txt --chunk-lines 50 2> job.log || { cat job.log; fail "the job"; }
grep -q "320 lines written to beam1.txt (0 from an earlier run)" job.log || { cat job.log; fail "the job's summary"; }
grep -q "sentences/s" job.log || fail "no sentences/s"
cmp stdout_beam.txt beam1.txt || fail "the job's output differs from translate's stdout"
[ ! -e beam1.txt.parts ] || fail "the parts directory was left behind"
"${T[@]}" --input mono.de "${SAMPLE[@]}" > stdout_sample.txt || fail "sampling to stdout"
"${T[@]}" --input mono.de "${SAMPLE[@]}" --output sample1.txt --chunk-lines 50 2> /dev/null || fail "sampling job"
cmp stdout_sample.txt sample1.txt || fail "the sampled job differs from sampling to stdout (other batches)"
"${T[@]}" --input mono.de --sampling topk 0 --temperature 1.3 --seed 6 > other_seed.txt || fail "seed 6"
cmp -s stdout_sample.txt other_seed.txt && fail "seed 5 and seed 6 drew the same 320 translations"
cmp -s stdout_sample.txt stdout_beam.txt && fail "sampling gave the beam's translations"
echo "ok: one process: job == stdout for beam and for seeded sampling; another seed draws other lines"

# Two ranks == one rank.
"${MPIRUN[@]}" -np 2 "${T[@]}" --input mono.de --output beam2.txt --chunk-lines 50 2> np2.log ||
  { cat np2.log; fail "-np 2 beam"; }
cmp beam1.txt beam2.txt || fail "-np 2 beam output differs from -np 1"
"${MPIRUN[@]}" -np 2 "${T[@]}" --input mono.de "${SAMPLE[@]}" --output sample2.txt --chunk-lines 50 2> np2s.log ||
  { cat np2s.log; fail "-np 2 sampling"; }
cmp sample1.txt sample2.txt || fail "-np 2 sampled output differs from -np 1"
echo "ok: -np 2 == -np 1, beam and seeded sampling"

# Interrupted, then resumed: byte-identical to the uninterrupted run. The chunks are small and
# the job is stopped once some (not all) are on disk.
wait_for_chunks() {  # wait_for_chunks DIR N: until DIR holds N chunk files (at most ~60 s)
  for _ in $(seq 600); do
    [ "$(find "$1" -name 'chunk_*.txt' 2> /dev/null | wc -l)" -ge "$2" ] && return 0
    sleep 0.1
  done
  return 1
}
interrupt_and_resume() {  # interrupt_and_resume NAME SIGNAL NP REFERENCE [args...]
  local name=$1 sig=$2 np=$3 ref=$4; shift 4
  local run=("${T[@]}" --input mono.de --output "$name.txt" --chunk-lines 4 "$@")
  [ "$np" = 1 ] || run=("${MPIRUN[@]}" -np "$np" "${run[@]}")
  "${run[@]}" > /dev/null 2> "$name.first.log" &
  local pid=$!
  wait_for_chunks "$name.txt.parts" 6 || { kill -9 $pid; fail "$name: no chunks appeared"; }
  if [ "$sig" = LOSTRANK ]; then
    pkill -9 -f -n -- "--output $name.txt" || fail "$name: no rank to kill"
  else
    kill -"$sig" $pid
  fi
  wait $pid && fail "$name: the interrupted job exited 0"
  [ ! -e "$name.txt" ] || fail "$name: an output appeared although the job was stopped"
  local kept
  kept=$(find "$name.txt.parts" -name 'chunk_*.txt' | wc -l)
  [ "$kept" -lt 80 ] || fail "$name: the job had finished all 80 chunks before it was stopped; nothing to resume"
  "${run[@]}" > /dev/null 2> "$name.second.log" || { cat "$name.second.log"; fail "$name: the resumed job"; }
  grep -q "from an earlier run" "$name.second.log" || fail "$name: no summary"
  grep -q "(0 from an earlier run)" "$name.second.log" && fail "$name: the resumed job started over"
  cmp "$ref" "$name.txt" || fail "$name: the resumed output differs from the uninterrupted one"
  echo "ok: $name: stopped with $kept of 80 chunks done; resumed to the uninterrupted output, byte for byte"
}
interrupt_and_resume kill9 KILL 1 beam1.txt
interrupt_and_resume term TERM 1 sample1.txt "${SAMPLE[@]}"
interrupt_and_resume lost_rank LOSTRANK 2 beam1.txt

# Bad input: exit 2, one line naming what and where, nothing written.
refuse() {  # refuse WHAT PATTERN ARGS...
  local what=$1 pattern=$2; shift 2
  "${T[@]}" "$@" > out.txt 2> err.txt; local rc=$?
  [ $rc = 2 ] && grep -q -- "$pattern" err.txt && [ "$(grep -c . err.txt)" = 1 ] ||
    { cat err.txt; fail "$what: exit $rc"; }
  echo "ok: $what refused: $(head -c 220 err.txt)"
}
printf 'ein Hund .\n\nzwei Kinder .\n' > empty_line.de
refuse "an empty line" "empty_line.de: line 2 is empty" --input empty_line.de --output o.txt
printf 'ein Hund .\r\nzwei Kinder .\r\n' > crlf.de
refuse "CRLF" 'crlf.de: line 1 ends in "\\r\\n"' --input crlf.de --output o.txt
printf 'ein Hund .\nzwei \xff Kinder .\n' > bad_utf8.de
refuse "invalid UTF-8" "bad_utf8.de: line 2 is not valid UTF-8 (byte 6 of the line)" --input bad_utf8.de --output o.txt
{ echo "ein Hund ."; "$python" -c "print(' '.join(['Hund'] * 2000))"; } > long.de
refuse "a 10,000-character line" "long.de: line 2 is .* pieces long (9999 characters), more than the model's" \
  --input long.de --output o.txt
[ ! -e o.txt ] && [ ! -e o.txt.parts ] || fail "a refused input left o.txt or its parts behind"
echo "kept" > exists.txt
refuse "an existing output" "exists.txt: exists" --input mono.de --output exists.txt
[ "$(cat exists.txt)" = kept ] || fail "the existing output was changed"
refuse "sampling with a beam" "eval.beam.*must be 1 with eval.sampling" --input mono.de --sampling topk 5 --beam 4
refuse "temperature 0" "eval.temperature.*must be > 0" --input mono.de --sampling full --temperature 0
refuse "a negative temperature" "eval.temperature.*must be > 0" --input mono.de --sampling full --temperature -1
refuse "an unknown --sampling" "expected 'full' or 'topk K'" --input mono.de --sampling nucleus
refuse "--output without --input" "--output needs --input" --output o.txt < mono.de
# A usage error: CLI11's line naming the flag, then its "Run with --help" hint.
"${T[@]}" --input mono.de --output o.txt --chunk-lines 0 > out.txt 2> err.txt; rc=$?
[ $rc = 2 ] && head -1 err.txt | grep -q -- "--chunk-lines: Value 0 not in range 1" && [ ! -e o.txt ] ||
  { cat err.txt; fail "--chunk-lines 0: exit $rc"; }
echo "ok: --chunk-lines 0 refused: $(head -1 err.txt)"
# A resume whose input changed since the first run: refused, the finished chunks kept.
cp mono.de changing.de
"${T[@]}" --input changing.de --output changing.txt --chunk-lines 4 > /dev/null 2>&1 &
pid=$!
wait_for_chunks changing.txt.parts 3 || fail "changing: no chunks"
kill -9 $pid; wait $pid 2> /dev/null
before=$(cd changing.txt.parts && sha256sum ./* | sort)
refuse "a resume with another beam" "cannot resume: a decoding setting changed (beam: was 4, now 2)" \
  --input changing.de --output changing.txt --chunk-lines 4 --beam 2
refuse "a resume with other chunks" "cannot resume: --chunk-lines changed (4 then, 8 now)" \
  --input changing.de --output changing.txt --chunk-lines 8
echo "ein neuer Satz ." >> changing.de
refuse "a resume whose input changed" "cannot resume: the input changing.de changed" \
  --input changing.de --output changing.txt --chunk-lines 4
[ "$before" = "$(cd changing.txt.parts && sha256sum ./* | sort)" ] || fail "the refused resume changed the parts"
[ ! -e changing.txt ] || fail "the refused resume wrote an output"
echo "ok: the refused resumes left the finished chunks as they were"
echo "PASS translation jobs"
