#!/usr/bin/env bash
# Installs every build, test and data dependency of Conflux from Debian's archive, and the
# packages named as arguments (cmake/fuzz.sh adds clang's).
# Idempotent: packages already present are skipped without touching apt.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libeigen3-dev libdnnl-dev libboost-dev libboost-filesystem-dev
  libyaml-cpp-dev libprotobuf-dev protobuf-compiler zlib1g-dev
  libopenmpi-dev openmpi-bin
  opencl-headers ocl-icd-opencl-dev pocl-opencl-icd
  libgtest-dev libgmock-dev libbenchmark-dev python3-numpy
  dataset-fashion-mnist
  "$@"
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "conflux: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
