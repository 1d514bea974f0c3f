"""Peer rows for bench/onnx.cpp: the same .onnx files in onnxruntime (npm onnxruntime-node 1.30,
CPU execution provider), timed by bench/peers/node/onnxruntime_peer.js. The models are written
by bench/peers/node/onnx_models.py into its cache folder when missing (ember's rows do the same, so
both sides read one file). Needs node and `scripts/node-deps.sh` (npm ci in bench/peers/node).
Run with /usr/bin/python3; writes onnxruntime.json to $OUT or /tmp."""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_DIR = os.path.join(HERE, "node")


def main():
    node = os.environ.get("EMBER_NODE") or shutil.which("node")
    if not node:
        sys.exit("onnxruntime peer: node is not installed (scripts/node-deps.sh installs it)")
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "onnxruntime-node")):
        sys.exit(f"onnxruntime peer: onnxruntime-node is not installed in {NODE_DIR} "
                 "(run scripts/node-deps.sh)")
    models = subprocess.run([sys.executable, os.path.join(NODE_DIR, "onnx_models.py")],
                            check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    env = dict(os.environ, OUT=os.environ.get("OUT", "/tmp"))
    sys.exit(subprocess.call([node, os.path.join(NODE_DIR, "onnxruntime_peer.js"), "bench",
                              models], env=env))


if __name__ == "__main__":
    main()
