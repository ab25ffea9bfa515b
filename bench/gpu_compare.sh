#!/usr/bin/env bash
# Ours against PyTorch on one GPU, side by side: bench/compare --device cuda at each batch size
# and precision (fp32 IEEE, fp32 with TF32, bf16), on the previous 60-minute De->En recipe's model
# and batches (configs/sweeps/base_de_en_1f451a8.yaml, the shape bench/README.md's GPU tables measured).
# Prints one markdown row per setting as it finishes, then the table again whole.
#   bash bench/gpu_compare.sh [--rounds R] [--updates N] [--warmup W] [--tokens "3072 12288"]
#                             [--compile default] [--config C]
# --compile MODE adds torch.compile (MODE) as a second reference in every setting (its compile
# time is reported apart by bench/compare). Needs NMTRAIN_BUILD/NMTRAIN_VENV (launch/build.sh
# or a bundle's env.sh) and the config's shards.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=2 updates=30 warmup=5 tokens="3072 12288" compile=() config=$root/configs/sweeps/base_de_en_1f451a8.yaml
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --updates) updates=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --tokens) tokens=$2; shift 2 ;;
    --compile) compile=(--compile "$2"); shift 2 ;;
    --config) config=$2; shift 2 ;;
    *) echo "gpu_compare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
python=${NMTRAIN_PYTHON:-${NMTRAIN_VENV:+$NMTRAIN_VENV/bin/python}}
python=${python:-python3}
rows=() err=$(mktemp)
trap 'rm -f "$err"' EXIT
header="| tokens/batch | precision | ours tgt tok/s | eager tgt tok/s | ours/eager |${compile:+ compile tgt tok/s | ours/compile |} ours MFU |"
echo "$header"
for t in $tokens; do
  for p in fp32 tf32 bf16; do
    case $p in
      fp32) keys=(train.precision=fp32 train.tf32=false) ;;
      tf32) keys=(train.precision=fp32 train.tf32=true) ;;
      bf16) keys=(train.precision=bf16 train.tf32=true) ;;
    esac
    out=$(bash "$root/bench/compare" --device cuda --rounds "$rounds" --updates "$updates" --warmup "$warmup" \
            --config "$config" "${compile[@]}" data.max_tokens="$t" "${keys[@]}" 2> "$err" | tail -1) ||
      { tail -20 "$err" >&2; out='{}'; }
    row=$("$python" - "$out" "$t" "$p" "${compile[1]:-}" <<'PY'
import json, sys
d, tokens, prec, mode = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
if not d:
    print(f"| {tokens} | {prec} | failed | | |" + (" | |" if mode else "") + " |")
    raise SystemExit
cells = [tokens, prec, f"{d['ours_tgt_tokens_per_s']:,.0f}", f"{d['reference_tgt_tokens_per_s']:,.0f}", f"{d['ratio']:.2f}x"]
if mode:
    cells += [f"{d[f'compile_{mode}_tgt_tokens_per_s']:,.0f}", f"{d[f'ratio_vs_compile_{mode}']:.2f}x"]
cells.append(f"{d['mfu']:.2f}")
print("| " + " | ".join(cells) + " |")
PY
)
    echo "$row"
    rows+=("$row")
  done
done
printf '\n%s\n| --- | --- | --- | --- | --- |%s --- |\n' "$header" "${compile:+ --- | --- |}"
printf '%s\n' "${rows[@]}"
