#!/usr/bin/env bash
# The flagship demo: installs what it needs (Debian packages, Fashion-MNIST from
# dataset-fashion-mnist), builds, trains a CNN on Fashion-MNIST for a few epochs, saves the
# weights, reloads them and prints predictions. Idempotent. EPOCHS=N changes the length.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target fashion_mnist
cd build/examples && ./fashion_mnist "${EPOCHS:-3}"
