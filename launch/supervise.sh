#!/usr/bin/env bash
# Restarts a training job that ended with a fault, without a person: what torchrun's
# --max-restarts does for elastic jobs. Each rerun continues from the newest valid
# checkpoint (`--resume auto` is added unless the command already names --resume).
#
#   launch/supervise.sh [--max-restarts N] [--backoff S] [--max-backoff S] [--log FILE] -- COMMAND...
#
#   exit 0 of COMMAND   done: exit 0
#   COMMAND cannot start (no such file, a directory, not executable, not on PATH): refused
#                       before the first attempt, nothing started; exit 2, as for the
#                       supervisor's other command-line errors
#   exit 2 of COMMAND   bad input (config, data, checkpoint, command line: cli/exit_codes.h):
#                       never restarted, rerunning cannot fix it; exit 2
#   exit 126 / 127      the shell could not execute a program (126) or found none (127), e.g. a
#                       wrapper script's inner command or a missing #! interpreter: it fails
#                       the same way on every rerun; not restarted, exit 126 / 127
#   anything else       a fault (1: failed, may recur; 3: collective timeout or failure; 128+N
#                       and mpirun's own codes: a rank killed, a node lost): rerun after S
#                       seconds, S doubling up to --max-backoff; after N restarts give up with
#                       the last error and its exit code
# The codes are those of docs/USAGE.md's "Errors and exit codes" table and cli/exit_codes.h: only
# the codes that say "the same command can never succeed" end at once; every other code may
# be a fault that a rerun from the newest checkpoint gets past.
# SIGINT/SIGTERM to the supervisor go to the job, which is then not restarted.
set -uo pipefail
# shellcheck source=launch/common.sh
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/common.sh"  # beside it, also through a symlink
help_requested_then_exit "${BASH_SOURCE[0]}" "$@"
max_restarts=3 backoff=10 max_backoff=300 log=""
usage() { echo "usage: $0 [--max-restarts N] [--backoff S] [--max-backoff S] [--log FILE] -- COMMAND..." >&2; exit 2; }
is_count() { [[ $1 =~ ^(0|[1-9][0-9]*)$ ]]; }  # no leading zero: $((...)) would read 010 as octal
while [ $# -gt 0 ]; do
  case $1 in
    --max-restarts) [ $# -ge 2 ] && is_count "$2" || { echo "$0: --max-restarts needs a count >= 0, got '${2:-}'" >&2; exit 2; }
                    max_restarts=$2; shift 2 ;;
    --backoff) [ $# -ge 2 ] && is_count "$2" || { echo "$0: --backoff needs whole seconds >= 0, got '${2:-}'" >&2; exit 2; }
               backoff=$2; shift 2 ;;
    --max-backoff) [ $# -ge 2 ] && is_count "$2" || { echo "$0: --max-backoff needs whole seconds >= 0, got '${2:-}'" >&2; exit 2; }
                   max_backoff=$2; shift 2 ;;
    --log) [ $# -ge 2 ] || usage; log=$2; shift 2 ;;
    --) shift; break ;;
    --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;  # torchrun's --max-restarts=3 spelling
    *) echo "$0: error: unknown option '$1' (the command goes after --)" >&2; usage ;;
  esac
done
[ $# -ge 1 ] || usage
backoff=$((backoff > max_backoff ? max_backoff : backoff))  # --max-backoff caps the first wait too
cmd=("$@")
# The reason COMMAND cannot be started at all, or nothing. Checked once, before the first
# attempt: no backoff and no restart can make a missing program appear.
cannot_start() {
  local c=$1
  if [[ $c == */* ]]; then
    if [ ! -e "$c" ]; then echo "no such file"
    elif [ -d "$c" ]; then echo "is a directory, not a program"
    elif [ ! -x "$c" ]; then echo "not executable (no execute permission)"
    fi
  elif [ "$(type -t "$c")" != builtin ] && ! type -P "$c" > /dev/null; then
    echo "not found on PATH"
  fi
}
why=$(cannot_start "${cmd[0]}")
if [ -n "$why" ]; then
  echo "supervise: error: cannot start '${cmd[0]}': $why; nothing started, not restarting" >&2
  exit 2
fi
# The log must be a file we can append to: a job that runs for hours with no log is a loss.
if [ -n "$log" ] && { [ -d "$log" ] || ! : >> "$log"; } 2> /dev/null; then
  echo "supervise: error: --log $log: cannot append to it ($([ -d "$log" ] && echo "a directory" || echo "no such directory or no permission")); nothing started" >&2
  exit 2
fi
[ -n "$log" ] || log=$(mktemp "${TMPDIR:-/tmp}/supervise.XXXXXX.log")
say() { echo "supervise: $*" >&2; echo "supervise: $*" >> "$log"; }

child=0 stopping=0
forward() {
  stopping=1
  [ "$child" -gt 0 ] && kill -s "$1" "$child" 2> /dev/null
}
# A background job of a script ignores SIGINT, so Ctrl-C is passed on as SIGTERM (which
# train and mpirun both take as "stop cleanly").
trap 'forward TERM' INT
trap 'forward TERM' TERM
trap 'forward USR1' USR1

attempt=0 rc=0
while :; do
  attempt_log=$(mktemp "${TMPDIR:-/tmp}/supervise-attempt.XXXXXX")
  say "attempt $((attempt + 1)) (restarts left $((max_restarts - attempt))): ${cmd[*]}"
  start=$(date +%s)
  # stderr goes to the terminal as usual and into the attempt's log, for the last error.
  [ "$stopping" -eq 1 ] && { say "stopped by a signal before attempt $((attempt + 1))"; exit 130; }
  "${cmd[@]}" 2> >(tee "$attempt_log" >&2) &
  child=$!
  [ "$stopping" -eq 1 ] && kill -s TERM "$child" 2> /dev/null  # a signal that came while starting
  wait "$child"
  rc=$?
  # `wait` returns early when a trapped signal arrives: wait for the job itself to end.
  while kill -0 "$child" 2> /dev/null; do wait "$child"; rc=$?; done
  child=0
  sleep 0.2  # let tee write the job's last lines
  cat "$attempt_log" >> "$log"
  # Our own ": error: " line first; else what Open MPI said about the end of the job; else,
  # for a job that is not restarted, the first line it printed (a usage error's reason, the
  # shell's "command not found").
  last_error=$(grep -E ': error: ' "$attempt_log" | tail -1)
  [ -n "$last_error" ] || last_error=$(grep -E 'noticed that process|lost communication|Killed|ERROR' "$attempt_log" | tail -1)
  [ -n "$last_error" ] || case $rc in 2|126|127) last_error=$(grep -m1 . "$attempt_log") ;; esac
  rm -f "$attempt_log"
  elapsed=$(($(date +%s) - start))
  if [ "$rc" -eq 0 ]; then
    say "job finished after $((attempt + 1)) attempt(s), $attempt restart(s)"
    exit 0
  fi
  if [ "$stopping" -eq 1 ]; then
    say "stopped by a signal (exit $rc): not restarting"
    exit "$rc"
  fi
  # Exit codes a rerun cannot change end here, with the reason: 2 is the project's "bad input
  # refused" (cli/exit_codes.h kExitBadInput: config, data, checkpoint or command line, usage
  # errors included); 126/127 are the shell's "cannot execute" / "command not found" (the
  # program inside a wrapper, or a #! interpreter, is missing: it is missing next time too).
  if [ "$rc" -eq 2 ]; then
    say "exit 2 after ${elapsed} s: bad input, not restarting: ${cmd[*]}. ${last_error:-no error printed}"
    exit 2
  fi
  if [ "$rc" -eq 126 ] || [ "$rc" -eq 127 ]; then
    what="a program it runs was not found"
    [ "$rc" -eq 126 ] && what="a program it runs could not be executed"
    say "exit $rc after ${elapsed} s: ${what} (the shell's exit $rc), not restarting: ${cmd[*]}. ${last_error:-no error printed}"
    exit "$rc"
  fi
  if [ "$attempt" -ge "$max_restarts" ]; then
    say "giving up after $max_restarts restart(s): last exit $rc after ${elapsed} s. Last error: ${last_error:-none printed}"
    exit "$rc"
  fi
  attempt=$((attempt + 1))
  # Continue from the newest valid checkpoint from now on.
  has_resume=0
  for a in "${cmd[@]}"; do [[ $a == --resume || $a == --resume=* ]] && has_resume=1; done
  [ $has_resume -eq 1 ] || cmd+=(--resume auto)
  say "exit $rc after ${elapsed} s (${last_error:-no error printed}); restarting in ${backoff} s with --resume auto"
  sleep "$backoff" &
  child=$!
  wait "$child"
  child=0
  [ "$stopping" -eq 1 ] && { say "stopped by a signal during backoff"; exit "$rc"; }
  backoff=$((backoff * 2 > max_backoff ? max_backoff : backoff * 2))
done
