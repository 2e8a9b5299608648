#!/usr/bin/env bash
# cibuildwheel's before-all on Linux (manylinux_2_28 containers, AlmaLinux 8):
# builds the C++ dependencies that the image lacks from their release
# tarballs into /usr/local, as static PIC libraries, so the extension carries
# them inside (auditwheel then finds nothing to bundle). The images have
# cmake, make and curl. On macOS Homebrew's
# bottles are used instead (pyproject.toml [tool.cibuildwheel.macos]).
set -euo pipefail
ABSEIL=20240722.0
SIMDJSON=3.10.1
EIGEN=3.4.0
work=$(mktemp -d)
cd "$work"
fetch() { curl -fsSL --retry 3 -o "$1" "$2"; mkdir -p "${1%.tar.gz}"; tar -xzf "$1" -C "${1%.tar.gz}" --strip-components=1; }
fetch abseil.tar.gz "https://github.com/abseil/abseil-cpp/archive/refs/tags/${ABSEIL}.tar.gz"
fetch simdjson.tar.gz "https://github.com/simdjson/simdjson/archive/refs/tags/v${SIMDJSON}.tar.gz"
fetch eigen.tar.gz "https://gitlab.com/libeigen/eigen/-/archive/${EIGEN}/eigen-${EIGEN}.tar.gz"
common=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DBUILD_SHARED_LIBS=OFF
        -DCMAKE_INSTALL_PREFIX=/usr/local -DCMAKE_CXX_STANDARD=20)
cmake -S abseil -B abseil/build "${common[@]}" -DABSL_PROPAGATE_CXX_STD=ON -DABSL_BUILD_TESTING=OFF
cmake --build abseil/build --parallel --target install
cmake -S simdjson -B simdjson/build "${common[@]}" -DSIMDJSON_DEVELOPER_MODE=OFF
cmake --build simdjson/build --parallel --target install
cmake -S eigen -B eigen/build "${common[@]}" -DBUILD_TESTING=OFF -DEIGEN_BUILD_DOC=OFF
cmake --build eigen/build --target install
rm -rf "$work"
