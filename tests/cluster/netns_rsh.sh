#!/usr/bin/env bash
# Open MPI's remote-shell agent for tests/cluster/netns_cluster.sh (plm_rsh_agent):
# where ssh would log into HOST, this runs the command inside HOST's network namespace,
# with HOST as its hostname and a mount namespace of its own, as ssh would run it there.
# If the cluster's state directory holds `setup-HOST.sh`, it runs first, inside those
# namespaces: tests use it to give one host a different view of the filesystem (a
# storage that is not shared), as separate machines would have.
#   netns_rsh.sh [ssh-style options] HOST COMMAND...
set -euo pipefail
while [ $# -gt 0 ] && [[ $1 == -* ]]; do shift; done  # Open MPI may pass ssh flags (-x)
[ $# -ge 2 ] || { echo "netns_rsh: usage: $0 HOST COMMAND..." >&2; exit 2; }
host=$1
shift
ip netns list | awk '{print $1}' | grep -qx "$host" || { echo "netns_rsh: no namespace '$host'" >&2; exit 255; }
setup=/run/${NETNS_PREFIX:-nmt}-netns-cluster/setup-$host.sh
exec ip netns exec "$host" unshare --uts --mount /bin/sh -c \
  'hostname "$0" && { [ ! -f "$1" ] || . "$1"; } && exec /bin/sh -c "$2"' "$host" "$setup" "$*"
