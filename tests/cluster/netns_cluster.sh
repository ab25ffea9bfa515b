#!/usr/bin/env bash
# A cluster of H "hosts" on this machine, each a Linux network namespace with its own
# address on one bridge, so that Open MPI jobs run across them over real TCP (the same
# code path as separate machines: one orted per host, TCP between hosts, shared memory
# only inside a host). For tests and link experiments (tc, link cuts); needs root.
#
#   tests/cluster/netns_cluster.sh run H [--slots S] -- COMMAND...   up, run COMMAND, always down
#   tests/cluster/netns_cluster.sh up H [--slots S]                  create (prints the env to eval)
#   tests/cluster/netns_cluster.sh down                              remove, killing what runs inside
#   tests/cluster/netns_cluster.sh check                             exit 0 if namespaces can be made here
#
# Inside `run`, COMMAND sees:
#   NETNS_HOSTFILE   Open MPI hostfile (one line per host, `slots=S`)
#   NETNS_MPIRUN     mpirun plus the flags that keep every byte on the cluster's subnet
#                    (a word list: use it unquoted, or `eval`)
#   NETNS_HOSTS      the hosts' namespace names, space-separated (nmt-h0 nmt-h1 ...)
#   NETNS_LINKS      the host-side veth of each host, same order (for tc / ip link)
#   NETNS_STATE      a directory; a file setup-<host>.sh there runs on that host (as root,
#                    in its own mount namespace) before Open MPI starts anything there
# Host i is namespace ${NETNS_PREFIX}-h<i> with address 10.77.0.<i+1>/24 and hostname
# ${NETNS_PREFIX}-h<i> (its own UTS namespace, set by the rsh agent, so processes report
# the host they run on). The bridge (root namespace) is 10.77.0.254: mpirun runs there.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/cluster/cluster_common.sh
source "$here/cluster_common.sh"  # cluster_run: the `run` verb
prefix=${NETNS_PREFIX:-nmt}
subnet=${NETNS_SUBNET:-10.77.0}
bridge=${prefix}-br0
state=/run/${prefix}-netns-cluster

die() { echo "netns_cluster: $*" >&2; exit 2; }

check() {
  [ "$(id -u)" = 0 ] || { echo "netns_cluster: needs root (network namespaces)" >&2; return 1; }
  command -v ip > /dev/null || { echo "netns_cluster: no 'ip' command (iproute2)" >&2; return 1; }
  local probe=${prefix}-probe$$
  if ! ip netns add "$probe" 2> /dev/null; then
    echo "netns_cluster: this machine does not allow network namespaces (ip netns add failed)" >&2
    return 1
  fi
  ip netns delete "$probe"
  if ! ip link add "${prefix}-probebr" type bridge 2> /dev/null; then
    echo "netns_cluster: this machine does not allow bridge devices" >&2
    return 1
  fi
  ip link delete "${prefix}-probebr"
}

down() {
  local ns
  for ns in $(ip netns list 2> /dev/null | awk '{print $1}' | grep "^${prefix}-h[0-9]*$" || true); do
    # A namespace outlives its name while processes are inside: end them first.
    local pids
    pids=$(ip netns pids "$ns" 2> /dev/null || true)
    [ -n "$pids" ] && kill -9 $pids 2> /dev/null || true
    ip netns delete "$ns" 2> /dev/null || true
  done
  local l
  for l in $(ip -o link show 2> /dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^${prefix}-v[0-9]*$" || true); do
    ip link delete "$l" 2> /dev/null || true
  done
  ip link delete "$bridge" 2> /dev/null || true
  rm -rf "$state"
}

up() {
  local hosts=$1 slots=$2
  [[ $hosts =~ ^[1-9][0-9]?$ ]] && [ "$hosts" -le 200 ] || die "host count must be 1..200, got '$hosts'"
  [[ $slots =~ ^[1-9][0-9]*$ ]] || die "--slots must be a positive integer, got '$slots'"
  check || exit 3
  down  # leftovers of a killed earlier run
  mkdir -p "$state"
  ip link add "$bridge" type bridge
  ip addr add "$subnet.254/24" dev "$bridge"
  ip link set "$bridge" up
  local i ns names="" links=""
  : > "$state/hostfile"
  for ((i = 0; i < hosts; i++)); do
    ns=${prefix}-h$i
    ip netns add "$ns"
    ip link add "${prefix}-v$i" type veth peer name eth0 netns "$ns"
    ip link set "${prefix}-v$i" master "$bridge" up
    ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    echo "$ns slots=$slots" >> "$state/hostfile"
    names+="$ns " links+="${prefix}-v$i "
  done
  # The agent maps a host name to its namespace; Open MPI starts one orted per host with it.
  local mpirun="mpirun --allow-run-as-root --oversubscribe --bind-to none --hostfile $state/hostfile"
  mpirun+=" --mca plm_rsh_agent $here/netns_rsh.sh --mca plm_rsh_no_tree_spawn 1"
  mpirun+=" --mca btl tcp,self,vader --mca btl_tcp_if_include $subnet.0/24 --mca oob_tcp_if_include $subnet.0/24"
  # A host whose link is cut must be noticed by mpirun (and its orted notice mpirun gone)
  # before a rank asks mpirun to end the job: keepalives on the idle control connections.
  mpirun+=" --mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3"
  cat > "$state/env" <<EOF
export NETNS_HOSTFILE=$state/hostfile
export NETNS_MPIRUN="$mpirun"
export NETNS_HOSTS="${names% }"
export NETNS_LINKS="${links% }"
export NETNS_PREFIX=$prefix
export NETNS_STATE=$state
EOF
  cat "$state/env"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
  check) check ;;
  down) down ;;
  up | run)
    [ $# -ge 1 ] || die "usage: $0 $cmd H [--slots S]${cmd/up/}${cmd/run/ -- COMMAND...}"
    cluster_size --slots 1 "$@"  # hosts, per_host (slots), rest
    if [ "$cmd" = up ]; then
      up "$hosts" "$per_host"
      exit 0
    fi
    cluster_run "$hosts" "$per_host" "${rest[@]}"
    ;;
  *) die "usage: $0 run H [--slots S] -- COMMAND... | up H [--slots S] | down | check" ;;
esac
