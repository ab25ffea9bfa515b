#!/usr/bin/env bash
# Builds the NCCL pinned in launch/versions.env (NCCL_VERSION) from its source, for the GPU
# architectures named, to load instead of the torch wheel's own (2.28): 2.30 added the opt-in
# that lets several ranks share one GPU (dist.shared_gpu=allow, launch/gpu_check.sh). CPU users
# and one-rank-per-GPU jobs need none of this.
#   bash launch/build_nccl.sh [SOURCE]
# SOURCE: NCCL's source at tag v$NCCL_VERSION, a directory or a .tar.gz (default: downloaded
#   from github.com/NVIDIA/nccl). Its makefiles/version.mk must say NCCL_VERSION.
# NCCL_ARCHS: the compute capabilities to build for (default "90": H100, H200; "80 90" adds
#   A100); one architecture keeps the library near 40 MB instead of NVIDIA's 220 MB.
# Writes $NMTRAIN_CACHE/nccl-$NCCL_VERSION-sm<ARCHS>/lib/libnccl.so.2 (default cache
# ~/.cache/nmtrain) and prints that lib directory last. Put it first on LD_LIBRARY_PATH, or
# give it to launch/bundle.sh as NMTRAIN_NCCL_LIB, which packs it into the bundle's lib/.
# Needs nvcc (CUDA_HOME, default /usr/local/cuda), make, a C++ compiler and python3.
# Run again, it reuses a finished build.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=launch/common.sh
source "$root/launch/common.sh"
help_requested_then_exit "${BASH_SOURCE[0]}" "$@"
me=build_nccl.sh
die() { echo "$me: error: $*" >&2; exit 2; }
[ $# -le 1 ] || die "takes one SOURCE at most, got $#: $*"
# shellcheck source=versions.env
source "$root/launch/versions.env"
read -r -a archs <<< "${NCCL_ARCHS:-90}"
[ ${#archs[@]} -gt 0 ] || die "NCCL_ARCHS is empty: name compute capabilities such as 90"
gencode=()
for a in "${archs[@]}"; do
  [[ $a =~ ^[1-9][0-9]{1,2}[a-z]?$ ]] || die "NCCL_ARCHS: '$a' is not a compute capability such as 80, 90 or 90a"
  gencode+=("-gencode=arch=compute_$a,code=sm_$a")
done
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -x "$cuda/bin/nvcc" ] || die "no nvcc at $cuda/bin/nvcc (set CUDA_HOME to the CUDA toolkit)"
cache=${NMTRAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nmtrain}
out=$cache/nccl-$NCCL_VERSION-sm$(IFS=_; echo "${archs[*]}")
if [ -f "$out/lib/libnccl.so.2" ]; then
  echo "$me: $out/lib/libnccl.so.2 is already built"
  echo "$out/lib"; exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=${1:-}
if [ -z "$src" ]; then
  url=https://github.com/NVIDIA/nccl/archive/refs/tags/v$NCCL_VERSION.tar.gz
  echo "$me: downloading $url"
  curl -fsSL "$url" -o "$work/nccl.tar.gz" || die "cannot download $url (give SOURCE, a copy of that tag)"
  src=$work/nccl.tar.gz
fi
given=$src
mkdir "$work/src"
if [ -f "$src" ]; then
  tar -xzf "$src" -C "$work/src" --strip-components=1 2> /dev/null || die "SOURCE '$given' is not a .tar.gz of NCCL's source"
elif [ -d "$src" ]; then
  cp -r "$src/." "$work/src/"  # built in a copy: the user's checkout stays as it was
else
  die "SOURCE '$given' is neither a directory nor a file"
fi
src=$work/src
version_mk=$src/makefiles/version.mk
[ -f "$version_mk" ] || die "SOURCE '$given' has no makefiles/version.mk: not NCCL's source"
got=$(awk '/^NCCL_(MAJOR|MINOR|PATCH)/ {v = v (v ? "." : "") $3} END {print v}' "$version_mk")
[ "$got" = "${NCCL_VERSION%-*}" ] || die "SOURCE is NCCL $got, but launch/versions.env pins NCCL_VERSION=$NCCL_VERSION"

echo "$me: building NCCL $got for sm ${archs[*]} with $(nproc) jobs (about 25 minutes on 2 cores for one architecture)"
make -C "$src" -j"$(nproc)" src.build CUDA_HOME="$cuda" NVCC_GENCODE="${gencode[*]}" \
  BUILDDIR="$work/out" > "$work/make.log" 2>&1 || { tail -20 "$work/make.log"; die "NCCL's build failed (log above)"; }
mkdir -p "$out.tmp/lib" "$out.tmp/include"
strip --strip-unneeded -o "$out.tmp/lib/libnccl.so.$got" "$work/out/lib/libnccl.so.$got"
ln -s "libnccl.so.$got" "$out.tmp/lib/libnccl.so.2"
cp "$work/out/include/"*.h "$out.tmp/include/"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$me: $out/lib/libnccl.so.2 ($(du -m "$out/lib/libnccl.so.$got" | cut -f1) MB)"
echo "$out/lib"
