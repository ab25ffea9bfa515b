#!/usr/bin/env bash
# Training across nodes listed in an Open MPI hostfile; ranks are placed by slot, and
# each rank takes the GPU of its node-local rank.
#   launch/multinode_train.sh [--dry-run] [--iface CIDR|NAME] --hostfile FILE NP CONFIG [key=value ...]
#
# --iface restricts both MPI's data (btl_tcp_if_include) and its control connections
# (oob_tcp_if_include) to one network, and NCCL's to the same interface name
# (NCCL_SOCKET_IFNAME) when a name is given: on nodes with several networks, pick the
# fast one. Keepalives on the control connections let mpirun notice a lost node
# (cut link, dead host) within ~25 s and end the job; a hung rank is ended by the
# trainer's watchdog (dist.timeout_s). Run it under launch/supervise.sh to restart
# faulted jobs with --resume auto. train.save_dir and data.shard_dir must be on storage
# every node mounts at the same path (checked at start).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=launch/common.sh
source "$root/launch/common.sh"
help_requested_then_exit "${BASH_SOURCE[0]}" "$@"
usage() { echo "usage: $0 [--dry-run] [--iface CIDR|NAME] --hostfile FILE NP CONFIG [key=value ...]" >&2; exit 2; }
dry=0 iface=""
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry=1; shift ;;
    --iface) [ $# -ge 2 ] || usage; iface=$2; shift 2 ;;
    *) break ;;
  esac
done
[ "${1:-}" = "--hostfile" ] && [ $# -ge 4 ] || usage
hostfile=$2 np=$3 config=$4; shift 4
[ -f "$hostfile" ] || { echo "$0: hostfile $hostfile $([ -d "$hostfile" ] && echo "is a directory, not a file" || echo "does not exist")" >&2; exit 2; }
[[ $np =~ ^[1-9][0-9]*$ ]] || { echo "$0: NP must be a positive integer, got '$np'" >&2; exit 2; }
[ -f "$config" ] && [ -r "$config" ] || { echo "$0: CONFIG '$config' is not a readable file" >&2; exit 2; }
train=${NMTRAIN_BUILD:-$root/build}/trainer/train
[ $dry = 1 ] || [ -x "$train" ] || { echo "$0: no trainer at $train (run launch/build.sh, or set NMTRAIN_BUILD)" >&2; exit 2; }
cmd=(mpirun --hostfile "$hostfile" -np "$np" --map-by slot --bind-to none
     --mca oob_tcp_keepalive_time 10 --mca oob_tcp_keepalive_intvl 5 --mca oob_tcp_keepalive_probes 3)
[ "$(id -u)" = 0 ] && cmd+=(--allow-run-as-root)  # containers run as root; Open MPI refuses it unasked
if [ -n "$iface" ]; then
  cmd+=(--mca btl_tcp_if_include "$iface" --mca oob_tcp_if_include "$iface")
  [[ $iface == */* ]] || cmd+=(-x "NCCL_SOCKET_IFNAME=$iface")
fi
cmd+=(-x LD_LIBRARY_PATH -x NCCL_DEBUG=WARN "$train" --config "$config" "$@")
if [ $dry -eq 1 ]; then printf '%q ' "${cmd[@]}"; echo; exit 0; fi
exec "${cmd[@]}"
