#!/usr/bin/env bash
# ctest's web_browser: the web demo in headless chromium (tests/web/browser_test.mjs).
# Usage: run.sh WEB_TOOL REPO_ROOT WASM_DIR WORK_DIR. Exit 77 (ctest: skipped) with a message
# when emscripten's build output, chromium, node or playwright-core is missing.
set -euo pipefail
tool=$1 root=$2 wasm=$3 work=$4
command -v node >/dev/null || { echo "SKIPPED: no node (scripts/node-deps.sh installs it)"; exit 77; }
[ -d /usr/share/datasets/fashion-mnist ] ||
  { echo "SKIPPED: no Fashion-MNIST (Debian's dataset-fashion-mnist)"; exit 77; }
mkdir -p "$work"
# Seeded weights: the native flex backend's predictions for them are what the page must match.
"$tool" "$work/data" --count 100 --seed 7 >/dev/null
exec node "$root/tests/web/browser_test.mjs" "$root" "$wasm" "$work/data" "$work"
