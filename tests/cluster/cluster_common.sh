# shellcheck shell=bash
# Sourced by netns_cluster.sh and slurm_cluster.sh: the argument parsing and the `run` verb
# their `up` and `run` share. The sourcing script defines die MESSAGE, up HOSTS PER_HOST
# (prints the env lines to eval) and down.

# cluster_size OPTION DEFAULT H [OPTION N] [REST...]: sets hosts=H, per_host=N (DEFAULT
# without OPTION) and the array rest=(REST...). Checks no value: the caller does.
cluster_size() {
  local option=$1
  per_host=$2 hosts=$3
  shift 3
  if [ "${1:-}" = "$option" ]; then
    [ $# -ge 2 ] || die "$option needs a value"
    per_host=$2
    shift 2
  fi
  rest=("$@")
}

# cluster_run HOSTS PER_HOST [--] COMMAND...: brings the cluster up, runs COMMAND in its
# env, always tears it down, and exits with COMMAND's status (130 if interrupted).
cluster_run() {
  local hosts=$1 per_host=$2 env_lines
  shift 2
  [ "${1:-}" = "--" ] && shift
  [ $# -ge 1 ] || die "run: no command after --"
  # Torn down on every exit path, a failed or interrupted command included.
  trap down EXIT
  trap 'exit 130' INT TERM
  env_lines=$(up "$hosts" "$per_host") || exit $?
  eval "$env_lines"
  set +e
  "$@"
  exit $?
}
