#!/usr/bin/env bash
# Bad input of the classes of issue 15 that are handled so far, each fed to the real
# executable: it must print one message naming what and where, exit 2 (bad input), and
# leave every existing file of the run byte for byte as it was (sha256 before and after).
#   bad_input_jobs.sh BUILD_DIR PYTHON
set -uo pipefail
build=$1 python=$2
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"
AVG=$build/trainer/average TRANS=$build/eval/translate
"$python" "$here/make_toy_corpus.py" raw 150
cat > c.yaml <<'YAML'
data: {raw_dir: raw, shard_dir: shards, vocab_size: 40, num_shards: 2, max_tokens: 120}
model: {d_model: 32, ffn_dim: 64, heads: 4, encoder_layers: 1, decoder_layers: 1, dropout: 0.1}
schedule: {type: inverse_sqrt, lr: 0.002, warmup_updates: 5}
train: {max_updates: 6, threads: 1, log_interval: 3, validate_interval_updates: 3, save_interval_updates: 3, save_dir: run}
YAML
"$PRE" --config c.yaml > /dev/null 2>&1 || fail preprocess
"$TRAIN" --config c.yaml > train.log 2>&1 || { cat train.log; fail "train"; }
"$EVAL" --config c.yaml --checkpoint run/last.pt --split test --beam 2 --output hyp.txt > /dev/null 2>&1 || fail evaluate

snap_paths=(run shards raw hyp.txt c.yaml)
snapshot() { find "${snap_paths[@]}" -type f ! -name .lock -print0 | sort -z | xargs -0 sha256sum; }
snapshot > before.sha256
checked=0
# refused NAME EXPECTED-TEXT COMMAND...: exit 2, the text in stderr, nothing changed.
refused() {
  local name=$1 want=$2; shift 2
  "$@" > out.txt 2> err.txt
  local rc=$?
  [ $rc = 2 ] || { cat err.txt; fail "$name: exit $rc, expected 2"; }
  grep -qF -- "$want" err.txt || { cat err.txt; fail "$name: message lacks '$want'"; }
  [ "$(grep -c . err.txt)" -le 3 ] || { cat err.txt; fail "$name: more than one message"; }
  snapshot | cmp -s - before.sha256 || { snapshot | diff - before.sha256; fail "$name: an existing file changed"; }
  echo "ok: $name: $(grep -F -- "$want" err.txt | head -1 | cut -c1-160)"
  checked=$((checked + 1))
}

# 1. Sizes that cannot fit: refused before allocating, naming the keys and both figures.
refused "train, d_model 65536" "the model does not fit: model.d_model = 65536, model.ffn_dim = 64" \
  "$TRAIN" --config c.yaml model.d_model=65536
grep -Eq "need at least [0-9.]+ GB \([0-9.]+ GB parameters, gradients and Adam state, [0-9.]+ GB activations\) but cpu has [0-9.]+ GB of memory" err.txt \
  || { cat err.txt; fail "the estimate's figures"; }
refused "evaluate, d_model 65536" "the model does not fit: model.d_model = 65536" \
  "$EVAL" --config c.yaml --checkpoint run/last.pt model.d_model=65536 --output hyp.txt
# ... counting the limits a cluster sets, not only physical memory: the address-space
# limit (ulimit -v) and the process's memory cgroup (SLURM, containers).
refused "train under ulimit -v 4000000, d_model 1024" "left under the address-space limit (ulimit -v)" \
  bash -c 'ulimit -v 4000000 && exec "$0" --config c.yaml model.d_model=1024 model.ffn_dim=4096 model.encoder_layers=6 model.decoder_layers=6' "$TRAIN"
grep -q "need at least 2.9 GB .* but cpu has [0-9.]* GB left under the address-space limit" err.txt || { cat err.txt; fail "ulimit -v: figures"; }
cg_parent=/sys/fs/cgroup/memory$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
cg=$cg_parent/nmtrain-test-$$
if mkdir "$cg" 2> /dev/null && echo 3000000000 > "$cg/memory.limit_in_bytes" 2> /dev/null; then
  refused "train in a 3 GB memory cgroup, d_model 1024" "left under its cgroup's memory limit ($cg/memory.limit_in_bytes)" \
    bash -c 'echo $$ > "$1/cgroup.procs" && exec "$0" --config c.yaml model.d_model=1024 model.ffn_dim=4096 model.encoder_layers=6 model.decoder_layers=6' "$TRAIN" "$cg"
  rmdir "$cg"
else
  rmdir "$cg" 2> /dev/null
  echo "skipped: no cgroup v1 memory controller to make a child in here (the ulimit -v case above runs everywhere)"
fi

# 3. YAML that says two things: a duplicate key, a duplicate section, with both lines.
printf 'data: {shard_dir: shards}\ntrain:\n  save_dir: run\n  seed: 3\n  seed: 4\n' > dup_key.yaml
refused "duplicate key" "config key 'train.seed' given twice: at dup_key.yaml:4 and at dup_key.yaml:5" \
  "$TRAIN" --config dup_key.yaml
printf 'train:\n  save_dir: run\nmodel:\n  d_model: 32\ntrain:\n  seed: 4\n' > dup_section.yaml
refused "duplicate section" "config section 'train' given twice: at dup_section.yaml:1 and at dup_section.yaml:5" \
  "$TRAIN" --config dup_section.yaml

# 5. Command-line values out of range, in every executable that takes one.
refused "evaluate --beam -1" "--beam" "$EVAL" --config c.yaml --checkpoint run/last.pt --beam -1 --output hyp.txt
refused "evaluate --beam 0" "--beam" "$EVAL" --config c.yaml --checkpoint run/last.pt --beam 0 --output hyp.txt
refused "evaluate --lenpen -1" "--lenpen: value -1 is not a finite number in [0, 100]" \
  "$EVAL" --config c.yaml --checkpoint run/last.pt --lenpen -1 --output hyp.txt
refused "evaluate --lenpen nan" "--lenpen: value nan is not a finite number in [0, 100]" \
  "$EVAL" --config c.yaml --checkpoint run/last.pt --lenpen nan --output hyp.txt
refused "evaluate --lenpen inf" "--lenpen: value inf is not a finite number" \
  "$EVAL" --config c.yaml --checkpoint run/last.pt --lenpen inf --output hyp.txt
refused "translate --beam -1" "--beam" "$TRANS" --config c.yaml --checkpoint run/last.pt --beam -1
refused "translate --nbest 0" "--nbest" "$TRANS" --config c.yaml --checkpoint run/last.pt --nbest 0
refused "average --last 0" "--last" "$AVG" --output avg.pt --last 0 run
refused "train --benchmark -3" "--benchmark" "$TRAIN" --config c.yaml --benchmark -3
refused "train --warmup -1" "--warmup" "$TRAIN" --config c.yaml --benchmark 2 --warmup -1

# The distributed keys added for multi-host jobs refuse values out of their range.
refused "dist.timeout_s 0" "config key 'dist.timeout_s' = '0.0' (command line 'dist.timeout_s=0'): must be >= 0.1" "$TRAIN" --config c.yaml dist.timeout_s=0
refused "dist.grad_dtype int8" "config key 'dist.grad_dtype' = 'int8'" "$TRAIN" --config c.yaml dist.grad_dtype=int8
refused "dist.overlap maybe" "config key 'dist.overlap' = 'maybe'" "$TRAIN" --config c.yaml dist.overlap=maybe
refused "debug.fp16_overflow_above -1" "config key 'debug.fp16_overflow_above' = '-1.0' (command line 'debug.fp16_overflow_above=-1'): must be >= 0" \
  "$TRAIN" --config c.yaml debug.fp16_overflow_above=-1
refused "train.precision fp8" "config key 'train.precision' = 'fp8'" "$TRAIN" --config c.yaml train.precision=fp8
refused "train.gemm blas" "config key 'train.gemm' = 'blas'" "$TRAIN" --config c.yaml train.gemm=blas
refused "train.attention flash" "config key 'train.attention' = 'flash'" "$TRAIN" --config c.yaml train.attention=flash
refused "train.tf32 maybe" "config key 'train.tf32' = 'maybe'" "$TRAIN" --config c.yaml train.tf32=maybe
refused "train.cudnn_sdpa 2" "config key 'train.cudnn_sdpa' = '2'" "$TRAIN" --config c.yaml train.cudnn_sdpa=2
# tools/compare_builds.sh: wrong usage and a build without the executables, before anything runs.
refused "compare_builds.sh with one build" "usage: compare_builds.sh OLD_BUILD NEW_BUILD" bash "$here/../tools/compare_builds.sh" run
refused "compare_builds.sh on a directory without executables" "compare_builds.sh: error: run/data/preprocess: not an executable" \
  bash "$here/../tools/compare_builds.sh" run "$build" "$python"
# tests/check_layers.py: a path that is not the source tree would check nothing and pass.
refused "check_layers.py without SOURCE_DIR" "the following arguments are required: SOURCE_DIR" "$python" "$here/check_layers.py"
refused "check_layers.py on a missing directory" "SOURCE_DIR 'nowhere' is not a directory" "$python" "$here/check_layers.py" nowhere
refused "check_layers.py on another tree" "SOURCE_DIR 'run' lacks base/," "$python" "$here/check_layers.py" run

# 2. Outputs that are inputs, however spelled.
ln -sf update_6.pt run/link.pt
refused "average --output = input" "also an input" "$AVG" --output run/update_6.pt run/update_3.pt run/update_6.pt
refused "average --output ./spelling" "also an input" "$AVG" --output ./run/update_6.pt run/update_3.pt run/update_6.pt
refused "average --output via .." "also an input" "$AVG" --output run/../run/update_6.pt run/update_3.pt run/update_6.pt
refused "average --output a symlink to an input" "also an input" "$AVG" --output run/link.pt run/update_3.pt run/update_6.pt
refused "average --last with --output in the run" "also an input" "$AVG" --output run/update_6.pt --last 2 run
rm run/link.pt

# 4. Config that disagrees with the data: languages swapped against the manifest.
refused "train, languages swapped" "config key 'data.src_lang' = 'en' (command line 'data.src_lang=en') but shards/manifest.json records 'de'" \
  "$TRAIN" --config c.yaml data.src_lang=en data.tgt_lang=de
refused "evaluate, languages swapped" "but shards/manifest.json records 'de': the shards were made for de->en" \
  "$EVAL" --config c.yaml --checkpoint run/last.pt data.src_lang=en data.tgt_lang=de --output hyp.txt

# 7. Missing inputs: a validation file of one language.
mkdir -p raw_noval && cp raw/* raw_noval/ && rm raw_noval/val.en
refused "preprocess, val.en missing" "missing raw files: raw_noval/val.en[.gz]" \
  "$PRE" --config c.yaml data.raw_dir=raw_noval data.shard_dir=shards_noval
[ ! -e shards_noval ] || fail "preprocess wrote shards_noval although an input was missing"

# 8. Errors that say where: a directory for a checkpoint, max_tokens below the longest sentence.
refused "evaluate --checkpoint DIR" "run: is a directory, not a checkpoint file" \
  "$EVAL" --config c.yaml --checkpoint run --output hyp.txt
refused "average of a directory" "run: is a directory, not a checkpoint file" "$AVG" --output avg.pt run run/last.pt
refused "max_tokens below the longest sentence" "config key 'data.max_tokens' = 3: split 'train' has a sentence of" \
  "$TRAIN" --config c.yaml data.max_tokens=3
# preprocess's sampling and encoding keys, refused by name before anything is written.
refused "data.workers -1" "config key 'data.workers' = '-1' (command line 'data.workers=-1'): must be >= 0" \
  "$PRE" --config c.yaml data.workers=-1 data.shard_dir=shards_workers
refused "data.spm_sample_lines 0" "config key 'data.spm_sample_lines' = '0' (command line 'data.spm_sample_lines=0'): must be >= 1" \
  "$PRE" --config c.yaml data.spm_sample_lines=0 data.shard_dir=shards_sample
[ ! -e shards_workers ] && [ ! -e shards_sample ] || fail "a refused preprocess created its shard directory"
# data.train_corpora: a weight that is not positive, a corpus with no raw files, and training on
# shards made without the corpus named.
refused "data.train_corpora weight 0" "config key 'data.train_corpora' = '{train: 0.0}' (command line 'data.train_corpora={train: 0}'): corpus 'train' needs a positive weight" \
  "$PRE" --config c.yaml "data.train_corpora={train: 0}" data.shard_dir=shards_corpora
refused "data.train_corpora without raw files" "missing raw files: raw/news.de[.gz], raw/news.en[.gz]" \
  "$PRE" --config c.yaml "data.train_corpora={train: 1, news: 2}" data.shard_dir=shards_corpora
grep -q "data.train_corpora = {news, train}" err.txt || fail "the missing corpus's message does not name data.train_corpora: $(cat err.txt)"
[ ! -e shards_corpora/manifest.json ] || fail "a refused preprocess wrote a manifest"
refused "train on a corpus the shards lack" "shards/manifest.json: no split 'news' (field 'splits')" \
  "$TRAIN" --config c.yaml "data.train_corpora={train: 1, news: 2}" train.save_dir=run_corpora
# bf16 decoding where the CPU (here: oneDNN capped below bf16) cannot: refused at start by name.
refused "evaluate train.precision=bf16 without bf16" "train.precision=bf16 is unavailable here: " \
  env DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI "$EVAL" --config c.yaml --checkpoint run/last.pt --output hyp.txt train.precision=bf16
# A backend that does not fit the device is the user's to fix: exit 2, not the fault code 3.
refused "dist.backend=nccl on a CPU" "dist.backend=nccl" "$TRAIN" --config c.yaml train.device=cpu dist.backend=nccl train.save_dir=nccl_cpu
# dist.shared_gpu=allow is NCCL's opt-in for ranks on one GPU: a CPU job or the MPI backend refuses it, naming the key.
refused "dist.shared_gpu=allow on a CPU job" "dist.shared_gpu=allow lets NCCL ranks share one GPU, but this job reduces with dist.backend=mpi" \
  "$TRAIN" --config c.yaml train.device=cpu dist.shared_gpu=allow train.save_dir=shared_cpu
refused "dist.shared_gpu=allow with dist.backend=nccl on a CPU" "dist.shared_gpu=allow lets NCCL ranks share one GPU, but this job runs on cpu" \
  "$TRAIN" --config c.yaml train.device=cpu dist.backend=nccl dist.shared_gpu=allow train.save_dir=shared_cpu
refused "dist.shared_gpu maybe" "config key 'dist.shared_gpu' = 'maybe'" "$TRAIN" --config c.yaml dist.shared_gpu=maybe
# A checkpoint field with a fixed set of values is parsed on load, not compared as a string:
# a GEMM library that does not exist is refused by name, on resume and when evaluating.
mkdir bogus && "$python" -c "
import torch
c = torch.load('run/last.pt', weights_only=True)
c['gemm_backend'] = 'bogus'
torch.save(c, 'bogus/last.pt')" || fail "writing bogus/last.pt"
refused "checkpoint gemm_backend bogus (resume)" "bogus/last.pt: field 'gemm_backend' = 'bogus': not a GEMM library (mkl, onednn)" \
  "$TRAIN" --config c.yaml train.gemm=auto train.save_dir=bogus --resume bogus/last.pt train.max_updates=8
refused "checkpoint gemm_backend bogus (evaluate)" "bogus/last.pt: field 'gemm_backend' = 'bogus'" \
  "$EVAL" --config c.yaml --checkpoint bogus/last.pt --output hyp.txt

# Issue 24, 7. An output option never destroys what it did not write: a run, shards, raw data
# or an input given as the output (however spelled) is refused, --force or not; only an
# earlier export of the tool itself is replaced.
tools=$here/../tools
mkdir ckpts && cp run/update_3.pt ckpts/ && ln -s run runlink
snap_paths+=(ckpts runlink/)
snapshot > before.sha256
if "$python" -c "import ctranslate2, sentencepiece" 2> /dev/null; then
  EXPORT=("$python" "$tools/export_ctranslate2.py")
  refused "export --force onto the run holding its checkpoint" "--output run: contains the checkpoint run/last.pt, an input" \
    "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output run --force
  refused "export --force onto that run through a symlink" "--output runlink/: contains the checkpoint run/last.pt, an input" \
    "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output runlink/ --force
  refused "export --output = the checkpoint" "--output ./run/../run/last.pt: is the checkpoint run/last.pt, an input" \
    "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output ./run/../run/last.pt --force
  refused "export --force onto the shard directory given" "--output shards: is the shard directory shards, an input" \
    "${EXPORT[@]}" --checkpoint run/last.pt --shard-dir shards --output shards --force
  refused "export --force onto shards" "shards: output directory exists and holds shards (manifest.json), not an earlier export: --force replaces only a directory export_ctranslate2 wrote" \
    "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output shards --force
  refused "export --force onto another run's checkpoints" "ckpts: output directory exists and holds checkpoints (update_3.pt), not an earlier export" \
    "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output ckpts --force
  refused "export --force onto raw data" "raw: output directory exists and holds 'test_2016_flickr.de', which export_ctranslate2 does not write" \
    "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output raw --force
  # An earlier export: kept without --force, replaced with it; with a file it did not write, kept.
  "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output ct2 > export.log 2>&1 || { cat export.log; fail "export"; }
  snap_paths+=(ct2)
  snapshot > before.sha256
  refused "export onto an earlier export without --force" "ct2: output directory exists and is not empty (use --force to replace it)" \
    "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output ct2
  echo notes > ct2/notes.txt
  snapshot > before.sha256
  refused "export --force onto an export holding a file it did not write" "ct2: output directory exists and holds 'notes.txt', which export_ctranslate2 does not write" \
    "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output ct2 --force
  rm ct2/notes.txt && touch -d @0 ct2/model.bin
  "${EXPORT[@]}" --checkpoint run/last.pt --config c.yaml --output ct2 --force > export.log 2>&1 || { cat export.log; fail "export --force onto its own export"; }
  [ "$(stat -c %Y ct2/model.bin)" != 0 ] && [ -f ct2/nmtrain.json ] || fail "export --force did not replace its earlier export"
  ls -a . | grep -q '\.tmp-\|\.old-' && fail "export --force left a temporary"
  snapshot > before.sha256
  echo "ok: export --force replaced its own earlier export ct2/"
else
  echo "skipped: export_ctranslate2 cases ($python lacks ctranslate2 or sentencepiece)"
fi
refused "plot_run --output = the run's metrics.jsonl" "--output ./run/../run/metrics.jsonl: is run/metrics.jsonl, an input" \
  "$python" "$tools/plot_run" run --output ./run/../run/metrics.jsonl
refused "plot_run --output = the run directory" "--output runlink: is run, an input" \
  "$python" "$tools/plot_run" run --output runlink
printf 'config c.yaml\npoint a train.max_updates=2\n' > s.sweep
refused "sweep --out a run" "--out run: exists and holds checkpoints (last.pt), but no sweep wrote there" \
  "$python" "$tools/sweep.py" s.sweep --build "$build" --out run
refused "sweep --out shards" "--out shards: exists and holds shards (manifest.json), but no sweep wrote there" \
  "$python" "$tools/sweep.py" s.sweep --build "$build" --out shards
refused "sweep --out raw data" "--out raw: exists and holds 'test_2016_flickr.de', but no sweep wrote there" \
  "$python" "$tools/sweep.py" s.sweep --build "$build" --out raw --dry-run
printf 'config c.yaml\npoint .. train.max_updates=2\n' > up.sweep
refused "sweep point named .." "up.sweep:2: point name '..' names no directory of its own under OUT" \
  "$python" "$tools/sweep.py" up.sweep --build "$build" --out sw
[ ! -e sw ] || fail "a refused sweep made its --out"

# Issue 24, 8. The supervisor restarts only what a restart can fix: a command that cannot
# start, a shell's 126/127 and a usage error (exit 2) end at once with the reason, without
# a backoff (60 s here); a fault (exit 3) is still restarted.
SUP=$here/../launch/supervise.sh
# supervised NAME EXIT ATTEMPTS EXPECTED-TEXT COMMAND...: under supervise.sh --backoff 60.
supervised() {
  local name=$1 want_rc=$2 attempts=$3 want=$4; shift 4
  local start=$SECONDS
  bash "$SUP" --max-restarts 1 --backoff 60 --log sup.log -- "$@" > out.txt 2> err.txt
  local rc=$? took=$((SECONDS - start))
  [ $rc = "$want_rc" ] || { cat err.txt; fail "$name: exit $rc, expected $want_rc"; }
  grep -qF -- "$want" err.txt || { cat err.txt; fail "$name: message lacks '$want'"; }
  [ "$(grep -c '^supervise: attempt ' err.txt)" = "$attempts" ] || { cat err.txt; fail "$name: not $attempts attempt(s)"; }
  [ $took -lt 60 ] || fail "$name: took $took s: it waited a backoff"
  snapshot | cmp -s - before.sha256 || { snapshot | diff - before.sha256; fail "$name: an existing file changed"; }
  echo "ok: $name: exit $rc after $took s: $(grep -F -- "$want" err.txt | head -1 | cut -c1-200)"
  checked=$((checked + 1))
}
printf '#!/bin/sh\necho never\n' > notexec.sh
printf '#!/no/such/interpreter\n' > badinterp.sh && chmod +x badinterp.sh
supervised "supervise: a program that does not exist" 2 0 \
  "supervise: error: cannot start './no-such-program': no such file; nothing started, not restarting" ./no-such-program --config c.yaml
supervised "supervise: a name not on PATH" 2 0 "cannot start 'no-such-program': not found on PATH" no-such-program --config c.yaml
supervised "supervise: a file without execute permission" 2 0 \
  "cannot start './notexec.sh': not executable (no execute permission)" ./notexec.sh
supervised "supervise: a directory" 2 0 "cannot start 'run/': is a directory, not a program" run/ --config c.yaml
refused "supervise: --log in a missing directory" "supervise: error: --log nodir/x.log: cannot append to it" \
  bash "$SUP" --log nodir/x.log -- "$TRAIN" --config c.yaml
refused "supervise: --log a directory" "supervise: error: --log run: cannot append to it (a directory)" \
  bash "$SUP" --log run -- "$TRAIN" --config c.yaml
grep -q "attempt" err.txt && fail "supervise with a bad --log started the job"
supervised "supervise: a missing #! interpreter (the shell's 127)" 127 1 \
  "exit 127 after" ./badinterp.sh
grep -q "a program it runs was not found (the shell's exit 127), not restarting: ./badinterp.sh" err.txt || { cat err.txt; fail "127: reason"; }
supervised "supervise: a wrapper's program not found (127)" 127 1 \
  "a program it runs was not found (the shell's exit 127), not restarting: bash -c no-such-program" bash -c 'no-such-program --config c.yaml'
supervised "supervise: a wrapper's program not executable (126)" 126 1 \
  "a program it runs could not be executed (the shell's exit 126), not restarting: bash -c ./notexec.sh" bash -c ./notexec.sh
supervised "supervise: a usage error of train" 2 1 \
  "bad input, not restarting: $TRAIN --config c.yaml --no-such-flag. The following argument was not expected: --no-such-flag" \
  "$TRAIN" --config c.yaml --no-such-flag
supervised "supervise: a config error of train" 2 1 "bad input, not restarting: $TRAIN --config c.yaml model.d_modle=32" \
  "$TRAIN" --config c.yaml model.d_modle=32
bash "$SUP" --max-restarts 1 --backoff 0 --log sup.log -- bash -c 'echo "job: error: a fault" >&2; exit 3' > out.txt 2> err.txt
rc=$?
[ $rc = 3 ] && [ "$(grep -c '^supervise: attempt ' err.txt)" = 2 ] || { cat err.txt; fail "supervise: a fault (exit 3) was not restarted"; }
echo "ok: supervise: a fault (exit 3) is still restarted: $(grep -o 'giving up.*' err.txt)"

# Issue 24, 9. Every output train cannot write is refused at start, like the checkpoints'
# directory: train.log or metrics.jsonl that cannot be opened (a directory in its place)
# stops the run before its first update, and no checkpoint is written.
for out in train.log metrics.jsonl; do
  rm -rf "outs_$out" && mkdir -p "outs_$out/$out"
  refused "train, $out not writable" "config key 'train.save_dir' = 'outs_$out': cannot open outs_$out/$out for appending" \
    "$TRAIN" --config c.yaml "train.save_dir=outs_$out"
  [ -z "$(find "outs_$out" -name '*.pt')" ] || fail "train wrote a checkpoint although $out could not be written"
done

# 6. Two runs, one directory: the second is refused with the holder's pid and host.
"$TRAIN" --config c.yaml train.max_updates=100000 train.save_dir=busy > busy.log 2>&1 &
holder=$!
for _ in $(seq 1 100); do [ -e busy/last.pt ] && break; sleep 0.1; done
find busy -type f ! -name .lock -print0 | sort -z | xargs -0 sha256sum > busy.before 2> /dev/null
kill -STOP $holder  # nothing may change under the second run's feet while we compare
find busy -type f ! -name .lock -print0 | sort -z | xargs -0 sha256sum > busy.before
"$TRAIN" --config c.yaml train.save_dir=busy > second.log 2>&1
rc=$?
find busy -type f ! -name .lock -print0 | sort -z | xargs -0 sha256sum | cmp -s - busy.before || fail "the second run touched busy/"
kill -CONT $holder
[ $rc = 2 ] || { cat second.log; fail "second run on a busy save_dir: exit $rc"; }
grep -q "config key 'train.save_dir' = 'busy' is in use by another run (pid $holder on host $(hostname) holds busy/.lock)" second.log \
  || { cat second.log; fail "second run: message"; }
echo "ok: a second run on busy/ refused: $(grep -o "is in use.*lock)" second.log)"
# A stale lock (its holder killed) never blocks.
kill -9 $holder; wait $holder 2> /dev/null
"$TRAIN" --config c.yaml train.save_dir=busy train.max_updates=2 --resume auto > third.log 2>&1 \
  || { cat third.log; fail "a run after the holder was killed was refused"; }
echo "ok: the lock of a killed run did not block the next one"
# 9. Litter of interrupted runs: temporaries whose writer is gone are removed at the next
# start; one whose writer lives is kept (preprocess); under the run lock all go (train).
mkdir -p shards/.tmp-preprocess-999999 "shards/.tmp-preprocess-$$" && touch shards/.tmp-preprocess-999999/x
touch run/.update_9.pt.tmp-999999 "run/.last.pt.tmp-$$"
"$PRE" --config c.yaml > pre2.log 2>&1 || { cat pre2.log; fail "preprocess again"; }
[ ! -e shards/.tmp-preprocess-999999 ] || fail "stale preprocess temporary kept"
[ -e "shards/.tmp-preprocess-$$" ] || fail "a live writer's temporary was removed"
grep -q "removed shards/.tmp-preprocess-999999, left by an interrupted run" pre2.log || fail "preprocess did not say what it removed"
rmdir "shards/.tmp-preprocess-$$"
"$TRAIN" --config c.yaml train.max_updates=7 --resume auto > t2.log 2>&1 || { cat t2.log; fail "resume"; }
ls -a run | grep -q '\.tmp-' && fail "temporaries left in run/"
grep -q "removed run/.update_9.pt.tmp-999999, left by an interrupted run" t2.log || { cat t2.log; fail "train did not say what it removed"; }
# ... and Ctrl-C stops training between updates: checkpoint written whole, nothing left over.
"$TRAIN" --config c.yaml train.save_dir=ctrlc train.max_updates=100000 > ctrlc.log 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -e ctrlc/update_3.pt ] && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
[ $rc = 0 ] || { cat ctrlc.log; fail "Ctrl-C: exit $rc"; }
grep -q "stopped by signal 2 after update" ctrlc.log || { cat ctrlc.log; fail "Ctrl-C: no graceful stop"; }
ls -a ctrlc | grep -q '\.tmp-' && fail "Ctrl-C left a temporary"
"$python" -c "import torch; torch.load('ctrlc/last.pt', weights_only=True)" || fail "Ctrl-C: last.pt unreadable"
echo "ok: stale temporaries removed at the next start (preprocess: dead writers only; train: all, under its lock)"
# ... and Ctrl-C during preprocess removes its temporary directory on the way out (exit
# 130), leaving the shards of the previous run as they were. The corpus is large enough
# (200k pairs, seconds of encoding) that the signal lands while the temporary exists.
"$python" "$here/make_toy_corpus.py" raw_big 200000
sha_shards() { find shards -type f -print0 | sort -z | xargs -0 sha256sum; }
sha_shards > shards.sha256
"$PRE" --config c.yaml data.raw_dir=raw_big data.spm_model=shards/spm.model > pre_int.log 2>&1 &
pid=$!
for _ in $(seq 1 300); do compgen -G "shards/.tmp-preprocess-$pid" > /dev/null && break; sleep 0.02; done
[ -d "shards/.tmp-preprocess-$pid" ] || { cat pre_int.log; fail "preprocess never made its temporary"; }
sleep 0.2
kill -INT $pid; wait $pid; rc=$?
[ $rc = 130 ] || { cat pre_int.log; fail "Ctrl-C in preprocess: exit $rc, expected 130"; }
grep -q "preprocess: error: preprocess train: interrupted by SIGINT; removed shards/.tmp-preprocess-$pid, nothing published" pre_int.log \
  || { cat pre_int.log; fail "Ctrl-C in preprocess: message"; }
ls -a shards | grep -q '\.tmp-' && fail "Ctrl-C in preprocess left a temporary"
sha_shards | cmp -s - shards.sha256 || fail "Ctrl-C in preprocess changed the published shards"
echo "ok: $(grep -o 'interrupted by SIGINT.*' pre_int.log), exit 130, shards unchanged"
echo "bad input: $checked refusals checked (message, exit code, no file changed) + the run lock"
