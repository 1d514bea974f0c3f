#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds (Release, ccache), runs every test, then
# installs ember into a scratch prefix and builds a downstream project against the installed
# package, with CMake's find_package and with pkg-config. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/node-deps.sh  # onnxruntime-node: the onnxruntime_outputs test, the onnx bench peer
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TESTS=ON >/dev/null
cmake --build build -j "$jobs"
echo "== wasm: ember's WebAssembly modules (the web_browser test runs them in chromium)"
scripts/wasm.sh
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
# ember.pc states C++20 as the minimum and pushes no -std: a C++23 consumer stays C++23, and a
# -Wall -Wextra -Werror consumer builds (designated initializers leave no field uninitialised).
c++ -std=c++23 -Wall -Wextra -Werror -o build/_downstream/pc_demo tests/downstream/pkgconfig_demo.cpp $flags
LD_LIBRARY_PATH="$prefix/lib:${LD_LIBRARY_PATH:-}" build/_downstream/pc_demo
# The C ABI from a C99 program, with the same flags (the header is installed with the rest).
cc -std=c99 -Wall -Wextra -Werror -pedantic -o build/_downstream/c_demo tests/downstream/c_demo.c $flags
LD_LIBRARY_PATH="$prefix/lib:${LD_LIBRARY_PATH:-}" build/_downstream/c_demo
# Hostile input, in one clang build of its own (build-fuzz, the `fuzz` preset: ASan + UBSan with
# -fno-sanitize-recover, the library itself instrumented, plus libFuzzer's coverage): tests under
# the sanitizers with leak detection on, then every fuzz target for a bounded time on its
# committed corpus. One instrumented build serves both stages (a second instrumented library
# would cost a 2-core machine another ~8 minutes). By default the tests are the whole unit suite
# (ctest's `unit`: every test but the PyTorch goldens, the JIT process tests and cuda, split into
# one shard per core); docs/errors.md, "Sanitizers and fuzzing", has what each choice costs.
# EMBER_SANITIZE_CI=subset runs only ember_sanitize_tests (the hostile-input, store, data, optim,
# train and core tensor tests), =all the whole suite with goldens and the guide's examples, =0
# skips both stages; EMBER_FUZZ_SECONDS sets the time per target (default 6, at most 60). Each
# stage prints its time.
EMBER_SANITIZE_CI=${EMBER_SANITIZE_CI:-unit}
[ "$EMBER_SANITIZE_CI" = 1 ] && EMBER_SANITIZE_CI=unit
if [ "$EMBER_SANITIZE_CI" != 0 ]; then
  t0=$SECONDS
  echo "== sanitizers: build (build-fuzz: clang, ASan + UBSan, the library instrumented)"
  scripts/fuzz.sh --build
  case "$EMBER_SANITIZE_CI" in
    all) what=all ;;
    subset) what=ember_sanitize_tests ;;
    unit) what=ember_tests ;;
    *) echo "EMBER_SANITIZE_CI=$EMBER_SANITIZE_CI: expected unit, subset, all or 0" >&2; exit 2 ;;
  esac
  cmake --build build-fuzz -j "$jobs" --target "$what"
  echo "   built in $((SECONDS - t0)) s"
  t1=$SECONDS
  case "$EMBER_SANITIZE_CI" in
    all) echo "== sanitizers: the whole suite under ASan + UBSan"
         scripts/sanitize_tests.sh build-fuzz all ;;
    subset) echo "== sanitizers: hostile, store, data, optim, train and core tests under ASan + UBSan"
            scripts/sanitize_tests.sh build-fuzz ;;
    unit) echo "== sanitizers: the unit suite under ASan + UBSan"
          scripts/sanitize_tests.sh build-fuzz unit ;;
  esac
  echo "   ran in $((SECONDS - t1)) s"
  secs=${EMBER_FUZZ_SECONDS:-6}
  [ "$secs" -le 60 ] || secs=60
  t2=$SECONDS
  echo "== fuzzing: each target for ${secs} s on its corpus"
  scripts/fuzz.sh all "$secs"
  echo "   fuzzed in $((SECONDS - t2)) s"
fi
echo "all tests passed"
