"""Shared helpers for the golden generators. Run generators with Debian's /usr/bin/python3
(python3-torch); each writes tests/data/<family>.json, which is committed.

A case: {"op", "name", "inputs": [spec], "attrs": {...}, "outputs": [spec] | "error": "ShapeError"}.
A spec: {"dtype", "shape", "data", "views": [...]}, {"scalar": v} or null (undefined tensor).
Views make inputs non-contiguous: ["permute", dims], ["transpose", a, b],
["slice", dim, start, stop, step], ["expand", shape], ["select", dim, index].
"""
import json
import math
import zlib
import os

import torch

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
NAMES = {torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16",
         torch.int32: "int32", torch.int64: "int64", torch.float16: "float16",
         torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64",
         torch.complex64: "complex64", torch.complex128: "complex128"}
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
ALL = [torch.bool] + INTS + FLOATS


def num(x):
    if isinstance(x, bool):
        return x
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return x


class In:
    """An input: a base tensor plus views applied to it (in torch here, in ember by the test)."""

    def __init__(self, base, views=()):
        self.base = base
        self.views = list(views)

    def value(self):
        t = self.base
        for v in self.views:
            k = v[0]
            if k == "permute":
                t = t.permute(*v[1])
            elif k == "transpose":
                t = t.transpose(v[1], v[2])
            elif k == "slice":
                idx = [slice(None)] * t.dim()
                idx[v[1]] = slice(v[2], v[3], v[4])
                t = t[tuple(idx)]
            elif k == "expand":
                t = t.expand(*v[1])
            elif k == "select":
                t = t.select(v[1], v[2])
        return t

    def spec(self):
        s = tensor_spec(self.base)
        if self.views:
            s["views"] = self.views
        return s


class Scalar:
    def __init__(self, v):
        self.v = v

    def value(self):
        return self.v

    def spec(self):
        if isinstance(self.v, complex):
            return {"scalar": num(self.v.real), "imag": num(self.v.imag)}
        return {"scalar": num(self.v)}


def tensor_spec(t):
    t = t.detach().resolve_conj().contiguous()
    if t.is_complex():  # data: the interleaved (real, imaginary) pairs of view_as_real
        data = [num(x) for x in torch.view_as_real(t).reshape(-1).tolist()]
        return {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data": data}
    flat = t.reshape(-1)
    if t.dtype in (torch.float16, torch.bfloat16):
        flat = flat.double()
    data = [num(x) for x in flat.tolist()]
    return {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data": data}


def spec_of(x):
    if x is None:
        return None
    if isinstance(x, (In, Scalar)):
        return x.spec()
    return tensor_spec(x)


def val(x):
    if x is None:
        return None
    if isinstance(x, (In, Scalar)):
        return x.value()
    return x


def rnd(shape, dtype=torch.float32, lo=-3.0, hi=3.0, gen=None):
    """Deterministic test data of any dtype."""
    g = gen or torch.Generator().manual_seed(zlib.crc32(repr((tuple(shape), str(dtype))).encode()))
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype in INTS:
        lo_i = 0 if dtype == torch.uint8 else int(lo) * 3
        return torch.randint(lo_i, int(hi) * 3 + 1, shape, generator=g).to(dtype)
    if dtype in (torch.complex64, torch.complex128):  # real, then imaginary parts in [lo, hi)
        part = torch.float32 if dtype == torch.complex64 else torch.float64
        re = torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
        im = torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo
        return torch.complex(re.to(part), im.to(part))
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def via_f32(fn, dtypes=None):
    """fn computed in float32, its float32 results cast back to the inputs' dtype: for dtypes
    torch's CPU kernels lack (float16, bfloat16, integers for unfold/fold), which ember computes in
    float32 and rounds, as torch's CUDA kernels do. With `dtypes`, only inputs of one of those
    dtypes are promoted; a call without any runs fn as it is."""
    def run(*xs, **kw):
        d = next((x.dtype for x in xs if isinstance(x, torch.Tensor) and
                  (dtypes is None or x.dtype in dtypes)), None)
        if d is None:
            return fn(*xs, **kw)
        xs = [x.float() if isinstance(x, torch.Tensor) and x.dtype == d else x for x in xs]
        out = fn(*xs, **kw)
        back = lambda o: o.to(d) if isinstance(o, torch.Tensor) and o.dtype == torch.float32 else o
        return tuple(back(o) for o in out) if isinstance(out, tuple) else back(out)
    return run


def tol_for(dtype):
    return {torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2),
            torch.float32: (1e-5, 1e-5), torch.float64: (1e-10, 1e-12),
            torch.complex64: (1e-5, 1e-5), torch.complex128: (1e-10, 1e-12)}.get(dtype, (0, 0))


def case(op, fn, inputs, attrs=None, name=None, rtol=None, atol=None, dtype=None):
    """Runs fn(*input values) in torch and records inputs, attrs and outputs. Where torch's CPU
    kernels lack f16/bf16 support, the reference is computed in f32 and rounded back, which is
    what ember (f16/bf16 compute in f32) does."""
    vals = [val(i) for i in inputs]
    try:
        outs = fn(*vals)
    except RuntimeError as ex:
        low = [v.dtype for v in vals if isinstance(v, torch.Tensor) and v.dtype in (torch.float16, torch.bfloat16)]
        if not low or "not implemented for" not in str(ex):
            raise
        up = [v.float() if isinstance(v, torch.Tensor) and v.dtype in (torch.float16, torch.bfloat16) else v for v in vals]
        outs = fn(*up)
        cast = lambda o: o.to(low[0]) if isinstance(o, torch.Tensor) and o.dtype == torch.float32 else o
        outs = [cast(o) for o in outs] if isinstance(outs, (tuple, list)) else cast(outs)
    if not isinstance(outs, (tuple, list)):
        outs = [outs]
    d = dtype or next((o.dtype for o in outs if isinstance(o, torch.Tensor)), torch.float32)
    r, a = tol_for(d)
    c = {"op": op, "name": name or op, "inputs": [spec_of(i) for i in inputs],
         "attrs": attrs or {}, "outputs": [None if o is None else tensor_spec(o) for o in outs]}
    c["rtol"] = rtol if rtol is not None else r
    c["atol"] = atol if atol is not None else a
    return c


def grad_case(name, f, inputs):
    """A loss of `inputs` and torch's gradients of it: {"grad", "inputs", "loss", "grads"}."""
    ts = [i.detach().clone().requires_grad_(True) for i in inputs]
    loss = f(*ts)
    loss.backward()
    return {"grad": name, "inputs": [spec_of(i) for i in inputs], "loss": loss.item(),
            "grads": [tensor_spec(t.grad) for t in ts]}


def error(op, inputs, kind, attrs=None, name=None):
    """A case that must raise ember's `kind` (ShapeError, DTypeError, IndexError, ValueError)."""
    return {"op": op, "name": name or (op + "_error"), "inputs": [spec_of(i) for i in inputs],
            "attrs": attrs or {}, "error": kind}


def stats(op, shape, dtype, attrs, mean=None, std=None, lo=None, hi=None, tol=0.05, inputs=()):
    """A random op's case: checks shape, dtype and distribution statistics."""
    st = {"tol": tol}
    if mean is not None:
        st["mean"] = mean
    if std is not None:
        st["std"] = std
    if lo is not None:
        st["min"] = lo
    if hi is not None:
        st["max"] = hi
    return {"op": op, "name": op + "_stats", "inputs": [spec_of(i) for i in inputs], "attrs": attrs,
            "outputs": [{"dtype": NAMES[dtype], "shape": list(shape), "stats": st}]}


def write(family, cases):
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, family + ".json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"generator": "tests/gen/gen_%s.py" % family, "torch": torch.__version__,
                   "cases": cases}, f, separators=(",", ":"))
    os.replace(tmp, path)
    print("%s: %d cases -> %s" % (family, len(cases), path))
