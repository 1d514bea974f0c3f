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
# Hostile input, in one clang build of its own (build-fuzz, the `fuzz` preset: ASan + UBSan with
# -fno-sanitize-recover, the library itself instrumented, plus libFuzzer's coverage): tests under
# the sanitizers with leak detection on, then every fuzz target for a bounded time on its
# committed corpus. One instrumented build serves both stages (a second instrumented library
# would cost a 2-core machine another ~8 minutes). By default the tests are a subset,
# ember_sanitize_tests: the hostile-input, store, data, optim, train and core tensor tests (see
# tests/CMakeLists.txt); docs/errors.md, "Sanitizers and fuzzing", has what each choice costs.
# EMBER_SANITIZE_CI=all runs the whole suite under the sanitizers instead, =0 skips both stages;
# EMBER_FUZZ_SECONDS sets the time per target (default 10, at most 60). Each stage prints its time.
EMBER_SANITIZE_CI=${EMBER_SANITIZE_CI:-1}
if [ "$EMBER_SANITIZE_CI" != 0 ]; then
  t0=$SECONDS
  echo "== sanitizers: build (build-fuzz: clang, ASan + UBSan, the library instrumented)"
  scripts/fuzz.sh --build
  if [ "$EMBER_SANITIZE_CI" = all ]; then what=all; else what=ember_sanitize_tests; fi
  cmake --build build-fuzz -j "$jobs" --target "$what"
  echo "   built in $((SECONDS - t0)) s"
  t1=$SECONDS
  if [ "$what" = all ]; then
    echo "== sanitizers: the whole suite under ASan + UBSan"
    scripts/sanitize_tests.sh build-fuzz all
  else
    echo "== sanitizers: hostile, store, data, optim, train and core tests under ASan + UBSan"
    scripts/sanitize_tests.sh build-fuzz
  fi
  echo "   ran in $((SECONDS - t1)) s"
  secs=${EMBER_FUZZ_SECONDS:-10}
  [ "$secs" -le 60 ] || secs=60
  t2=$SECONDS
  echo "== fuzzing: each target for ${secs} s on its corpus"
  scripts/fuzz.sh all "$secs"
  echo "   fuzzed in $((SECONDS - t2)) s"
fi
echo "all tests passed"
