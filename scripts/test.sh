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
# Hostile input: one clang build (the `fuzz` preset: ASan + UBSan with -fno-sanitize-recover, the
# library itself instrumented, plus libFuzzer coverage) runs the whole suite again, then every
# fuzz target for a bounded time on its committed corpus. EMBER_SANITIZE_CI=0 skips both;
# EMBER_FUZZ_SECONDS sets the time per target (default 20, at most 60). Each stage prints its
# time, so the CI log shows what the bound costs.
if [ "${EMBER_SANITIZE_CI:-1}" != 0 ]; then
  t0=$SECONDS
  echo "== sanitizers: build (build-fuzz, clang, ASan + UBSan)"
  cmake --preset fuzz >/dev/null
  # The library, the test binaries and the fuzz targets; the guide's example programs (which
  # only call the library the suite already covers) are left to the release run above.
  cmake --build build-fuzz -j "$jobs" --target ember_tests fuzz_make_corpus \
    $(scripts/fuzz.sh --list | sed 's/^/fuzz_/')
  echo "   built in $((SECONDS - t0)) s"
  t1=$SECONDS
  echo "== sanitizers: the whole suite (unit, jit, golden, vjp rules) under ASan + UBSan"
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-fuzz -j "$jobs" --output-on-failure -E '^doc_'
  echo "   ran in $((SECONDS - t1)) s"
  secs=${EMBER_FUZZ_SECONDS:-20}
  [ "$secs" -le 60 ] || secs=60
  t2=$SECONDS
  echo "== fuzzing: each target for ${secs} s on its corpus"
  scripts/fuzz.sh all "$secs"
  echo "   fuzzed in $((SECONDS - t2)) s"
fi
echo "all tests passed"
