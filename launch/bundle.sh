#!/usr/bin/env bash
# Packs this build for a GPU machine that has Python with the CUDA torch wheel of our pinned
# version (LibTorch, cuBLAS, cuDNN and NCCL come from it) but none of our other dependencies:
# no Open MPI, HDF5, yaml-cpp, SentencePiece or oneDNN.
#   bash launch/bundle.sh [DIR]        (default: bundle/ in the repository)
# writes DIR and DIR.tar.gz (about 22 MB) to copy to the target. DIR holds, stripped:
#   build/...   our executables, at the paths they have in a build tree (NMTRAIN_BUILD);
#   lib/        every shared library they load that is neither glibc's nor the C++ runtime's
#               nor torch's (HDF5, yaml-cpp, SentencePiece, CUDA's runtime, ...). Not oneDNN
#               (38 MB, opened only for CPU products): there the CPU path multiplies with MKL
#               (train.gemm auto picks MKL, and train.precision=bf16 on a CPU is refused);
#   ompi/, pmix/  Open MPI's and PMIx's trees (mpirun, orted, plugins, help texts), relocated;
#   lib/libnccl.so.2  only with NMTRAIN_NCCL_LIB (launch/build_nccl.sh's output, the NCCL pinned
#               in versions.env): loaded instead of the torch wheel's, for dist.shared_gpu=allow;
#   env.sh      `source DIR/env.sh` on the target: finds torch through python3 (or
#               $NMTRAIN_PYTHON), refuses another torch version, and sets LD_LIBRARY_PATH,
#               OPAL_PREFIX, PATH, NMTRAIN_BUILD and NMTRAIN_VENV for the scripts (gpu_check.sh,
#               bench/compare) and the executables.
# The target's glibc and libstdc++ must be at least this machine's (Debian 12: glibc 2.36, GCC 12).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=launch/common.sh
source "$root/launch/common.sh"
help_requested_then_exit "${BASH_SOURCE[0]}" "$@"
[ $# -le 1 ] || { echo "bundle.sh: error: takes one DIR at most, got $#: $*" >&2; exit 2; }
[[ ${1:-} != -* ]] || { echo "bundle.sh: error: unknown option '$1' (usage: bash launch/bundle.sh [DIR])" >&2; exit 2; }
out=$(realpath -ms -- "${1:-$root/bundle}")
[ -d "$(dirname "$out")" ] || { echo "bundle.sh: error: $(dirname "$out") is not a directory: DIR's parent must exist" >&2; exit 2; }
# An earlier bundle is told by the first line bundle.sh writes into its env.sh, not by the
# file's name alone: a project of the user's may well hold an env.sh of its own.
readonly marker='Made by launch/bundle.sh'
# Replacing DIR is allowed only where it is an earlier bundle: never a build tree or a home.
if [ -e "$out" ] && ! grep -qs "$marker" "$out/env.sh"; then
  echo "bundle.sh: $out exists and is not a bundle (no env.sh made by bundle.sh): choose another DIR" >&2; exit 2
fi
# The same for DIR.tar.gz: replaced only beside an earlier bundle, or where it holds one.
if [ -e "$out.tar.gz" ] && ! grep -qs "$marker" "$out/env.sh" \
  && ! { tar -xzOf "$out.tar.gz" -- "$(basename "$out")/env.sh" 2> /dev/null | grep -q "$marker"; }; then
  echo "bundle.sh: $out.tar.gz exists and is not a bundle's archive (no $(basename "$out")/env.sh made by bundle.sh in it): choose another DIR" >&2
  exit 2
fi
# NMTRAIN_BUILD set: pack that build as it is (the tests do); else build this checkout first.
given_build=${NMTRAIN_BUILD:-}
if [ -z "$given_build" ]; then
  load_build_env bundle.sh "$root"
elif [ ! -d "$given_build" ]; then
  echo "bundle.sh: NMTRAIN_BUILD=$given_build is not a directory (unset it to build this checkout)" >&2; exit 2
fi
build=$NMTRAIN_BUILD
nccl_lib=${NMTRAIN_NCCL_LIB:-}
if [ -n "$nccl_lib" ] && [ ! -f "$nccl_lib/libnccl.so.2" ]; then
  echo "bundle.sh: NMTRAIN_NCCL_LIB=$nccl_lib has no libnccl.so.2 (launch/build_nccl.sh prints the directory to give)" >&2; exit 2
fi
# shellcheck source=versions.env
source "$root/launch/versions.env"
executables=(trainer/train trainer/average eval/evaluate eval/translate data/preprocess tests/nmt_tests bench/gemm)
for e in "${executables[@]}"; do
  if [ ! -x "$build/$e" ] && [ -n "$given_build" ]; then
    echo "bundle.sh: NMTRAIN_BUILD=$build has no $e: not a complete build tree" >&2; exit 2
  fi
  [ -x "$build/$e" ] || { echo "bundle.sh: $build/$e is missing: the build did not make it" >&2; exit 1; }
done
ompi_path() { ompi_info --path "$1" --parsable | awk -F: '{print $NF}'; }
ompi_plugins=$(ompi_path pkglibdir) ompi_help=$(ompi_path pkgdatadir)  # /usr/lib/.../openmpi/lib/openmpi3, /usr/share/openmpi
[ "$(ompi_path prefix)" = /usr ] || { echo "bundle.sh: Open MPI's prefix is $(ompi_path prefix), not Debian's /usr" >&2; exit 1; }
pmix_root=/usr/lib/x86_64-linux-gnu/pmix2
for d in "$ompi_plugins" "$ompi_help" "$pmix_root/lib/pmix"; do
  [ -d "$d" ] || { echo "bundle.sh: $d is missing: Open MPI or PMIx is not installed as Debian lays it out" >&2; exit 1; }
done

tmp=$(mktemp -d "$(dirname "$out")/.bundle.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lib" "$tmp/ompi/bin" "$tmp/ompi${ompi_plugins#/usr}" "$tmp/ompi/share" "$tmp/pmix/lib" "$tmp/pmix/share"
for e in "${executables[@]}"; do
  mkdir -p "$tmp/build/$(dirname "$e")"
  strip -o "$tmp/build/$e" "$build/$e"
done

# Libraries the target supplies itself: glibc's, the C++ runtime, and torch's wheel (LibTorch,
# CUDA's maths libraries, cuDNN, NCCL, libgomp).
provided='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libutil\.|libresolv\.|libstdc\+\+|libgcc_s|libtorch|libc10|libgomp|libcu(blas|dnn|fft|file|pti|rand|solver|sparse)|libnv|libnccl|libcaffe2|libshm)'
needed() {  # the resolved paths of the shared libraries FILE... load, minus the provided ones
  ldd "$@" 2>/dev/null | awk '$2=="=>" && $3 ~ /^\// {print $1, $3}' | grep -Ev "$provided" | awk '{print $2}' | sort -u
}
mpi_plugins=("$ompi_plugins"/*.so "$pmix_root"/lib/pmix/*.so)
for f in $(needed "${executables[@]/#/$build/}" "${mpi_plugins[@]}" /usr/bin/orted /usr/bin/orterun); do
  strip --strip-unneeded -o "$tmp/lib/$(basename "$f")" "$f"
done
# The pinned NCCL, first on LD_LIBRARY_PATH (env.sh): our executables name libnccl.so.2
# themselves, so it is loaded before libtorch_cuda asks for its own by the same name.
[ -z "$nccl_lib" ] || cp -L "$nccl_lib/libnccl.so.2" "$tmp/lib/libnccl.so.2"
# Open MPI relocated under OPAL_PREFIX: its compiled-in layout below the prefix (/usr), kept.
cp /usr/bin/orted /usr/bin/orterun "$tmp/ompi/bin/"
ln -s orterun "$tmp/ompi/bin/mpirun"
cp -r "$ompi_plugins"/. "$tmp/ompi${ompi_plugins#/usr}/"
cp -r "$ompi_help" "$tmp/ompi/share/"
[ -f /etc/openmpi/openmpi-mca-params.conf ] && cp /etc/openmpi/openmpi-mca-params.conf "$tmp/ompi/"
cp -r "$pmix_root/lib/pmix" "$tmp/pmix/lib/"
cp -r "$pmix_root/share/pmix" "$tmp/pmix/share/"
strip --strip-unneeded "$tmp/ompi${ompi_plugins#/usr}"/*.so "$tmp"/pmix/lib/pmix/*.so

cat > "$tmp/env.sh" <<EOF
# Source this on the target: \`source $(basename "$out")/env.sh\`. Made by launch/bundle.sh.
_b=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)
_py=\${NMTRAIN_PYTHON:-python3}
_torch=\$("\$_py" -c 'import os, torch; print(os.path.dirname(torch.__file__), torch.__version__)' 2>/dev/null) || {
  echo "bundle env.sh: \$_py cannot import torch: install torch==$TORCH_VERSION (a CUDA wheel) or set NMTRAIN_PYTHON" >&2; return 1; }
_torch_dir=\${_torch% *} _torch_version=\${_torch#* }
case \$_torch_version in
  $TORCH_VERSION|$TORCH_VERSION+*) ;;
  *) echo "bundle env.sh: torch \$_torch_version at \$_torch_dir, but this bundle was built against torch $TORCH_VERSION" >&2; return 1 ;;
esac
_site=\$(dirname "\$_torch_dir")
_nvidia=\$(ls -d "\$_site"/nvidia/*/lib 2>/dev/null | tr '\n' ':')
export LD_LIBRARY_PATH="\$_b/lib:\$_torch_dir/lib:\${_nvidia}\${LD_LIBRARY_PATH:-}"
export OPAL_PREFIX="\$_b/ompi" PATH="\$_b/ompi/bin:\$PATH"
export OMPI_MCA_mca_base_param_files="\$_b/ompi/openmpi-mca-params.conf"
export PMIX_MCA_mca_base_component_path="\$_b/pmix/lib/pmix" PMIX_INSTALL_PREFIX="\$_b/pmix"
# PMIx (4.2) loads its plugins from the build machine's path whatever the variables above say;
# a target with another PMIx there fails to load its compression plugin, and every process
# then printed three lines of dlopen errors and a banner. Compression serves only large
# start-up data of big jobs: it is left out, and its warning with it.
export PMIX_MCA_pcompress="^zlib" PMIX_MCA_pcompress_base_silence_warning=1
export NMTRAIN_BUILD="\$_b/build" NMTRAIN_VENV=\$("\$_py" -c 'import sys; print(sys.prefix)')
export NMTRAIN_PYTHON=\$("\$_py" -c 'import sys; print(sys.executable)')  # the scripts run this one
unset _b _py _torch _torch_dir _torch_version _site _nvidia
EOF
rm -rf "$out" "$out.tar.gz"
mv "$tmp" "$out"
trap - EXIT
tar -C "$(dirname "$out")" -czf "$out.tar.gz" -- "$(basename "$out")"
echo "bundle.sh: $out ($(du -sh "$out" | cut -f1)) and $out.tar.gz ($(stat -c %s "$out.tar.gz" | awk '{printf "%.1f MB", $1/1e6}'))"
echo "bundle.sh: on the target: tar xzf $(basename "$out").tar.gz && source $(basename "$out")/env.sh"
