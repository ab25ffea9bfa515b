#!/usr/bin/env bash
# Every committed sweep file (configs/sweeps/*.sweep) still parses, names a base config that
# exists, and gives every point overrides that `train --print-config` accepts (sweep.py
# --dry-run checks them before it prints anything): a config key renamed or a range narrowed
# later fails here, not hours into a sweep on another machine. A planted bad point is refused
# with FILE:LINE and the key, exit 2.
#   committed_sweeps.sh BUILD_DIR PYTHON
set -uo pipefail
build=$(cd "$1" && pwd) python=$2  # absolute: job_env.sh moves to a scratch directory
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=tests/job_env.sh
source "$here/job_env.sh"
SWEEP=("$python" "$root/tools/sweep.py" --build "$build")

count=0
for file in "$root"/configs/sweeps/*.sweep; do
  name=$(basename "$file" .sweep)
  # From the root: the sweep files' config paths are relative to it. OUT in the scratch directory.
  (cd "$root" && "${SWEEP[@]}" "configs/sweeps/$name.sweep" --dry-run --out "$tmp/$name") > "$name.dry" 2>&1 ||
    { cat "$name.dry"; fail "configs/sweeps/$name.sweep: dry run refused"; }
  [ -e "$tmp/$name" ] && fail "--dry-run of $name.sweep wrote $tmp/$name"
  grep -q "^# point " "$name.dry" || { cat "$name.dry"; fail "$name.sweep: no point listed"; }
  count=$((count + 1))
done
[ "$count" -ge 5 ] || fail "only $count sweep files found under configs/sweeps"
echo "ok: $count committed sweep files dry-run clean"

# The check itself: one of them with a misspelled key added as its last point.
sed "s#^config configs/#config $root/configs/#" "$root/configs/sweeps/de_en60.sweep" > planted.sweep
echo "point planted model.d_modle=3 train.max_updates=10" >> planted.sweep
line=$(wc -l < planted.sweep)
"${SWEEP[@]}" planted.sweep --dry-run --out "$tmp/planted" > planted.out 2>&1
rc=$?
[ "$rc" -eq 2 ] || { cat planted.out; fail "planted bad point: exit $rc, expected 2"; }
grep -q "planted.sweep:$line: point 'planted'.*model.d_modle" planted.out ||
  { cat planted.out; fail "planted bad point: no FILE:LINE and key in the message"; }
[ -e "$tmp/planted" ] && fail "a refused sweep wrote $tmp/planted"
echo "ok: a misspelled key in a point is refused at planted.sweep:$line"

# Two bad points: the points' configs resolve a few at a time, and the one named is still the
# first in file order (line 13, before the good ones), not whichever train exits first.
{ head -n 12 planted.sweep; echo "point first_bad model.d_modle=3 train.max_updates=10"; tail -n +13 planted.sweep; } > twice.sweep
"${SWEEP[@]}" twice.sweep --dry-run --out "$tmp/twice" > twice.out 2>&1
rc=$?
[ "$rc" -eq 2 ] || { cat twice.out; fail "two bad points: exit $rc, expected 2"; }
grep -q "twice.sweep:13: point 'first_bad'" twice.out ||
  { cat twice.out; fail "two bad points: the first in file order (twice.sweep:13) is not the one named"; }
echo "ok: of two bad points the first in file order is named (twice.sweep:13)"
