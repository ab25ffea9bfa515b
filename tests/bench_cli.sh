#!/usr/bin/env bash
# Benchmark programs refuse bad arguments with one message naming the argument and exit 2.
#   bench_cli.sh BUILD_DIR PYTHON
set -uo pipefail
kernels=$1/bench/kernels
fail() { echo "FAIL: $*"; exit 1; }
expect_usage_error() {  # needle args...
  local needle=$1; shift
  err=$("$kernels" "$@" 2>&1 >/dev/null); rc=$?
  [ "$rc" = 2 ] || fail "kernels $*: exit $rc, want 2"
  grep -qF -- "$needle" <<<"$err" || fail "kernels $*: stderr lacks '$needle': $err"
}
expect_usage_error "ROWS must be a positive integer, got 'abc'" abc
expect_usage_error "VOCAB must be a positive integer, got '0'" 16 0
expect_usage_error "THREADS must be a positive integer, got '-1'" 16 32 -1
expect_usage_error "ROWS must be a positive integer, got '12x'" 12x
expect_usage_error "usage: kernels" 1 2 3 4
# bench/gemm, bench/compare --compile and bench/decode --gemm the same way, before any work.
gemm=$1/bench/gemm
for args in "abc" "16 0" "16 2 -5" "1 2 3 4"; do
  # shellcheck disable=SC2086
  err=$("$gemm" $args 2>&1 >/dev/null); rc=$?
  [ "$rc" = 2 ] && grep -q "^gemm: error: " <<<"$err" || fail "gemm $args: exit $rc: $err"
done
grep -q "MILLISECONDS must be a positive integer, got '-5'" <<<"$("$gemm" 16 2 -5 2>&1)" || fail "gemm: MILLISECONDS not named"
root=$(cd "$(dirname "$0")/.." && pwd)
# bench/data_scale: sizes, directories and the distinct pairs a raw corpus can give, before any work.
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
printf 'a\nb\nc\n' > "$scratch/train.de"
for args in "--sizes abc|--sizes 'abc': expected comma-separated pair counts" "--sizes 0|--sizes and --shard-pairs must be positive" \
            "--build $scratch/none|$scratch/none/data/preprocess: not built" "--raw-dir $scratch/none|--raw-dir $scratch/none: no such directory" \
            "--raw-dir $scratch --sizes 7|--sizes 7: at most 6 distinct pairs from 3 training pairs"; do
  # shellcheck disable=SC2086
  err=$(python3 "$root/bench/data_scale" --build "$1" --work "$scratch/work" ${args%%|*} 2>&1); rc=$?
  [ "$rc" = 2 ] && grep -qF "data_scale: error: ${args#*|}" <<<"$err" || fail "data_scale ${args%%|*}: exit $rc: $err"
done
[ ! -e "$scratch/work/7" ] || fail "data_scale --sizes 7 wrote a corpus"
err=$(bash "$root/bench/compare" --compile fast 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "bench/compare: --compile: unknown mode 'fast'" <<<"$err" || fail "compare --compile fast: exit $rc: $err"
err=$(bash "$root/bench/compare" --compile 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "bench/compare: --compile needs a mode" <<<"$err" || fail "compare --compile: exit $rc: $err"
err=$(bash "$root/bench/compare" --profile "$scratch/no_such_dir" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "bench/compare: --profile: '$scratch/no_such_dir' is not a directory" <<<"$err" &&
  [ ! -e "$scratch/no_such_dir" ] || fail "compare --profile into a missing directory: exit $rc: $err"
err=$(python3 "$root/bench/decode" --ct2-compute-type int4 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "argument --ct2-compute-type: invalid choice: 'int4'" <<<"$err" || fail "decode --ct2-compute-type int4: exit $rc: $err"
err=$(python3 "$root/bench/decode" --precision fp16 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "argument --precision: invalid choice: 'fp16'" <<<"$err" || fail "decode --precision fp16: exit $rc: $err"
err=$(python3 "$root/bench/decode" --gemm blas 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "argument --gemm: invalid choice: 'blas'" <<<"$err" || fail "decode --gemm blas: exit $rc: $err"
err=$(python3 "$root/bench/decode" --config c.yaml --checkpoint m.pt --source "$scratch/no_such.de" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "error: --source $scratch/no_such.de: no such file" <<<"$err" || fail "decode --source missing: exit $rc: $err"
err=$(python3 "$root/bench/decode" --config "$scratch/no_such.yaml" --checkpoint m.pt --translate "$1/eval/translate" 2>&1); rc=$?
[ "$rc" = 2 ] && [ "$(grep -c . <<<"$err")" = 1 ] && grep -qF "decode: error: $1/eval/translate --print-config: " <<<"$err" &&
  grep -qF "no_such.yaml" <<<"$err" || fail "decode --config missing: exit $rc: $err"
err=$(python3 "$root/bench/decode" --with-hf --sampling-topk 10 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "error: --with-hf times search only, not --sampling-topk" <<<"$err" || fail "decode --with-hf --sampling-topk: exit $rc: $err"
err=$(python3 "$root/bench/decode" --with-hf --hf-model "$scratch" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "error: --hf-model $scratch: not a transformers model directory (no config.json)" <<<"$err" || fail "decode --hf-model without config.json: exit $rc: $err"
err=$("$2" "$root/bench/pytorch_reference.py" --shard-dir . --bench-out . --precision fp64 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "argument --precision: invalid choice: 'fp64'" <<<"$err" ||
  fail "pytorch_reference --precision fp64: exit $rc: $err"
err=$("$2" "$root/bench/pytorch_reference.py" --shard-dir . --bench-out . --updates 0 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "error: --updates must be at least 1 and --warmup at least 0 (got 0 and 5)" <<<"$err" ||
  fail "pytorch_reference --updates 0: exit $rc: $err"
err=$(bash "$root/bench/compare" --device tpu 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "bench/compare: --device: 'tpu' is not cpu or cuda" <<<"$err" || fail "compare --device tpu: exit $rc: $err"
err=$(bash "$root/bench/compare" --device cuda train.device=cpu 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "bench/compare: 'train.device=cpu': the device is --device's" <<<"$err" || fail "compare train.device=cpu: exit $rc: $err"
err=$("$2" "$root/bench/pytorch_reference.py" --shard-dir . --bench-out . --device tpu 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "argument --device: invalid choice: 'tpu'" <<<"$err" || fail "pytorch_reference --device tpu: exit $rc: $err"
err=$(bash "$root/bench/gpu_compare.sh" --rounds 2 --frobnicate 2>&1); rc=$?
[ "$rc" = 2 ] && grep -qF "gpu_compare.sh: unknown argument '--frobnicate'" <<<"$err" || fail "gpu_compare --frobnicate: exit $rc: $err"
# bench/members_at_once.sh: each bad value one line naming it, exit 2, before any training.
members_refused() {  # members_refused EXPECTED ARG...
  local expected=$1 out rc=0; shift
  out=$(bash "$root/bench/members_at_once.sh" "$@" 2>&1) || rc=$?
  [ "$rc" = 2 ] && [ "$out" = "members_at_once.sh: error: $expected" ] || fail "members_at_once $*: exit $rc: $out"
}
members_refused "unknown argument '--frobnicate'" --frobnicate
members_refused "--rounds '0': not a positive integer" --rounds 0
members_refused "--updates 'x': not a positive integer" --updates x
members_refused "--precisions 'fp32 fp16': 'fp16' is not fp32 or bf16" --precisions "fp32 fp16"
members_refused "--config '/no/such.yaml' is not a file" --config /no/such.yaml
members_refused "--warmup needs a value" --warmup
out=$(taskset -c 0 bash "$root/bench/members_at_once.sh" 2>&1); rc=$?
[ "$rc" = 2 ] && [ "$out" = "members_at_once.sh: error: this script may use only 1 CPU, and the pair needs 2" ] ||
  fail "members_at_once on 1 CPU: exit $rc: $out"
# And a small valid run prints its JSON line.
"$kernels" 16 32 1 | grep -q '"cross_entropy_speedup"' || fail "kernels 16 32 1 printed no JSON"
echo "bench_cli: ok"
