"""Golden cases for weight-only quantization: quantize_int8 / quantize_int4 (as mode "quantize"
cases of linear_int8 / linear_int4: the quantized values must equal torch's bit for bit) and the
products linear_int8 / linear_int4 (x @ dequantized(w)^T + bias, computed in float64 here).
Run with /usr/bin/python3 (torch 1.13); writes tests/data/quant.json.

The schemes (ember/ops/quant.h): int8 symmetric per output row, scale = absmax / 127; int4
asymmetric per group of `group` inputs, scale = (max(g, 0) - min(g, 0)) / 15, zero =
round(-min / scale), two values a byte (element 2j in the low nibble). Rounding: torch.round
(to nearest, ties to even)."""
import torch

from common import In, error, rnd, tensor_spec, write

cases = []
F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16


def safe(scale):
    return torch.where(scale == 0, torch.ones_like(scale), scale)


def quantize8(w):
    w = w.float()
    if w.shape[1] == 0:  # no inputs: scale 0 (torch's amax refuses an empty dim)
        return torch.zeros(w.shape, dtype=torch.int8), torch.zeros(w.shape[0])
    scale = w.abs().amax(1) / 127
    q = torch.clamp(torch.round(w / safe(scale)[:, None]), -127, 127).to(torch.int8)
    return q, scale


def quantize4(w, group):
    w = w.float()
    n, k = w.shape
    wg = w.reshape(n, k // group, group)
    lo = torch.minimum(wg.amin(-1), torch.zeros(()))
    hi = torch.maximum(wg.amax(-1), torch.zeros(()))
    scale = (hi - lo) / 15
    s = safe(scale)
    zero = torch.clamp(torch.round(-lo / s), 0, 15)
    q = torch.clamp(torch.round(wg / s[..., None]) + zero[..., None], 0, 15).reshape(n, k // 2, 2)
    return (q[..., 0] + q[..., 1] * 16).to(torch.uint8), scale, zero.to(torch.uint8)


def dequantize8(q, scale):
    return q.double() * scale.double()[:, None]


def dequantize4(packed, scale, zero, group):
    n, k = packed.shape[0], packed.shape[1] * 2
    v = torch.stack([packed & 15, packed >> 4], -1).reshape(n, k // group, group).double()
    return ((v - zero.double()[..., None]) * scale.double()[..., None]).reshape(n, k)


def product(x, w, bias):
    """The float64 reference, rounded once to x's dtype."""
    y = x.value().double() if isinstance(x, In) else x.double()
    y = y @ w.T
    if bias is not None:
        y = y + bias.double()
    return y.to(x.value().dtype if isinstance(x, In) else x.dtype)


def tol(dtype):
    return {F16: (1e-2, 1e-2), BF16: (2e-2, 5e-2)}.get(dtype, (1e-4, 1e-4))


def spec(x):
    return None if x is None else (x.spec() if isinstance(x, In) else tensor_spec(x))


def quantize_case(op, w, name, group=None):
    outs = quantize8(w) if group is None else quantize4(w, group)
    attrs = {"mode": "quantize"}
    if group is not None:
        attrs["group"] = group
    cases.append({"op": op, "name": name, "inputs": [tensor_spec(w)], "attrs": attrs,
                  "outputs": [tensor_spec(o) for o in outs], "rtol": 0, "atol": 0})


def int8_case(name, x, n, bias=True, seed=0):
    xv = x.value() if isinstance(x, In) else x
    k = xv.shape[-1]
    w = rnd((n, k), lo=-1, hi=1, gen=torch.Generator().manual_seed(100 + seed))
    q, scale = quantize8(w)
    b = rnd((n,), xv.dtype, lo=-1, hi=1) if bias else None
    r, a = tol(xv.dtype)
    cases.append({"op": "linear_int8", "name": name,
                  "inputs": [spec(x), tensor_spec(q), tensor_spec(scale), spec(b)], "attrs": {},
                  "outputs": [tensor_spec(product(x, dequantize8(q, scale), b))],
                  "rtol": r, "atol": a})


def int4_case(name, x, n, group, bias=True, seed=0):
    xv = x.value() if isinstance(x, In) else x
    k = xv.shape[-1]
    w = rnd((n, k), lo=-1, hi=1, gen=torch.Generator().manual_seed(200 + seed))
    packed, scale, zero = quantize4(w, group)
    b = rnd((n,), xv.dtype, lo=-1, hi=1) if bias else None
    r, a = tol(xv.dtype)
    cases.append({"op": "linear_int4", "name": name,
                  "inputs": [spec(x), tensor_spec(packed), tensor_spec(scale), tensor_spec(zero),
                             spec(b)],
                  "attrs": {"group": group},
                  "outputs": [tensor_spec(product(x, dequantize4(packed, scale, zero, group), b))],
                  "rtol": r, "atol": a})


# --- quantization: bit-equal to the reference rounding ---
quantize_case("linear_int8", rnd((5, 37)), "quantize_int8_f32")
quantize_case("linear_int8", rnd((4, 16), BF16), "quantize_int8_bf16")
# absmax 127 -> scale 1: the other values sit on .5 ties (round half to even) and the row of
# zeros keeps scale 0.
ties = torch.tensor([[127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5],
                     [0.0] * 8, [-2.0, 1.0, 0.25, -0.75, 2.0, 0.0, 1.75, -1.25]])
quantize_case("linear_int8", ties, "quantize_int8_ties_and_zero_row")
quantize_case("linear_int8", torch.zeros((3, 0)), "quantize_int8_empty_rows")
quantize_case("linear_int4", rnd((3, 64)), "quantize_int4_g32", group=32)
quantize_case("linear_int4", rnd((2, 256), lo=-1, hi=2), "quantize_int4_g128", group=128)
quantize_case("linear_int4", rnd((2, 8), F16), "quantize_int4_g2_f16", group=2)
# A group spanning [0, 15] (scale 1, zero 0) with .5 ties, an all-negative group (zero 15), a
# group of zeros (scale 0).
g = torch.arange(16.0)
g[1:8] = torch.tensor([0.5, 1.5, 2.5, 3.5, 4.5, 13.5, 14.5])
quantize_case("linear_int4", torch.stack([torch.cat([g, -g - 1, torch.zeros(16)])]),
              "quantize_int4_ties_signs_zeros", group=16)

# --- int8 products: decode (GEMV) rows, many rows (GEMM), odd sizes, views, dtypes, empties ---
int8_case("linear_int8_batch1", rnd((1, 40)), 9)
int8_case("linear_int8_vector_input", rnd((40,)), 9, seed=1)
int8_case("linear_int8_rows3_no_bias", rnd((3, 45)), 17, bias=False, seed=2)
int8_case("linear_int8_batched_gemm", rnd((2, 9, 40)), 21, seed=3)
int8_case("linear_int8_gemm_blocks", rnd((9, 264), lo=-1, hi=1), 37, seed=4)
int8_case("linear_int8_noncontiguous", In(rnd((40, 12)), [["transpose", 0, 1]]), 7, seed=5)
int8_case("linear_int8_f16", rnd((2, 32), F16), 6, seed=6)
int8_case("linear_int8_bf16", rnd((10, 32), BF16), 6, seed=7)
int8_case("linear_int8_empty_batch", rnd((0, 40)), 9, seed=8)
int8_case("linear_int8_k0", rnd((3, 0)), 4, seed=9)

# --- int4 products ---
int4_case("linear_int4_batch1_g32", rnd((1, 64)), 9, 32)
int4_case("linear_int4_rows2_g128", rnd((2, 256)), 11, 128, seed=1)
int4_case("linear_int4_batched_gemm_g32", rnd((2, 6, 96)), 13, 32, seed=2)
int4_case("linear_int4_gemm_blocks_g128", rnd((9, 256), lo=-1, hi=1), 35, 128, bias=False, seed=3)
int4_case("linear_int4_g2_odd_tail", rnd((3, 6)), 5, 2, seed=4)
int4_case("linear_int4_noncontiguous", In(rnd((64, 8)), [["transpose", 0, 1]]), 5, 32, seed=5)
int4_case("linear_int4_bf16", rnd((2, 64), BF16), 4, 32, seed=6)
int4_case("linear_int4_empty_batch", rnd((0, 32)), 3, 32, seed=7)

# --- bad calls: typed errors naming the op ---
x, q8, s8, b8 = rnd((2, 8)), torch.zeros((3, 8), dtype=torch.int8), torch.ones(3), torch.zeros(3)
cases.append(error("linear_int8", [x, q8.to(torch.int16), s8, b8], "DTypeError", name="linear_int8_int16_values"))
cases.append(error("linear_int8", [x, q8.reshape(-1), s8, b8], "ShapeError", name="linear_int8_1d_values"))
cases.append(error("linear_int8", [x, q8, torch.ones(4), b8], "ShapeError", name="linear_int8_scale_shape"))
cases.append(error("linear_int8", [x, q8, s8.to(torch.int32), b8], "DTypeError", name="linear_int8_int_scale"))
cases.append(error("linear_int8", [rnd((2, 7)), q8, s8, b8], "ShapeError", name="linear_int8_inner_mismatch"))
cases.append(error("linear_int8", [x.to(torch.int64), q8, s8, b8], "DTypeError", name="linear_int8_int_input"))
cases.append(error("linear_int8", [x.double(), q8, s8, None], "DTypeError", name="linear_int8_f64_input"))
cases.append(error("linear_int8", [x, q8, s8, b8.double()], "DTypeError", name="linear_int8_bias_dtype"))
cases.append(error("linear_int8", [x, q8, s8, torch.zeros(2)], "ShapeError", name="linear_int8_bias_shape"))
cases.append(error("linear_int8", [rnd(()), q8, s8, None], "ShapeError", name="linear_int8_0d_input"))
p4, s4, z4 = torch.zeros((3, 32), dtype=torch.uint8), torch.ones((3, 2)), torch.zeros((3, 2), dtype=torch.uint8)
x4 = rnd((2, 64))
cases.append(error("linear_int4", [x4, p4, s4, z4, None], "ValueError", attrs={"group": 0}, name="linear_int4_group0"))
cases.append(error("linear_int4", [x4, p4, s4, z4, None], "ValueError", attrs={"group": 3}, name="linear_int4_odd_group"))
cases.append(error("linear_int4", [x4, p4, s4, z4, None], "ValueError", attrs={"group": 48}, name="linear_int4_group_not_dividing"))
cases.append(error("linear_int4", [x4, p4, s4, z4.float(), None], "DTypeError", attrs={"group": 32}, name="linear_int4_float_zero"))
cases.append(error("linear_int4", [x4, p4, torch.ones((3, 4)), z4, None], "ShapeError", attrs={"group": 32}, name="linear_int4_scale_groups"))
cases.append(error("linear_int4", [x4, p4.to(torch.int8), s4, z4, None], "DTypeError", attrs={"group": 32}, name="linear_int4_int8_values"))
cases.append(error("linear_int4", [rnd((2, 32)), p4, s4, z4, None], "ShapeError", attrs={"group": 32}, name="linear_int4_inner_mismatch"))

write("quant", cases)
