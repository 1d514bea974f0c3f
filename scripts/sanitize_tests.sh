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
  # ctest's `unit` entry (its command and working directory, read from ctest), split into one
  # GoogleTest shard per core: one instrumented process takes about five minutes.
  mapfile -t spec < <(ctest --test-dir "$dir" -R '^unit$' --show-only=json-v1 | /usr/bin/python3 -c '
import json, sys
t = json.load(sys.stdin)["tests"][0]
wd = [p["value"] for p in t.get("properties", []) if p["name"] == "WORKING_DIRECTORY"]
print(wd[0] if wd else ".")
print("\n".join(t["command"]))')
  wd=${spec[0]} cmd=("${spec[@]:1}")
  shards=$(nproc) pids=()
  for ((i = 0; i < shards; ++i)); do
    (cd "$wd" && GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "${cmd[@]}" --gtest_brief=1 "$@") \
      > "$dir/unit-shard-$i.log" 2>&1 &
    pids+=($!)
  done
  rc=0
  for ((i = 0; i < shards; ++i)); do
    if wait "${pids[$i]}"; then
      grep -E '^\[  PASSED  \]' "$dir/unit-shard-$i.log" | sed "s/^/shard $i: /"
    else
      rc=1
      echo "== shard $i of $shards failed; the end of its log ($dir/unit-shard-$i.log):"
      tail -n 150 "$dir/unit-shard-$i.log"
    fi
  done
  exit $rc
else
  cmake --build "$dir" -j "$(nproc)" --target ember_sanitize_tests
  "$dir/tests/ember_sanitize_tests" "$@"
fi
