#!/usr/bin/env bash
# launch/bundle.sh makes a bundle that runs where none of our non-torch dependencies are
# installed: Open MPI's and PMIx's trees are hidden here in a private mount namespace, and
# mpirun -np 2 from the bundle runs the communicator tests. env.sh refuses another torch.
#   bundle_job.sh BUILD_DIR PYTHON   (skips, exit 77, where mount namespaces are not allowed)
set -uo pipefail
export NMTRAIN_BUILD=$1  # bundle.sh packs this build as it is
python=$2
root=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
unshare -m true 2> /dev/null || { echo "bundle_job: no mount namespaces here (needs root): skipped"; exit 77; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
bash "$root/launch/bundle.sh" "$tmp/bundle" > "$tmp/bundle.log" 2>&1 || { cat "$tmp/bundle.log"; fail "bundle.sh"; }
tail -2 "$tmp/bundle.log"
size=$(stat -c %s "$tmp/bundle.tar.gz")
[ "$size" -lt 40000000 ] || fail "bundle.tar.gz is $size bytes, over 40 MB"
cat > "$tmp/hidden.sh" <<SH
set -e
empty=\$(mktemp -d)
for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi /etc/openmpi; do
  [ -d \$d ] && mount --bind \$empty \$d
done
for f in /usr/bin/orted /usr/bin/orterun; do [ -e \$f ] && mount --bind /dev/null \$f; done
NMTRAIN_PYTHON=$python source $tmp/bundle/env.sh
ldd \$NMTRAIN_BUILD/trainer/train | grep "not found" && exit 1
# Every library resolves into the bundle, except glibc's, the C++ runtime's and torch's wheel.
outside=\$(ldd \$NMTRAIN_BUILD/trainer/train \$NMTRAIN_BUILD/eval/evaluate \$NMTRAIN_BUILD/data/preprocess |
  awk '\$2=="=>" && \$3 ~ /^\// {print \$3}' | sort -u | grep -v "^$tmp/bundle/lib/" | grep -v "/site-packages/" |
  grep -Ev '/(libc|libm|libdl|libpthread|librt|libutil|libresolv|libstdc\+\+|libgcc_s)\.so' || true)
[ -z "\$outside" ] || { echo "resolved outside the bundle: \$outside"; exit 1; }
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \$NMTRAIN_BUILD/tests/nmt_tests --gtest_filter='Communicator.*' --gtest_color=no
SH
out=$(unshare -m bash "$tmp/hidden.sh" 2>&1) || { echo "$out" | tail -20; fail "the bundle's mpirun with the system's Open MPI hidden"; }
[ "$(grep -c '\[  PASSED  \] 3 tests' <<<"$out")" = 2 ] || { echo "$out" | tail -20; fail "expected both ranks to pass 3 tests"; }
echo "ok: mpirun -np 2 from the bundle, system Open MPI and PMIx hidden: both ranks passed"
# env.sh refuses a torch of another version, by name, and a python without torch.
printf '#!/bin/sh\necho "/opt/fake/torch 9.9.9"\n' > "$tmp/fake_python"; chmod +x "$tmp/fake_python"
out=$(NMTRAIN_PYTHON=$tmp/fake_python bash -c "source $tmp/bundle/env.sh" 2>&1) && fail "env.sh accepted torch 9.9.9"
[[ $out == *"torch 9.9.9 at /opt/fake/torch, but this bundle was built against torch "* ]] || fail "env.sh version: $out"
out=$(NMTRAIN_PYTHON=/bin/false bash -c "source $tmp/bundle/env.sh" 2>&1) && fail "env.sh accepted a python without torch"
[[ $out == *"/bin/false cannot import torch"* ]] || fail "env.sh without torch: $out"
# bundle.sh never replaces a directory that is not an earlier bundle (a build tree, a home).
mkdir -p "$tmp/precious" && touch "$tmp/precious/keep"
out=$(bash "$root/launch/bundle.sh" "$tmp/precious/" 2>&1) && fail "bundle.sh replaced a directory that is not a bundle"
[[ $out == "bundle.sh: $tmp/precious exists and is not a bundle (no env.sh made by bundle.sh): choose another DIR" ]] || fail "bundle.sh refusal: $out"
[ -f "$tmp/precious/keep" ] || fail "bundle.sh removed a file of a directory it refused"
# ... even where that directory has an env.sh of its own (a user's project).
echo 'export PROJECT=mine' > "$tmp/precious/env.sh"
out=$(bash "$root/launch/bundle.sh" "$tmp/precious" 2>&1) && fail "bundle.sh replaced a directory with a foreign env.sh"
[[ $out == "bundle.sh: $tmp/precious exists and is not a bundle"* ]] && [ -f "$tmp/precious/keep" ] || fail "foreign env.sh: $out"
# Asking for help does nothing else; an option or a DIR whose parent is missing is refused.
bash "$root/launch/bundle.sh" --help | grep -q "bash launch/bundle.sh \[DIR\]" || fail "bundle.sh --help"
out=$(bash "$root/launch/bundle.sh" --frobnicate 2>&1); rc=$?
[ $rc = 2 ] && [[ $out == "bundle.sh: error: unknown option '--frobnicate'"* ]] || fail "bundle.sh option: exit $rc: $out"
out=$(bash "$root/launch/bundle.sh" "$tmp/no/such/dir" 2>&1); rc=$?
[ $rc = 2 ] && [[ $out == "bundle.sh: error: $tmp/no/such is not a directory"* ]] || fail "bundle.sh missing parent: exit $rc: $out"
# ... nor a DIR.tar.gz that does not hold a bundle (DIR itself absent).
echo precious > "$tmp/other.tar.gz"
out=$(bash "$root/launch/bundle.sh" "$tmp/other" 2>&1) && fail "bundle.sh replaced an archive that is not a bundle's"
[[ $out == "bundle.sh: $tmp/other.tar.gz exists and is not a bundle's archive"* ]] || fail "bundle.sh archive refusal: $out"
[ "$(cat "$tmp/other.tar.gz")" = precious ] && [ ! -e "$tmp/other" ] || fail "bundle.sh touched what it refused"
# A given NMTRAIN_BUILD that is not a build tree: refused, exit 2, nothing written.
for b in /no/such/build "$tmp/precious"; do
  out=$(NMTRAIN_BUILD=$b bash "$root/launch/bundle.sh" "$tmp/fromb" 2>&1); rc=$?
  [ $rc = 2 ] && [[ $out == "bundle.sh: NMTRAIN_BUILD=$b "* ]] && [ ! -e "$tmp/fromb" ] || fail "NMTRAIN_BUILD=$b: exit $rc: $out"
done
# NMTRAIN_NCCL_LIB without a libnccl.so.2: refused, exit 2, nothing written.
out=$(NMTRAIN_NCCL_LIB=$tmp/precious bash "$root/launch/bundle.sh" "$tmp/fromn" 2>&1); rc=$?
[ $rc = 2 ] && [[ $out == "bundle.sh: NMTRAIN_NCCL_LIB=$tmp/precious has no libnccl.so.2"* ]] && [ ! -e "$tmp/fromn" ] ||
  fail "NMTRAIN_NCCL_LIB without the library: exit $rc: $out"
# An earlier bundle's archive alone (its directory removed) is replaced. This one carries an
# NCCL of its own (launch/build_nccl.sh's, here the wheel's copy): with env.sh sourced, the
# executables load it from the bundle, not from torch's wheel.
mkdir "$tmp/re" && tar -C "$tmp/re" -xzf "$tmp/bundle.tar.gz" \
  && mv "$tmp/re/bundle" "$tmp/re/again" && tar -C "$tmp/re" -czf "$tmp/again.tar.gz" again && rm -rf "$tmp/re"
nccl=$("$python" -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))') || fail "no nvidia.nccl in $python"
NMTRAIN_NCCL_LIB=$nccl bash "$root/launch/bundle.sh" "$tmp/again" > "$tmp/again.log" 2>&1 || { cat "$tmp/again.log"; fail "bundle.sh refused its own archive"; }
got=$(NMTRAIN_PYTHON=$python bash -c "source $tmp/again/env.sh && ldd \$NMTRAIN_BUILD/trainer/train" | awk '$1 == "libnccl.so.2" {print $3}')
if ldd "$NMTRAIN_BUILD/trainer/train" | grep -q libnccl; then  # a build with the NCCL backend
  [ "$got" = "$tmp/again/lib/libnccl.so.2" ] || fail "with NMTRAIN_NCCL_LIB the trainer loads libnccl.so.2 from '$got', not the bundle"
  echo "ok: a bundle's own NCCL is the one its executables load"
fi
echo "bundle_job: ok"
