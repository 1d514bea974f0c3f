"""The .onnx files of ember-bench's onnx suite (bench/onnx.cpp) and its onnxruntime peer
(bench/peers/onnxruntime_peer.py): written once into a cache folder, then read by both sides.

Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision, python3-onnx):
  onnx_models.py [DIR]     writes what is missing in DIR and prints DIR
DIR is the argument, else $EMBER_BENCH_ONNX_DIR, else ~/.cache/ember/bench/onnx. Files:
  resnet18.onnx            torchvision ResNet-18 (random weights, eval), input "input" [batch,3,224,224]
  mobilenet_v2.onnx        torchvision MobileNetV2, the same input
  matmul_100MB.onnx + .bin y = x @ w, w float32 [5120, 5120] (100 MiB) as external data at
                           offset 0 (aligned: ember maps it), input "x" [batch, 5120]
All opset 17. Each file is written under a temporary name and renamed, so a reader never sees a
half-written one.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

OPSET = 17
LOAD_N = 5120  # 5120 * 5120 * 4 bytes = 100 MiB


def cache_dir():
    if len(sys.argv) > 1:
        return sys.argv[1]
    d = os.environ.get("EMBER_BENCH_ONNX_DIR")
    return d if d else os.path.join(os.path.expanduser("~"), ".cache", "ember", "bench", "onnx")


def export_vision(name, path):
    import torch
    import torchvision

    torch.manual_seed(0)
    net = getattr(torchvision.models, name)().eval()
    x = torch.randn(1, 3, 224, 224)
    tmp = path + ".tmp"
    torch.onnx.export(net, x, tmp, opset_version=OPSET, input_names=["input"],
                      output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    onnx.checker.check_model(tmp)
    os.replace(tmp, path)


def write_matmul(path):
    d = os.path.dirname(path)
    bin_name = os.path.basename(path)[: -len(".onnx")] + ".bin"
    w = np.random.default_rng(0).standard_normal((LOAD_N, LOAD_N), dtype=np.float32) * 0.01
    with open(os.path.join(d, bin_name + ".tmp"), "wb") as f:
        f.write(w.tobytes())
    t = TensorProto()
    t.name, t.data_type = "w", TensorProto.FLOAT
    t.dims.extend(w.shape)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", bin_name), ("offset", "0"), ("length", str(w.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], "matmul_100MB",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", LOAD_N])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", LOAD_N])], [t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)
    os.replace(os.path.join(d, bin_name + ".tmp"), os.path.join(d, bin_name))
    with open(path + ".tmp", "wb") as f:
        f.write(m.SerializeToString())
    os.replace(path + ".tmp", path)


def main():
    d = cache_dir()
    os.makedirs(d, exist_ok=True)
    for name in ("resnet18", "mobilenet_v2"):
        p = os.path.join(d, name + ".onnx")
        if not os.path.exists(p):
            export_vision(name, p)
    p = os.path.join(d, "matmul_100MB.onnx")
    if not os.path.exists(p) or not os.path.exists(p[: -len(".onnx")] + ".bin"):
        write_matmul(p)
    print(d)


if __name__ == "__main__":
    main()
