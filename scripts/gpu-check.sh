#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds ember with CUDA (or takes a bundle made by
# scripts/gpu-bundle.sh, a .txz or .tgz), runs the cuda tests, then ember's GPU benchmark beside PyTorch's
# ../shared/peers/torch_gpu.py in the same run, and prints the side-by-side table last.
#   scripts/gpu-check.sh [BUNDLE.txz|BUNDLE.tgz]
# Environment: GPU_CHECK_TESTS (gtest filter, default the cuda tests), GPU_CHECK_FILTER (bench rows,
# '|'-separated; default the rows of the table), GPU_CHECK_BENCH=0 skips
# the benchmarks, GPU_CHECK_PEER=0 skips the peer, OUT (logs and JSON; default /tmp/gpu-check),
# GPU_CHECK_EXAMPLE=DIR (a folder with Fashion-MNIST's four .gz files; the GPU machine has no
# Debian dataset) trains examples/fashion_mnist there with --device cuda for
# GPU_CHECK_EPOCHS (default 2) epochs after the tests.
set -uo pipefail
bundle=""
if [ $# -ge 1 ]; then
  bundle="$(mktemp -d)"
  # Python's tarfile reads xz where the machine's tar has no xz program.
  tar xf "$1" -C "$bundle" 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$bundle" ||
    exit 1
  bundle="$bundle/bundle"
fi
cd "$(dirname "$0")/.."
out="${OUT:-/tmp/gpu-check}"; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader || true
if [ -n "$bundle" ]; then
  b="$bundle"
  export LD_LIBRARY_PATH="$b/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  src="$(cat "$b/src_path")"
  if [ ! -d "$src/tests/data" ]; then mkdir -p "$(dirname "$src")"; ln -sfn "$b/src" "$src"; fi
  tests="$b/bin/ember_tests"; bench="$b/bin/ember_bench"; peer="$b/bench/torch_gpu.py"
  example="$b/bin/fashion_mnist"
  table="$b/bench/gpu_table.py"
  dist="$b/bin/distributed_tests"
else
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TESTS=ON -DEMBER_CUDA=ON >/dev/null &&
    cmake --build build-gpu -j "$(nproc)" --target ember_tests ember_bench fashion_mnist || exit 1
  tests=build-gpu/tests/ember_tests; bench=build-gpu/bench/ember_bench
  example=build-gpu/examples/fashion_mnist
  peer=../shared/peers/torch_gpu.py; table=bench/gpu_table.py
  dist=build-gpu/tests/distributed/distributed_tests
fi
status=0
echo "== cuda tests"
"$tests" --gtest_filter="${GPU_CHECK_TESTS:-*Cuda*:*cuda*:*CUDA*}" --gtest_brief=1 >"$out/tests.log" 2>&1
rc=$?; [ $rc -ne 0 ] && status=1
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|tests? ran" "$out/tests.log" | tail -40
if [ -x "$dist" ]; then
  # ember::distributed's NCCL cases in a world of one (a machine of one GPU). The toolkit's NCCL,
  # else the one PyTorch's wheels bring.
  nccl="$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)"
  echo "== NCCL tests (world of one)"
  LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:${nccl}" "$dist" --gtest_filter='Nccl*' >"$out/nccl.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|tests? ran|error while loading" "$out/nccl.log" | tail -10
fi
if [ -n "${GPU_CHECK_EXAMPLE:-}" ]; then
  echo "== examples/fashion_mnist --device cuda"
  data="$(cd "$GPU_CHECK_EXAMPLE" && pwd)"
  (cd "$out" && "$example" "${GPU_CHECK_EPOCHS:-2}" "$data" --device cuda) >"$out/example.log" 2>&1
  rc=$?; [ $rc -ne 0 ] && status=1
  grep -vE "[0-9]+% " "$out/example.log" | grep -vE "^ |^Net|^\)" | tail -6
  [ $rc -ne 0 ] && tail -5 "$out/example.log"
fi
if [ "${GPU_CHECK_BENCH:-1}" != 0 ]; then
  echo "== ember benchmark (cuda)"
  rows="${GPU_CHECK_FILTER:-gemm_|copy_1GiB|elementwise_chain_64M|softmax_8192|layernorm_8192|sum_rows_8192|conv3x3_64c_56_b64|mlp_train_step_b128|tiny_add_dispatch|attention_causal|resnet50_train|gpt2s_train}"
  OUT="$out" "$bench" --device cuda "$rows" 2>&1 | tee "$out/bench_cuda.log"
  cp "$out/ember_cpu.json" "$out/ember_cuda.json" 2>/dev/null || true
  OUT="$out" "$bench" --device cuda_eager tiny_add_dispatch 2>&1 | tee "$out/bench_cuda_eager.log"
  cp "$out/ember_cpu.json" "$out/ember_cuda_eager.json" 2>/dev/null || true
  if [ "${GPU_CHECK_PEER:-1}" != 0 ] && [ -f "$peer" ]; then
    echo "== peer: torch_gpu.py"
    OUT="$out" timeout 330 python3 "$peer" >"$out/peer.log" 2>&1 || { status=1; tail -5 "$out/peer.log"; }
    # The attention rows' peer (bench/peers/, beside gpu_peer_common.py): torch_attention.json.
    att="$(dirname "$table")/torch_attention_peer.py"; [ -f "$att" ] || att=bench/peers/torch_attention_peer.py
    (cd "$(dirname "$att")" && OUT="$out" timeout 120 python3 "$(basename "$att")") >"$out/peer_attention.log" 2>&1 ||
      { status=1; tail -5 "$out/peer_attention.log"; }
    # The whole-model rows' peer (bench/cuda_models.cpp beside torch_cuda_models_peer.py):
    # ResNet-50 in bf16 channels-last, which torch_gpu.py lacks (torch_cuda_models.json).
    mod="$(dirname "$att")/torch_cuda_models_peer.py"
    (cd "$(dirname "$mod")" && OUT="$out" timeout 200 python3 "$(basename "$mod")") >"$out/peer_models.log" 2>&1 ||
      { status=1; tail -5 "$out/peer_models.log"; }
  fi
  python3 "$table" "$out"
fi
exit $status
