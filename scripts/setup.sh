#!/usr/bin/env bash
# Installs the Debian 12 packages gradsync needs (only the missing ones: quick when done),
# then configures and builds into ${GRADSYNC_BUILD:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ make pkg-config libsimgrid-dev nlohmann-json3-dev libboost-graph-dev
          libopenmpi-dev openmpi-bin libgtest-dev libgmock-dev libcli11-dev libfmt-dev python3-matplotlib iproute2
          clang libclang-rt-14-dev  # clang and libFuzzer: the fuzz targets (scripts/fuzz.sh)
          zlib1g-dev python3-sklearn  # the training data: the UCI digits as scikit-learn ships them
          libtorch-dev libopenblas0-pthread)  # gradsync-train: libtorch (CPU), on OpenBLAS rather than the reference BLAS
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "gradsync setup: missing Debian packages: ${missing[*]}; run as root or install them with apt-get" >&2
    exit 2
  fi
  echo "gradsync setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build=${GRADSYNC_BUILD:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=${GRADSYNC_BUILD_TYPE:-RelWithDebInfo} \
      -DGRADSYNC_WITH_CUDA=${GRADSYNC_WITH_CUDA:-AUTO} ${GRADSYNC_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
