# Sourced by the launch scripts (and tests/runners/gpu_smoke.sh): the checks and steps they share.

# help_requested_then_exit SCRIPT ARGS...: on -h or --help, prints SCRIPT's header comment (its
# usage and the variables it reads) and exits 0, so that asking for help never does work.
help_requested_then_exit() {
  local script=$1; shift
  case ${1:-} in
    -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$script"; exit 0 ;;
  esac
}

# require_switch SCRIPT NAME VALUE: an on/off environment variable must be 0 or 1; anything
# else (true, yes, false) is refused with exit 2 rather than read as one of them by accident.
require_switch() {
  case $3 in
    0 | 1) ;;
    *) echo "$1: error: $2 must be 0 or 1, got '$3'" >&2; exit 2 ;;
  esac
}

# load_build_env SCRIPT ROOT [TARGETS]: installs and builds (launch/build.sh; only TARGETS when
# given, "preprocess train ...") and loads the environment
# it prints; a failed build ends SCRIPT with exit 1 naming it, instead of going on with
# whatever binaries an earlier build left.
load_build_env() {
  local lines rc=0
  lines=$(BUILD_TARGETS=${3:-${BUILD_TARGETS:-}} bash "$2/launch/build.sh") || rc=$?
  [ $rc = 0 ] || { echo "$1: error: launch/build.sh failed (exit $rc): see its messages above" >&2; exit 1; }
  eval "$lines"
}
