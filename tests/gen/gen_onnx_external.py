"""Writes the ONNX models with external data that tests/onnx/load_test.cpp reads.

Run with Debian's python3 (python3-onnx): /usr/bin/python3 tests/gen/gen_onnx_external.py
  tests/data/onnx/external.onnx + external.bin   y = x + w, w (float32 [3]) at offset 16
  tests/data/onnx/escape.onnx                     w's location is "../external.bin" (refused)
  tests/data/onnx/short.onnx                      w's length runs past the end of external.bin
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

out = os.path.join(os.path.dirname(__file__), "..", "data", "onnx")
os.makedirs(out, exist_ok=True)
w = np.arange(3, dtype=np.float32) * 0.5
with open(os.path.join(out, "external.bin"), "wb") as f:
    f.write(b"\0" * 16 + w.tobytes())


def model(location, offset="16", length=str(w.nbytes)):
    t = TensorProto()
    t.name = "w"
    t.data_type = TensorProto.FLOAT
    t.dims.extend(w.shape)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "external",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])], [t])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


for name, m in (("external", model("external.bin")), ("escape", model("../external.bin")),
                ("short", model("external.bin", offset="20"))):
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())
