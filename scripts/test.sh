#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds (Release, ccache), runs every test, then
# installs ember into a scratch prefix and builds a downstream project against the installed
# package, with CMake's find_package and with pkg-config. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TESTS=ON >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build -j "$jobs" --output-on-failure

echo "== downstream: find_package(ember) against the installed package"
prefix="$PWD/build/_install"
rm -rf "$prefix" build/_downstream
cmake --install build --prefix "$prefix" >/dev/null
cmake -S tests/downstream -B build/_downstream -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build build/_downstream
LD_LIBRARY_PATH="$prefix/lib:${LD_LIBRARY_PATH:-}" build/_downstream/downstream

echo "== downstream: pkg-config"
pc_dir=$(dirname "$(find "$prefix" -name ember.pc | head -n1)")
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs ember)
# shellcheck disable=SC2086
c++ -o build/_downstream/pc_demo tests/downstream/pkgconfig_demo.cpp $flags
LD_LIBRARY_PATH="$prefix/lib:${LD_LIBRARY_PATH:-}" build/_downstream/pc_demo
echo "all tests passed"
