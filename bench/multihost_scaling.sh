#!/usr/bin/env bash
# Scaling across hosts over capped links: 2 network-namespace hosts x 1 rank
# (tests/cluster/netns_cluster.sh, real TCP between them) against 1 rank alone and 2 ranks
# on one host, with each host's link capped by tc (tbf, both directions). For every link:
# target tokens/s, the per-update time split into compute and exposed communication (the
# time ranks wait for reductions after backward), with the bucketed overlap on and off, and
# with gradients sent in bf16 (dist.grad_dtype). Prints one JSON line per run, then a table.
#
#   sudo bench/multihost_scaling.sh [--updates N] [--warmup W] [--links "unlimited 10gbit 1gbit 100mbit"]
#                                   [--config C] [key=value ...]
# Needs root (namespaces, tc) and the config's shards (launch/quickstart.sh, or preprocess).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${NMTRAIN_BUILD:-$root/build}
updates=6 warmup=2 links="unlimited 10gbit 1gbit 100mbit" config=$root/configs/bench.yaml
while [ $# -gt 0 ]; do
  case $1 in
    --updates) updates=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --links) links=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --inner) inner=1; shift ;;
    *) break ;;
  esac
done
[[ $updates =~ ^[1-9][0-9]*$ ]] || { echo "$0: --updates must be a positive integer" >&2; exit 2; }
[[ $warmup =~ ^[0-9]+$ ]] || { echo "$0: --warmup must be an integer >= 0" >&2; exit 2; }
if [ -z "${inner:-}" ]; then
  exec bash "$root/tests/cluster/netns_cluster.sh" run 2 --slots 1 -- \
    bash "$0" --inner --updates "$updates" --warmup "$warmup" --links "$links" --config "$config" "$@"
fi

read -r -a MH <<< "$NETNS_MPIRUN"
read -r -a LINKS <<< "$NETNS_LINKS"
read -r -a HOSTS <<< "$NETNS_HOSTS"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
bench=("$build/trainer/train" --config "$config" train.threads=1 --benchmark "$updates" --warmup "$warmup" "$@")
results=$scratch/results.jsonl

cap() {  # cap RATE: tbf on both ends of every host's link ("unlimited": none)
  local i rate=$1
  for i in "${!LINKS[@]}"; do
    tc qdisc del dev "${LINKS[$i]}" root 2> /dev/null || true
    ip netns exec "${HOSTS[$i]}" tc qdisc del dev eth0 root 2> /dev/null || true
  done
  [ "$rate" = unlimited ] && return 0
  # The bucket holds 5 ms at the rate (at least 64 KiB), so the rate is reachable at HZ 250.
  local bytes
  bytes=$(python3 -c "import re,sys; v,u=re.fullmatch(r'([0-9.]+)([kmg]?)bit',sys.argv[1]).groups(); print(max(65536,int(float(v)*{'':1,'k':1e3,'m':1e6,'g':1e9}[u]/8*0.005)))" "$rate")
  for i in "${!LINKS[@]}"; do
    tc qdisc add dev "${LINKS[$i]}" root tbf rate "$rate" burst "$bytes" latency 100ms
    ip netns exec "${HOSTS[$i]}" tc qdisc add dev eth0 root tbf rate "$rate" burst "$bytes" latency 100ms
  done
}

run() {  # run LABEL LINK OVERLAP GRAD_DTYPE COMMAND...
  local label=$1 link=$2 overlap=$3 dtype=$4; shift 4
  local dir=$scratch/$label
  local out
  out=$("$@" train.save_dir="$dir" dist.overlap="$overlap" dist.grad_dtype="$dtype" 2> "$dir.log" | tail -1) \
    || { tail -20 "$dir.log" >&2; echo "$0: run $label failed" >&2; exit 1; }
  python3 - "$label" "$link" "$overlap" "$dtype" "$out" >> "$results" <<'PY'
import json, sys
label, link, overlap, dtype, raw = sys.argv[1:6]
r = json.loads(raw)
per_update = r["seconds"] / r["updates"]
exposed = r["breakdown"]["reduce_wait"] * per_update
print(json.dumps({"run": label, "link": link, "overlap": overlap == "true", "grad_dtype": dtype, "ranks": r["ranks"],
                  "tgt_tokens_per_s": round(r["tgt_tokens_per_s"], 1), "update_s": round(per_update, 4),
                  "compute_s": round(per_update - exposed, 4), "exposed_comm_s": round(exposed, 4)}))
PY
  tail -1 "$results"
}

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $updates timed updates after $warmup" >&2
run one_rank none true fp32 "${bench[@]}"
run one_host_2_ranks shared-memory true fp32 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "${bench[@]}"
for link in $links; do
  cap "$link"
  run "hosts2_${link}_overlap" "$link" true fp32 "${MH[@]}" -np 2 "${bench[@]}"
  run "hosts2_${link}_no_overlap" "$link" false fp32 "${MH[@]}" -np 2 "${bench[@]}"
  run "hosts2_${link}_bf16" "$link" true bf16 "${MH[@]}" -np 2 "${bench[@]}"
done
cap unlimited

python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
one = next(r for r in rows if r["run"] == "one_rank")["tgt_tokens_per_s"]
print()
print("| hosts x ranks | link (each host) | overlap | gradients | tgt tok/s | efficiency vs 1 rank | update s | compute s | exposed comm s |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    shape = "1 x 1" if r["ranks"] == 1 else ("1 x 2" if r["link"] == "shared-memory" else "2 x 1")
    eff = r["tgt_tokens_per_s"] / (one * r["ranks"])
    print(f"| {shape} | {r['link']} | {'on' if r['overlap'] else 'off'} | {r['grad_dtype']} | {r['tgt_tokens_per_s']:,.0f} | "
          f"{eff:.2f} | {r['update_s']:.3f} | {r['compute_s']:.3f} | {r['exposed_comm_s']:.3f} |")
PY
