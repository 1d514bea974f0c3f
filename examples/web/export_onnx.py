#!/usr/bin/python3
"""Writes the demo's CNN as ONNX for the onnxruntime-web side of the latency comparison: the
weights in DATA_DIR/model.safetensors (from examples/web's `web` tool) loaded into
examples/fashion_mnist/reference.py's PyTorch model, exported to DATA_DIR/model.onnx.
Usage: /usr/bin/python3 examples/web/export_onnx.py DATA_DIR"""
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fashion_mnist"))
from reference import Net  # noqa: E402


def read_safetensors(path):
    with open(path, "rb") as f:
        n, = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        assert v["dtype"] == "F32", (k, v["dtype"])
        b, e = v["data_offsets"]
        out[k] = torch.from_numpy(np.frombuffer(data[b:e], dtype=np.float32).reshape(v["shape"]).copy())
    return out


def main():
    d = sys.argv[1]
    net = Net().eval()
    net.load_state_dict(read_safetensors(os.path.join(d, "model.safetensors")))
    x = torch.zeros(1, 1, 28, 28)
    tmp = os.path.join(d, "model.onnx.tmp")
    torch.onnx.export(net, x, tmp, opset_version=17, input_names=["input"], output_names=["logits"])
    os.replace(tmp, os.path.join(d, "model.onnx"))
    print("wrote", os.path.join(d, "model.onnx"))


if __name__ == "__main__":
    main()
