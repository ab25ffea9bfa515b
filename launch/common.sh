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

# Resumable steps (a step skipped when its output is there) record what made that output, in
# OUTPUT.made-of: one line per input (by content: "mono sha256:<hash>") and per setting
# ("decode --beam 5"). A rerun whose record differs never reuses the output in silence.
# file_digest FILE: "sha256:<hash>" of the file's bytes.
file_digest() { echo "sha256:$(sha256sum -- "$1" | cut -d' ' -f1)"; }

# step_done SCRIPT OUTPUT RECORD: 0 when OUTPUT exists and was made from RECORD (skip the step);
# 1 when OUTPUT does not exist (do it). OUTPUT made from something else, or without a record,
# ends SCRIPT with exit 2 naming what changed, and nothing is deleted.
step_done() {
  local script=$1 out=$2 record=$3 changed
  [ -e "$out" ] || return 1
  [ -f "$out.made-of" ] || {
    echo "$script: error: $out exists without $out.made-of, the record of what made it: remove $out to redo the step, or set another WORK" >&2
    exit 2
  }
  [ "$(cat "$out.made-of")" = "$record" ] && return 0
  changed=$(diff <(printf '%s\n' "$record") "$out.made-of" | sed -n 's/^< //p' | cut -d' ' -f1 | sort -u | paste -sd, -)
  echo "$script: error: $out was made from other inputs or settings (changed: ${changed:-the list of inputs}; $out.made-of has what made it): remove $out to redo the step, or set another WORK" >&2
  exit 2
}

# step_made OUTPUT RECORD: after the step wrote OUTPUT, what made it.
step_made() { printf '%s\n' "$2" > "$1.made-of.tmp" && mv "$1.made-of.tmp" "$1.made-of"; }
