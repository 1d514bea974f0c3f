#!/usr/bin/env bash
# Installs what the onnxruntime peer and the ONNX output checks need (idempotent; like deps.sh,
# an explicit step: nothing is downloaded at build or test time):
#   node and npm (Debian's nodejs and npm packages, when node is missing; root or sudo), then
#   onnxruntime-node as pinned by bench/peers/node/package-lock.json, into bench/peers/node/
#   node_modules (npm ci; from the npm registry), again only when the lock file changed;
#   then, the same way, web/package-lock.json's playwright-core (drives Debian's chromium in
#   the browser test, tests/web) and onnxruntime-web (the web demo's latency peer) into
#   web/node_modules.
# ONNXRUNTIME_NODE_INSTALL=skip: onnxruntime-node's install script would fetch the CUDA and
# TensorRT execution providers from NuGet; the CPU execution provider is in the npm package.
set -euo pipefail
cd "$(dirname "$0")/../bench/peers/node"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm
fi
stamp=node_modules/.ember-lock
if ! { [ -f "$stamp" ] && cmp -s package-lock.json "$stamp" &&
       [ -d node_modules/onnxruntime-node ]; }; then
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund
  cp package-lock.json "$stamp"
  # The CPU execution provider loads and runs, offline.
  node onnxruntime_peer.js version >/dev/null
fi
cd ../../../web
if ! { [ -f "$stamp" ] && cmp -s package-lock.json "$stamp" &&
       [ -d node_modules/playwright-core ]; }; then
  npm ci --no-audit --no-fund --ignore-scripts  # no browser download: Debian's chromium is used
  cp package-lock.json "$stamp"
fi
