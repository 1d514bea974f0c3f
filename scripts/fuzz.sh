#!/usr/bin/env bash
# Fuzzes ember's readers with libFuzzer (clang, ASan + UBSan; the `fuzz` preset, in build-fuzz).
#   scripts/fuzz.sh TARGET SECONDS   one target for SECONDS on its corpus
#   scripts/fuzz.sh all SECONDS      every target in turn, SECONDS each
#   scripts/fuzz.sh --seeds          rewrite the seed corpora (tests/fuzz/corpus) with ember's writers
#   scripts/fuzz.sh --build          only build the targets (installs clang and libFuzzer if missing)
#   scripts/fuzz.sh --list           the targets
# Environment: FUZZ_RUNS=N stops each run after N inputs instead of (or before) SECONDS;
# FUZZ_JOBS=N runs N processes per target; FUZZ_FLAGS adds libFuzzer flags; EMBER_FUZZ_TMP
# names the folder for scratch files (default /dev/shm).
# New inputs go to build-fuzz/corpus/TARGET (the committed seeds are only read); a finding is
# written to build-fuzz/findings/ and the script exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(safetensors safetensors_header safetensors_load idx csv state checkpoint metric_log onnx pytorch image remote)
usage() { sed -n '2,13p' "$0"; exit 2; }
[ $# -ge 1 ] || usage

build() {
  # Each target needs its committed dictionary (libFuzzer refuses to start without it).
  for t in "${targets[@]}"; do
    [ -s "tests/fuzz/dict/$t.dict" ] || { echo "tests/fuzz/dict/$t.dict is missing" >&2; exit 1; }
  done
  if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang libclang-rt-14-dev
  fi
  [ -f build-fuzz/build.ninja ] || cmake --preset fuzz >/dev/null
  mkdir -p build-fuzz
  if ! cmake --build build-fuzz -j "$(nproc)" --target fuzz_make_corpus \
      $(printf 'fuzz_%s ' "${targets[@]}") >build-fuzz/build.log 2>&1; then
    grep -E -A12 '^FAILED|error:' build-fuzz/build.log | head -n 60
    echo "fuzz build FAILED (log: build-fuzz/build.log)" >&2
    exit 1
  fi
}

case "$1" in
  --list) printf '%s\n' "${targets[@]}"; exit 0 ;;
  --build) build; exit 0 ;;
  --seeds)
    build
    # Inputs that once were findings (finding-*) stay: the writers do not make them.
    [ -d tests/fuzz/corpus ] && find tests/fuzz/corpus -type f ! -name 'finding-*' -delete
    build-fuzz/tests/fuzz/fuzz_make_corpus tests/fuzz/corpus
    exit 0 ;;
esac
[ $# -eq 2 ] || usage
what=$1 seconds=$2
if [ "$what" = all ]; then run=("${targets[@]}"); else run=("$what"); fi
# Membership without a pipe: under pipefail, `printf | grep -q` fails when grep exits before
# printf has written everything (SIGPIPE), which made a known target "unknown" on a busy machine.
for t in "${run[@]}"; do
  known=0
  for k in "${targets[@]}"; do [ "$k" = "$t" ] && known=1; done
  [ "$known" = 1 ] || { echo "unknown target $t" >&2; usage; }
done
build
mkdir -p build-fuzz/findings
status=0
for t in "${run[@]}"; do
  work=build-fuzz/corpus/$t
  mkdir -p "$work"
  seeds=("tests/fuzz/corpus/$t")
  # The image decoder's seeds are the vision tests' images (every format and mode).
  [ "$t" = image ] && seeds=(tests/data/vision/images)
  # The ONNX loader's seeds are the official node models (not copied into the repository).
  if [ "$t" = onnx ]; then
    seeds=(build-fuzz/seeds/onnx)
    mkdir -p "${seeds[0]}"
    for m in /usr/share/libonnx-testdata/data/node/*/model.onnx; do
      [ -f "$m" ] && cp -n "$m" "${seeds[0]}/$(basename "$(dirname "$m")").onnx"
    done
  fi
  flags=(-max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 -malloc_limit_mb=2048
         -max_len=65536 -dict="tests/fuzz/dict/$t.dict" -artifact_prefix="build-fuzz/findings/$t-"
         -print_final_stats=1)
  [ -n "${FUZZ_RUNS:-}" ] && flags+=(-runs="$FUZZ_RUNS")
  [ -n "${FUZZ_JOBS:-}" ] && flags+=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
  # shellcheck disable=SC2206
  extra=(${FUZZ_FLAGS:-})
  echo "== fuzz_$t for ${seconds}s"
  log=build-fuzz/fuzz_$t.log
  # Leaks are findings too (libFuzzer checks each input that allocates more than it frees). Any
  # single allocation over -malloc_limit_mb is a finding; under it, an allocation the allocator
  # cannot serve returns null (allocator_may_return_null), which ember must turn into its error.
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
      LSAN_OPTIONS=suppressions=$PWD/scripts/lsan.supp \
      "build-fuzz/tests/fuzz/fuzz_$t" "${flags[@]}" "${extra[@]}" "$work" "${seeds[@]}" \
      >"$log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|Done [0-9]+ runs" "$log" | tr '\n' ' '
    echo
  else
    status=1
    echo "fuzz_$t FAILED (log: $log)"
    tail -n 40 "$log"
  fi
done
exit $status
