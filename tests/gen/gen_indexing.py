"""Golden cases for Tensor::index and Tensor::index_put_ (torch::indexing's sugar): basic
indices (ints, slices, None, Ellipsis, bools), bool masks and integer tensors, with PyTorch's
advanced-indexing placement of the broadcast index dims.

Run with /usr/bin/python3 (torch 1.13). Writes tests/data/api/indexing.json (a folder of its own:
these cases are read by tests/api/indexing_test.cpp, not by the op-family golden runner).
"""
import json
import os

import torch

from common import tensor_spec

G = torch.Generator().manual_seed(2024)
x3 = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5)
x2 = torch.arange(12).reshape(3, 4)
i = lambda *v: torch.tensor(v, dtype=torch.int64)
cases = []


def spec_index(k):
    if k is None:
        return {"none": True}
    if k is Ellipsis:
        return {"ellipsis": True}
    if isinstance(k, bool):
        return {"bool": k}
    if isinstance(k, int):
        return {"int": k}
    if isinstance(k, slice):
        return {"slice": [k.start, k.stop, k.step]}
    return {"tensor": tensor_spec(k)}


def get(name, x, idx):
    cases.append({"name": name, "kind": "index", "x": tensor_spec(x),
                  "indices": [spec_index(k) for k in idx], "out": tensor_spec(x[tuple(idx)])})


def put(name, x, idx, v):
    y = x.clone()
    y[tuple(idx)] = v
    cases.append({"name": name, "kind": "index_put", "x": tensor_spec(x),
                  "indices": [spec_index(k) for k in idx],
                  "value": tensor_spec(torch.as_tensor(v, dtype=x.dtype)), "out": tensor_spec(y)})


get("int", x3, [1])
get("negative_int", x3, [-1, 2])
get("slice_step", x3, [slice(1, None, 2)])
get("slice_none_ellipsis", x3, [slice(1, None, 2), 0, Ellipsis, None])
get("ellipsis_last", x3, [Ellipsis, 3])
get("none_front", x3, [None, 0])
get("bool_true", x2, [True])
get("bool_false", x2, [False])
get("slice_clamped", x3, [slice(-10, 10)])
get("int_tensor", x3, [i(2, 0, 2)])
get("int_tensor_2d", x3, [torch.tensor([[0, 1], [2, 0]])])
get("int_tensor_negative", x3, [i(-1, 0)])
get("int_tensor_middle", x3, [slice(None), i(3, 1)])
get("two_adjacent", x3, [slice(None), i(0, 3), i(4, 1)])
get("two_broadcast", x3, [i(0, 2), slice(None), i(1)])  # separated: index dims go first
get("two_broadcast_2d", x3, [torch.tensor([[0], [2]]), torch.tensor([1, 3])])
get("int_and_tensor", x3, [1, slice(None), i(0, 4)])   # separated by a slice
get("tensor_then_int", x3, [i(0, 2), 1])               # int makes them non-adjacent too
get("mask_full", x2, [x2 > 5])
get("mask_rows", x3, [torch.tensor([True, False, True])])
get("mask_middle", x3, [slice(None), torch.tensor([False, True, True, False])])
get("mask_2d", x3, [torch.rand(3, 4, generator=G) > 0.5])
get("slice_then_mask_2d", x3, [slice(None), torch.rand(4, 5, generator=G) > 0.5])
get("mask_and_int_tensor", x3, [torch.tensor([True, False, True]), i(1, 2)])
get("empty_tensor", x3, [torch.tensor([], dtype=torch.int64)])

put("put_int", x3, [1], -1.0)
put("put_slice", x3, [slice(None), slice(1, 3)], torch.tensor([7.0, 8.0, 9.0, 10.0, 11.0]))
put("put_ellipsis", x3, [Ellipsis, 0], 5.0)
put("put_mask", x2, [x2 % 3 == 0], 0)
put("put_mask_values", x2, [x2 > 8], torch.tensor([1, 2, 3]))
put("put_int_tensor", x3, [i(2, 0)], torch.ones(4, 5) * 3)
put("put_two_tensors", x3, [i(0, 2), slice(None), i(4, 1)], torch.tensor([[1.0], [2.0]]))
put("put_int_and_tensor", x3, [1, i(0, 3)], 9.0)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "api", "indexing.json")
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "w") as f:
    json.dump({"generator": "tests/gen/gen_indexing.py", "torch": torch.__version__, "cases": cases},
              f, separators=(",", ":"))
print("indexing: %d cases -> %s" % (len(cases), path))
