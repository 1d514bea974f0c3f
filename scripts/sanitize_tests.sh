#!/usr/bin/env bash
# Runs ember's tests under AddressSanitizer + UndefinedBehaviorSanitizer, leak detection on, in a
# build configured with EMBER_SANITIZE (presets `fuzz` and `asan`; the library is instrumented too).
#   scripts/sanitize_tests.sh BUILD_DIR        ember_sanitize_tests: the hostile-input, store,
#                                              data, optim, train and core tensor tests (CI)
#   scripts/sanitize_tests.sh BUILD_DIR unit   the whole unit suite (ember_tests without the
#                                              PyTorch goldens, the JIT process tests and cuda;
#                                              ctest's `unit` entry)
#   scripts/sanitize_tests.sh BUILD_DIR all    the whole suite through ctest (unit, jit, goldens,
#                                              the guide's examples), after building it all
# Extra arguments go to the test binary (e.g. --gtest_filter='Hostile*'), or to ctest with `all`.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,8p' "$0"; exit 2; }
dir=$1 mode=subset
shift
if [ "${1:-}" = all ] || [ "${1:-}" = unit ]; then mode=$1; shift; fi
# A report ends the process (the build has -fno-sanitize-recover=all; abort_on_error makes that a
# signal the test runner cannot mistake for a pass). Leaks of code that is not ember's are
# suppressed, each with its reason, in scripts/lsan.supp.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}
export LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}
if [ "$mode" = all ]; then
  cmake --build "$dir" -j "$(nproc)"
  ctest --test-dir "$dir" -j "$(nproc)" --output-on-failure "$@"
elif [ "$mode" = unit ]; then
  cmake --build "$dir" -j "$(nproc)" --target ember_tests
  ctest --test-dir "$dir" -R '^unit$' --output-on-failure "$@"
else
  cmake --build "$dir" -j "$(nproc)" --target ember_sanitize_tests
  "$dir/tests/ember_sanitize_tests" "$@"
fi
