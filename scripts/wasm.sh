#!/usr/bin/env bash
# Builds ember's WebAssembly modules (preset `wasm`: build-wasm/web/ember-{st,mt}.{js,wasm}) with
# Debian's emscripten (scripts/deps.sh installs it) and ccache, and prints the time taken and the
# inference module's size (raw and gzip'd). Idempotent; a no-op build takes a second.
#   scripts/wasm.sh             both variants (single-threaded and pthreads), SIMD
#   scripts/wasm.sh nosimd      the single-threaded build without -msimd128 (build-wasm-nosimd),
#                               for the SIMD speed-up measurement (docs/web.md)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v emcc >/dev/null; then
  echo "wasm: no emcc (Debian's emscripten: scripts/deps.sh); skipped"
  exit 0
fi
export NODE_PATH=/usr/share/nodejs  # Debian's emscripten finds its node modules there
preset=wasm dir=build-wasm
if [ "${1:-}" = nosimd ]; then preset=wasm-nosimd dir=build-wasm-nosimd; fi
t0=$SECONDS
cmake --preset "$preset" >/dev/null
cmake --build "$dir" -j "$(nproc)"
for f in "$dir"/web/ember-*.wasm; do
  printf '   %s: %d bytes, %d gzip -9\n' "$f" "$(stat -c %s "$f")" "$(gzip -9c "$f" | wc -c)"
done
echo "   wasm ($preset) built in $((SECONDS - t0)) s"
