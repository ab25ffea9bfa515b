#!/usr/bin/env bash
# docs/USAGE.md's key table is the one tools/config_keys.py generates from the code, and the
# check fails when it is not: a row removed (a key missing from the table), a default changed,
# and a key without a description comment.
#   config_keys_test.sh BUILD_DIR SOURCE_DIR PYTHON
set -uo pipefail
build=$1 src=$2 python=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
check() { "$python" "$src/tools/config_keys.py" --train "$build/trainer/train" --check "$@"; }
check || fail "docs/USAGE.md's key table is out of date: run python tools/config_keys.py"
grep -v '^| `eval.seed`' "$src/docs/USAGE.md" > "$tmp/missing_row.md"
out=$(check --usage "$tmp/missing_row.md" 2>&1) && fail "a table without eval.seed passed the check"
[[ $out == *"is not the generated one"* ]] || fail "no clear message for a missing row: $out"
sed 's/^| `eval.beam` | integer | `5`/| `eval.beam` | integer | `4`/' "$src/docs/USAGE.md" > "$tmp/changed.md"
cmp -s "$tmp/changed.md" "$src/docs/USAGE.md" && fail "the test's edit did not apply"
check --usage "$tmp/changed.md" > /dev/null 2>&1 && fail "a changed default passed the check"
echo "ok: the table is up to date; a missing row and a changed default each fail the check"
