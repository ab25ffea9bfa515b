#!/usr/bin/env bash
# --print-config prints YAML that loads back to the same configuration: print, load the
# printout with an override that changes nothing, print again, compare.
set -euo pipefail
exe=$1 config=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$exe" --config "$config" --print-config model.d_model=256 optim.eps=1e-9 > "$tmp/a.yaml"
"$exe" --config "$tmp/a.yaml" --print-config > "$tmp/b.yaml"
diff -u "$tmp/a.yaml" "$tmp/b.yaml"
grep -q "d_model: 256" "$tmp/b.yaml"
echo "print-config round trip: identical ($(wc -l < "$tmp/a.yaml") lines)"
