"""Golden cases for libtorch habits beyond the doc examples: torch::var_mean / torch::std_mean
(all dims, one dim, several, keepdim, correction, float64, a non-contiguous input) and the
positional pooling modules (nn::MaxPool2d(2), nn::AvgPool2d(k, s, p), their 1-d forms).

Run with /usr/bin/python3 (torch 1.13). Writes tests/data/api/libtorch_habits.json (read by
tests/api/libtorch_habits_test.cpp, not by the op-family golden runner).
"""
import json
import os

import torch

from common import In, rnd, spec_of, tensor_spec

cases = []


def stat(kind, x, dims, correction, keepdim, name):
    fn = torch.var_mean if kind == "var_mean" else torch.std_mean
    v = In(x) if not isinstance(x, In) else x
    if dims is None:  # torch 1.13 takes only `unbiased` without dims
        assert correction == 1 and not keepdim
        a, b = fn(v.value())
    else:
        a, b = fn(v.value(), dim=dims, correction=correction, keepdim=keepdim)
    cases.append({"name": name, "kind": kind, "x": spec_of(v), "dims": dims,
                  "correction": correction, "keepdim": keepdim,
                  "out": [tensor_spec(a), tensor_spec(b)]})


for kind in ("var_mean", "std_mean"):
    x = rnd((3, 5))
    stat(kind, x, None, 1, False, kind + "_all")
    stat(kind, x, [1], 1, False, kind + "_dim1")
    stat(kind, x, [-1], 1, True, kind + "_dim_neg_keepdim")
    stat(kind, x, [0], 0, False, kind + "_dim0_biased")
    stat(kind, rnd((2, 3, 4)), [0, 2], 1, True, kind + "_dims02_keepdim")
    stat(kind, rnd((4, 6), torch.float64), [1], 1, False, kind + "_f64")
    stat(kind, In(rnd((5, 3)), [["transpose", 0, 1]]), [1], 1, False, kind + "_transposed")


def pool(kind, dims, x, kernel, stride, padding, name):
    mod = {("max", 1): torch.nn.MaxPool1d, ("max", 2): torch.nn.MaxPool2d,
           ("avg", 1): torch.nn.AvgPool1d, ("avg", 2): torch.nn.AvgPool2d}[(kind, dims)]
    m = mod(kernel) if stride is None else mod(kernel, stride, padding)
    cases.append({"name": name, "kind": "%s_pool%dd" % (kind, dims), "x": tensor_spec(x),
                  "kernel": kernel, "stride": stride, "padding": padding,
                  "out": [tensor_spec(m(x))]})


x2 = rnd((2, 3, 7, 7))
x1 = rnd((2, 3, 9))
for kind in ("max", "avg"):
    pool(kind, 2, x2, 2, None, 0, kind + "_pool2d_k2")
    pool(kind, 2, x2, 3, 2, 0, kind + "_pool2d_k3_s2")
    pool(kind, 2, x2, 3, 2, 1, kind + "_pool2d_k3_s2_p1")
    pool(kind, 2, x2, 3, 1, 1, kind + "_pool2d_k3_s1_p1")
    pool(kind, 2, rnd((3, 6, 6)), 2, None, 0, kind + "_pool2d_unbatched")
    pool(kind, 1, x1, 2, None, 0, kind + "_pool1d_k2")
    pool(kind, 1, x1, 3, 2, 1, kind + "_pool1d_k3_s2_p1")

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "api",
                    "libtorch_habits.json")
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "w") as f:
    json.dump({"generator": "tests/gen/gen_libtorch_habits.py", "torch": torch.__version__,
               "cases": cases}, f, separators=(",", ":"))
print("libtorch_habits: %d cases -> %s" % (len(cases), path))
