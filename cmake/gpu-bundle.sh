#!/usr/bin/env bash
# Packs what a GPU machine needs to build and validate the CUDA plugin when it has nvcc 13, CMake,
# ninja and a C++ compiler but none of Debian's -dev packages: this source tree (tracked files and
# untracked ones git does not ignore) and deps/, the Debian packages the build needs (headers,
# CMake package files, libraries, protoc) fetched with `apt-get download` and unpacked with
# `dpkg -x`, plus this machine's cuDNN headers. Run it on a Debian 12 machine with apt (this build machine); it installs nothing.
#
#   cmake/gpu-bundle.sh [OUT.tar.gz]        default: build/conflux-gpu-bundle.tar.gz
#
# On the GPU machine (see DEVELOPERS.md):
#   tar xzf conflux-gpu-bundle.tar.gz && conflux-gpu/src/cmake/gpu-validate.sh conflux-gpu/deps
#
# The libraries are Debian 12's (glibc 2.36): the GPU machine needs that glibc or a newer one.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/build/conflux-gpu-bundle.tar.gz}
out=$(realpath -m "$out")

# What the build links or includes, and what those need, minus the C library and the compiler's
# own runtime (libstdc++, libgcc, libgomp), which the GPU machine's compiler brings.
# Debian's oneDNN is built with its OpenCL engine: its CMake package needs the OpenCL headers and
# loader too.
DEV_PACKAGES=(libeigen3-dev libdnnl-dev libboost-dev libboost-filesystem-dev libyaml-cpp-dev
              libprotobuf-dev protobuf-compiler zlib1g-dev libgtest-dev libgmock-dev
              opencl-headers ocl-icd-opencl-dev libbenchmark-dev)
KEEP='^(googletest|libbenchmark|libboost|libdnnl|libeigen3|libgmock|libgtest|libprotobuf|libprotoc|libyaml-cpp|protobuf-compiler|zlib1g|opencl-|ocl-icd-)'

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/conflux-gpu/src" "$work/conflux-gpu/deps" "$work/debs"

mapfile -t packages < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances "${DEV_PACKAGES[@]}" |
  grep -E '^[a-z0-9]' | grep -E "$KEEP" | sort -u)
echo "gpu-bundle: ${#packages[@]} packages: ${packages[*]}"
(cd "$work/debs" && apt-get download "${packages[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
count=0
for deb in "$work"/debs/*.deb; do
  dpkg -x "$deb" "$work/conflux-gpu/deps"
  count=$((count + 1))
done
if [ "$count" -ne "${#packages[@]}" ]; then
  echo "gpu-bundle: downloaded $count of ${#packages[@]} packages" >&2
  exit 1
fi
# Debian's dev symlinks are absolute (/usr/lib/...): make them relative so that the prefix moves.
find "$work/conflux-gpu/deps" -type l | while read -r link; do
  target=$(readlink "$link")
  case "$target" in
    /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$work/conflux-gpu/deps$target")" "$link" ;;
  esac
done

# cuDNN's headers (the plugin opens the library at run time; the GPU machine has its own).
cudnn_h=$(ls /usr/local/cuda/include/cudnn.h /usr/include/cudnn.h /usr/include/x86_64-linux-gnu/cudnn.h \
  2>/dev/null | head -1 || true)
if [ -z "$cudnn_h" ]; then
  echo "gpu-bundle: cudnn.h not found on this machine" >&2
  exit 1
fi
cp "$(dirname "$cudnn_h")"/cudnn*.h "$work/conflux-gpu/deps/usr/include/"

(cd "$src" && git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$work/conflux-gpu/src")
mkdir -p "$(dirname "$out")"
tar -C "$work" -czf "$out" conflux-gpu
echo "gpu-bundle: wrote $out ($(du -h "$out" | cut -f1))"
