#!/usr/bin/env bash
# Packs a CUDA build of ember for a GPU machine that lacks the build's Debian packages:
#   scripts/gpu-bundle.sh [BUNDLE.tgz|BUNDLE.txz]  (default .gpu/bundle.txz; build dir: $BUILD or build)
# The bundle holds the test and benchmark programs, the fashion_mnist example, libember, the non-system libraries they
# link (oneDNN, ...; never the CUDA driver or toolkit libraries, which the GPU machine has), the
# goldens and the peer script, compressed: xz for .txz (about 30 MB, which leaves room for the
# working tree under the device tool's 64 MiB), gzip otherwise. On the GPU machine:
# scripts/gpu-check.sh BUNDLE.
set -euo pipefail
cd "$(dirname "$0")/.."
tgz="${1:-.gpu/bundle.txz}"
out="$(mktemp -d)/bundle"; trap 'rm -rf "$(dirname "$out")"' EXIT
build="${BUILD:-build}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TESTS=ON -DEMBER_CUDA=ON >/dev/null
targets=(ember_tests ember_bench fashion_mnist)
# The distributed tests (NCCL cases) when the build has ember::distributed.
grep -q '^EMBER_DISTRIBUTED:BOOL=ON' "$build/CMakeCache.txt" && targets+=(distributed_tests)
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
grep -q '^EMBER_CUDA:BOOL=ON' "$build/CMakeCache.txt" || { echo "gpu-bundle: $build has no CUDA backend" >&2; exit 1; }
mkdir -p "$out/bin" "$out/lib" "$out/src/tests" "$out/bench"
progs=("$build/tests/ember_tests" "$build/bench/ember_bench" "$build/examples/fashion_mnist")
[ -x "$build/tests/distributed/distributed_tests" ] && progs+=("$build/tests/distributed/distributed_tests")
cp "${progs[@]}" "$out/bin/"
# ember's own libraries, each program's (libember, the model zoo, the ONNX runtime the bench links)
# and the libraries outside glibc, the C++ runtime and CUDA: the GPU machine may not have them.
for lib in $(ldd "${progs[@]}" | awk '/=> \//{print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libember*) cp -L "$lib" "$out/lib/" ;;
  esac
done
for lib in $(ldd "${progs[@]}" "$out"/lib/libember* | awk '/=> \//{print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libstdc++*|libgcc_s*|ld-linux*|libember*) ;;
    libcuda*|libnvrtc*|libcublas*|libcudnn*|libnccl*|libcudart*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
strip "$out"/bin/* "$out"/lib/* 2>/dev/null || true
cp -r tests/data "$out/src/tests/"
cp bench/gpu_table.py bench/peers/gpu_peer_common.py bench/peers/torch_*_peer.py "$out/bench/"
peer=../shared/peers/torch_gpu.py
[ -f "$peer" ] && cp "$peer" "$out/bench/"
# The test binary finds its goldens under the source path it was built from.
grep -m1 '^CMAKE_HOME_DIRECTORY' "$build/CMakeCache.txt" | cut -d= -f2 > "$out/src_path"
mkdir -p "$(dirname "$tgz")"
case "$tgz" in
  *.txz|*.tar.xz) tar cf - -C "$(dirname "$out")" bundle | xz -T0 -6 > "$tgz.tmp" ;;
  *) tar czf "$tgz.tmp" -C "$(dirname "$out")" bundle ;;
esac
mv "$tgz.tmp" "$tgz"
du -sh "$tgz"
