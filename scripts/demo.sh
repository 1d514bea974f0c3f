#!/usr/bin/env bash
# The flagship demo: installs what it needs, builds, runs. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target tour
./build/examples/tour
