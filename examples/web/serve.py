#!/usr/bin/env python3
"""The web demo's static server (standard library only).

Pages under /iso/ are sent with the cross-origin isolation headers (COOP: same-origin,
COEP: require-corp), so SharedArrayBuffer exists and the page loads ember's pthreads build;
pages under /plain/ are sent without them and the same page loads the single-threaded build.
Both prefixes serve the same tree:
  /{iso,plain}/            examples/web (index.html, app.js, style.css)
  /{iso,plain}/lib/        web/ (ember.js, ember.d.ts)
  /{iso,plain}/wasm/       the wasm build's output (ember-st.js/.wasm, ember-mt.js/.wasm)
  /{iso,plain}/data/       the demo's data (examples/web's `web` tool writes it)
  /{iso,plain}/ort/        onnxruntime-web's dist folder (web/node_modules), when installed
/ redirects to /iso/.

Usage: serve.py [--port 8000] [--wasm build-wasm/web] [--data build/examples/web-data]
       [--bind 127.0.0.1]   (paths relative to the repository root; prints the URL)
"""
import argparse
import http.server
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class Handler(http.server.SimpleHTTPRequestHandler):
    mounts = {}

    def translate_path(self, path):
        path = path.split("?", 1)[0].split("#", 1)[0]
        parts = [p for p in path.split("/") if p and p not in (".", "..")]
        if not parts or parts[0] not in ("iso", "plain"):
            return os.path.join(self.mounts[""], "__missing__")
        rest = parts[1:]
        base = self.mounts[""]
        if rest and rest[0] in self.mounts:
            base, rest = self.mounts[rest[0]], rest[1:]
        return os.path.join(base, *rest) if rest else base

    def do_GET(self):
        if self.path in ("/", ""):
            self.send_response(302)
            self.send_header("Location", "/iso/")
            self.end_headers()
            return
        super().do_GET()

    def end_headers(self):
        if self.path.startswith("/iso/"):
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, fmt, *args):  # quiet: the browser test reads stdout for the URL
        if os.environ.get("EMBER_SERVE_LOG"):
            super().log_message(fmt, *args)


Handler.extensions_map = dict(http.server.SimpleHTTPRequestHandler.extensions_map,
                              **{".wasm": "application/wasm", ".js": "text/javascript",
                                 ".mjs": "text/javascript"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--wasm", default="build-wasm/web")
    ap.add_argument("--data", default="build/examples/web-data")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    Handler.mounts = {
        "": here,
        "lib": os.path.join(ROOT, "web"),
        "wasm": os.path.join(ROOT, a.wasm),
        "data": os.path.join(ROOT, a.data),
        "ort": os.path.join(ROOT, "web", "node_modules", "onnxruntime-web", "dist"),
    }
    server = http.server.ThreadingHTTPServer((a.bind, a.port), Handler)
    print(f"http://{a.bind}:{server.server_address[1]}/iso/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
