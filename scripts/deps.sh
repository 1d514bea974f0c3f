#!/usr/bin/env bash
# Installs the Debian packages ember needs to build and test (idempotent; root or sudo).
set -euo pipefail
pkgs=(build-essential cmake ninja-build ccache pkg-config libgtest-dev libgmock-dev
      libbenchmark-dev nlohmann-json3-dev dataset-fashion-mnist zlib1g-dev libdnnl-dev
      libminizip-dev  # torch.save's zip archives (ember/store/pytorch*)
      libstb-dev  # stb_image / stb_image_write: ember/vision image I/O, examples/classify
      tmux  # tests/train/dashboard_tmux.sh drives the training dashboard in a terminal
      libicu-dev libsentencepiece-dev  # ember/models: GPT-2 tokenizer classes, SentencePiece
      python3-sentencepiece  # tests/gen: the SentencePiece test model
      python3-torchvision python3-pil  # tests/gen/gen_vision.py: image and transform goldens
      clang libclang-rt-14-dev  # clang + libFuzzer: the sanitizer and fuzzing build
      libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata python3-onnx  # ember::onnx
      libre2-dev  # load_into's rename/include/exclude rules (ember/store/load.cpp)
      libsqlite3-dev  # data::SqliteDataset; ember-bench's history (tools/ember-bench)
      python3-torchvision python3-opencv python3-scipy python3-skimage  # tests/gen/gen_vision_ops.py
      libboost-dev libssl-dev  # the remote backend and ember-server: Boost.Beast WebSocket, TLS 1.3
      liblapacke-dev libopenblas-dev  # LAPACK in the cpu backend's linalg ops (optional)
      libopenmpi-dev openmpi-bin  # ember::distributed's MPI transport; mpirun runs its tests
      chromium  # headless browser: ember-plot's report is rendered and checked in it
      emscripten)  # the WebAssembly build (preset wasm, docs/web.md), tested in chromium
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
