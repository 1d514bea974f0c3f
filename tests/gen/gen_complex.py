"""Golden cases for complex tensors (complex64 / complex128).

Run with /usr/bin/python3 (torch 1.13). Writes
  tests/data/complex.json            registry ops on complex operands (the conformance suite runs
                                     them on every device with the ops' own runners);
  tests/data/complex/functions.json  ember::complex/polar/real/imag/conj/angle, printing and
                                     gradients (tests/ops/complex_test.cpp).
A complex tensor's "data" holds the interleaved (real, imaginary) pairs of view_as_real.
"""
import json
import os
import warnings
import zlib

import torch

from common import DATA, In, Scalar, case, error, grad_case, spec_of, tensor_spec, write

warnings.simplefilter("ignore")  # complex -> real casts warn in torch; ember documents it
C64, C128 = torch.complex64, torch.complex128


def crnd(shape, dtype=C64, scale=2.0):
    g = torch.Generator().manual_seed(zlib.crc32(repr((tuple(shape), str(dtype))).encode()))
    part = torch.float32 if dtype == C64 else torch.float64
    re = (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * scale
    im = (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * scale
    return torch.complex(re.to(part), im.to(part))


def rrnd(shape, dtype=torch.float32, lo=-2.0, hi=2.0):
    g = torch.Generator().manual_seed(zlib.crc32(repr(("r", tuple(shape), str(dtype))).encode()))
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


cases = []


def add(op, fn, inputs, name, attrs=None, rtol=None, atol=None):
    cases.append(case(op, fn, inputs, attrs, name, rtol=rtol, atol=atol))


# --- view_as_real / view_as_complex (registry ops) ---
add("view_as_real", torch.view_as_real, [crnd([2, 3])], "cx_view_as_real_c64")
add("view_as_real", torch.view_as_real, [In(crnd([3, 4], C128), [["transpose", 0, 1]])],
    "cx_view_as_real_c128_transposed")
add("view_as_real", torch.view_as_real, [crnd([])], "cx_view_as_real_0d")
add("view_as_real", torch.view_as_real, [crnd([0, 3])], "cx_view_as_real_empty")
add("view_as_complex", torch.view_as_complex, [rrnd([3, 2])], "cx_view_as_complex_f32")
add("view_as_complex", torch.view_as_complex, [rrnd([2, 2, 2], torch.float64)],
    "cx_view_as_complex_f64")
add("view_as_complex", torch.view_as_complex, [In(rrnd([4, 3, 2]), [["slice", 0, 0, 4, 2]])],
    "cx_view_as_complex_strided")
add("view_as_complex", torch.view_as_complex, [rrnd([2])], "cx_view_as_complex_0d")
cases.append(error("view_as_complex", [rrnd([3])], "ShapeError", name="cx_view_as_complex_not_pairs"))
cases.append(error("view_as_complex", [In(rrnd([2, 3]), [["transpose", 0, 1]])], "ShapeError",
                   name="cx_view_as_complex_last_stride"))
cases.append(error("view_as_complex", [torch.ones(3, 2, dtype=torch.int64)], "DTypeError",
                   name="cx_view_as_complex_int"))
cases.append(error("view_as_real", [rrnd([3, 2])], "DTypeError", name="cx_view_as_real_real"))

# --- arithmetic, broadcasting and promotion ---
for op, fn in [("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("div", torch.div)]:
    add(op, fn, [crnd([2, 3]), crnd([2, 3]) + 0.5], "cx_%s_c64" % op)
    add(op, fn, [crnd([2, 3], C128), crnd([3], C128) + 1j], "cx_%s_broadcast_c128" % op)
    add(op, fn, [In(crnd([3, 2]), [["transpose", 0, 1]]), crnd([2, 1]) + 0.25],
        "cx_%s_noncontig" % op)
    add(op, fn, [crnd([2, 3]), rrnd([3]) + 3], "cx_%s_real_tensor" % op)
    add(op, fn, [rrnd([2, 1], torch.float64) + 3, crnd([3])], "cx_%s_f64_promotes" % op)
    add(op, fn, [crnd([2, 3]), Scalar(2.5)], "cx_%s_real_scalar" % op)
    add(op, fn, [rrnd([3]) + 3, Scalar(1.5 - 2j)], "cx_%s_complex_scalar" % op)
    add(op, fn, [crnd([]), crnd([4])], "cx_%s_0d" % op)
    add(op, fn, [crnd([0, 3]), crnd([3])], "cx_%s_empty" % op)
add("mul", torch.mul, [torch.tensor([1, -2, 3]), crnd([3], C128)], "cx_mul_int_tensor")
add("mul", torch.mul, [crnd([2, 3]), Scalar(3)], "cx_mul_int_scalar")
add("div", torch.div, [Scalar(2.0), crnd([3], C128)], "cx_div_scalar_tensor")

for op, fn in [("neg", torch.neg), ("abs", torch.abs), ("exp", torch.exp), ("log", torch.log),
               ("sqrt", torch.sqrt), ("square", torch.square), ("reciprocal", torch.reciprocal),
               ("sin", torch.sin), ("cos", torch.cos), ("sinh", torch.sinh), ("cosh", torch.cosh),
               ("log2", torch.log2), ("log10", torch.log10), ("rsqrt", torch.rsqrt),
               ("tanh", torch.tanh)]:
    add(op, fn, [crnd([2, 3])], "cx_%s_c64" % op, rtol=1e-5, atol=2e-6)
    add(op, fn, [In(crnd([3, 2], C128), [["transpose", 0, 1]])], "cx_%s_c128_noncontig" % op)
    add(op, fn, [crnd([])], "cx_%s_0d" % op, rtol=1e-5, atol=2e-6)
    add(op, fn, [crnd([0])], "cx_%s_empty" % op)
# the branch cut and the special points
edge = torch.tensor([-4 + 0j, -4 - 0j, 4j, -4j, 0j, 1e30 + 1e30j, 3 - 4j], dtype=C128)
add("sqrt", torch.sqrt, [edge[:5]], "cx_sqrt_branch_cut")
add("abs", torch.abs, [edge], "cx_abs_edges")
add("log", torch.log, [edge[[0, 1, 2, 3, 6]]], "cx_log_branch_cut")

# inverse trigonometry: principal branches; the cuts' sides follow the sign of a zero part
for op, fn in [("asin", torch.asin), ("acos", torch.acos), ("atan", torch.atan),
               ("asinh", torch.asinh), ("acosh", torch.acosh), ("atanh", torch.atanh)]:
    add(op, fn, [crnd([2, 3])], "cx_%s_c64" % op, rtol=1e-5, atol=2e-6)
    add(op, fn, [In(crnd([3, 2], C128), [["transpose", 0, 1]])], "cx_%s_c128_noncontig" % op)
    add(op, fn, [crnd([4], C128, 0.5)], "cx_%s_c128_small" % op)
    add(op, fn, [crnd([0])], "cx_%s_empty" % op)
    # torch 1.13's vectorised atan takes the other side of its cut (i y, |y| > 1) than
    # std::complex and ember do: no points there.
    cut = [2 + 0j, complex(2, -0.0), -2 + 0j, complex(-2, -0.0), 0.5 + 0j, 1 + 0j, 0j, 30 - 40j]
    if op != "atan":
        cut += [3j, -3j, complex(-0.0, 3), complex(0.0, -3)]
    add(op, fn, [torch.tensor(cut, dtype=C128)], "cx_%s_branch_cuts" % op)

for op, fn in [("eq", torch.eq), ("ne", torch.ne)]:
    a = torch.tensor([1 + 2j, 3 - 1j, 0j, 2 + 0j], dtype=C64)
    b = torch.tensor([1 + 2j, 3 + 1j, 0j, 2 - 0j], dtype=C64)
    add(op, fn, [a, b], "cx_%s" % op)
    add(op, fn, [a, torch.tensor([1.0, 3.0, 0.0, 2.0])], "cx_%s_real" % op)
    add(op, fn, [a, Scalar(2.0)], "cx_%s_scalar" % op)
nan = torch.tensor([complex(float("nan"), 1), complex(1, float("inf")), 1 + 1j], dtype=C64)
for op, fn in [("isnan", torch.isnan), ("isinf", torch.isinf), ("isfinite", torch.isfinite)]:
    add(op, fn, [nan], "cx_%s" % op)

for p in [2.0, 0.5, 3.0, -1.5, 1.0]:
    add("pow", torch.pow, [crnd([2, 3]), Scalar(p)], "cx_pow_%s" % str(p).replace(".", "_").replace("-", "m"))
add("pow", torch.pow, [crnd([3], C128), Scalar(0.5 + 1j)], "cx_pow_complex_scalar")
add("pow", torch.pow, [crnd([2, 3], C128), crnd([3], C128)], "cx_pow_tensor")
add("pow", torch.pow, [rrnd([3], lo=0.5, hi=2), Scalar(1 - 0.5j)], "cx_pow_real_base")
add("cumsum", lambda t: t.cumsum(1), [crnd([2, 3])], "cx_cumsum", {"dim": 1})
add("cumsum", lambda t: t.cumsum(-2), [In(crnd([3, 2], C128), [["transpose", 0, 1]])],
    "cx_cumsum_noncontig", {"dim": -2})
add("cumsum", lambda t: t.cumsum(0), [crnd([])], "cx_cumsum_0d", {"dim": 0})
add("cumprod", lambda t: t.cumprod(1), [crnd([2, 5])], "cx_cumprod", {"dim": 1}, rtol=1e-5, atol=2e-5)
add("cumprod", lambda t: t.cumprod(0), [In(crnd([3, 4], C128), [["transpose", 0, 1]])],
    "cx_cumprod_noncontig", {"dim": 0})
add("cumprod", lambda t: t.cumprod(0), [torch.tensor([1 + 1j, 0j, 2 - 1j], dtype=C128)],
    "cx_cumprod_zero", {"dim": 0})
add("cumprod", lambda t: t.cumprod(0), [crnd([0, 2])], "cx_cumprod_empty", {"dim": 0})
add("tanh", torch.tanh, [torch.tensor([30 + 1j, -400 + 0.5j, 0.25 - 3j, 2j], dtype=C128)],
    "cx_tanh_large")

cond = torch.tensor([[True, False, True], [False, False, True]])
add("where", torch.where, [cond, crnd([2, 3]), crnd([3])], "cx_where")
add("where", lambda c, a, b: torch.where(c, a, b), [cond, crnd([2, 3]), Scalar(0.5)],
    "cx_where_scalar")

# --- casts ---
for src, dst, name in [(crnd([2, 3]), C128, "c64_c128"), (crnd([2, 3], C128), C64, "c128_c64"),
                       (rrnd([2, 3]), C64, "f32_c64"), (torch.tensor([1, -2, 3]), C128, "i64_c128"),
                       (torch.tensor([True, False]), C64, "bool_c64"),
                       (crnd([2, 3]), torch.float32, "c64_f32"),
                       (crnd([4], C128), torch.float32, "c128_f32"),
                       (In(crnd([3, 2]), [["transpose", 0, 1]]), C128, "noncontig")]:
    dn = str(dst).split(".")[1]
    add("cast", lambda x, d=dst: x.to(d), [src], "cx_cast_" + name, {"dtype": dn})

# --- reductions ---
x = crnd([2, 3, 4])
add("sum", lambda t: t.sum(), [x], "cx_sum_all", {"dims": []})
add("sum", lambda t: t.sum(1), [x], "cx_sum_dim", {"dims": [1]})
add("sum", lambda t: t.sum((0, 2), keepdim=True), [x], "cx_sum_keepdim",
    {"dims": [0, 2], "keepdim": True})
add("sum", lambda t: t.sum(-1), [In(crnd([4, 3], C128), [["transpose", 0, 1]])],
    "cx_sum_noncontig", {"dims": [-1]})
add("sum", lambda t: t.sum(0), [crnd([0, 3])], "cx_sum_empty", {"dims": [0]})
add("sum", lambda t: t.sum(), [crnd([])], "cx_sum_0d", {"dims": []})
add("sum", lambda t: t.sum(dtype=C128), [crnd([3])], "cx_sum_dtype", {"dims": [], "dtype": "complex128"})
add("prod", lambda t: t.prod(), [crnd([2, 3])], "cx_prod_all", {}, rtol=1e-5, atol=1e-5)
add("prod", lambda t: t.prod(1), [crnd([2, 5, 3], C128)], "cx_prod_dim", {"dim": 1})
add("prod", lambda t: t.prod(0, keepdim=True), [In(crnd([4, 3], C128), [["transpose", 0, 1]])],
    "cx_prod_keepdim_noncontig", {"dim": 0, "keepdim": True})
add("prod", lambda t: t.prod(0), [crnd([0, 3], C128)], "cx_prod_empty", {"dim": 0})
add("prod", lambda t: t.prod(0), [torch.tensor([[1j, 2], [0j, 3 + 1j]], dtype=C128)], "cx_prod_zero",
    {"dim": 0})
add("mean", lambda t: t.mean(), [x], "cx_mean_all", {"dims": []})
add("mean", lambda t: t.mean((0, 1)), [x], "cx_mean_dims", {"dims": [0, 1]})
add("mean", lambda t: t.mean(0, keepdim=True), [crnd([3, 2], C128)], "cx_mean_keepdim_c128",
    {"dims": [0], "keepdim": True})

# --- products ---
add("matmul", torch.matmul, [crnd([2, 3]), crnd([3, 4])], "cx_matmul_c64")
add("matmul", torch.matmul, [crnd([2, 2, 3], C128), crnd([3, 2], C128)], "cx_matmul_batched_c128")
add("matmul", torch.matmul, [In(crnd([3, 2]), [["transpose", 0, 1]]), crnd([3])], "cx_matmul_mv")
add("matmul", torch.matmul, [crnd([0, 3]), crnd([3, 2])], "cx_matmul_empty")
add("mm", torch.mm, [crnd([3, 3], C128), crnd([3, 2], C128)], "cx_mm")
add("bmm", torch.bmm, [crnd([2, 2, 3]), crnd([2, 3, 2])], "cx_bmm")
# torch 1.13's CPU dot returns 0 for complex64 here (Debian's BLAS cdotu): the reference is the
# definition, sum(a * b) without conjugation.
add("dot", lambda a, b: (a * b).sum(), [crnd([5]), crnd([5])], "cx_dot")
add("dot", lambda a, b: (a * b).sum(), [crnd([4], C128), crnd([4], C128)], "cx_dot_c128")
add("outer", torch.outer, [crnd([3], C128), crnd([2], C128)], "cx_outer")

# --- data movement on complex elements (kernels of their own) ---
add("reshape", lambda t: t.reshape(3, 2), [crnd([2, 3])], "cx_reshape", {"shape": [3, 2]})
add("contiguous", lambda t: t.contiguous(), [In(crnd([3, 4], C128), [["transpose", 0, 1]])],
    "cx_contiguous_c128")
add("cat", lambda a, b: torch.cat([a, b], 1), [crnd([2, 3]), crnd([2, 1])], "cx_cat", {"dim": 1})
add("stack", lambda a, b: torch.stack([a, b], 0), [crnd([3], C128), crnd([3], C128)], "cx_stack",
    {"dim": 0})
add("flip", lambda t: t.flip(1), [crnd([2, 3])], "cx_flip", {"dims": [1]})
add("index_select", lambda t, i: t.index_select(0, i), [crnd([4, 2], C128), torch.tensor([3, 0, 3])],
    "cx_index_select", {"dim": 0})

# --- ops without complex support: refused by name ---
for op, inputs in [("relu", [crnd([3])]), ("lt", [crnd([3]), crnd([3])]), ("erf", [crnd([3])]),
                   ("maximum", [crnd([3]), crnd([3])]), ("cummax", [crnd([3])]),
                   ("amax", [crnd([3])]), ("sort", [crnd([3])]), ("atan2", [crnd([3]), crnd([3])])]:
    attrs = {"dim": 0} if op in ("cummax", "sort") else {}
    cases.append(error(op, inputs, "DTypeError", attrs, name="cx_%s_refused" % op))

write("complex", cases)

# ---------------------------------------------------------------------------------------------
# functions, printing, gradients
fns = []


def fcase(fn, f, inputs):
    outs = f(*[i.value() if isinstance(i, In) else i for i in inputs])
    fns.append({"fn": fn, "inputs": [spec_of(i) for i in inputs],
                "output": tensor_spec(outs.resolve_conj() if outs.is_complex() else outs)})


fcase("complex", torch.complex, [rrnd([2, 3]), rrnd([3])])
fcase("complex", torch.complex, [rrnd([2], torch.float64), rrnd([2, 1], torch.float64)])
fcase("polar", torch.polar, [rrnd([4], lo=0, hi=3), rrnd([4], lo=-3, hi=3)])
fcase("real", torch.real, [crnd([2, 3])])
fcase("imag", torch.imag, [crnd([2, 3], C128)])
fcase("real", torch.real, [rrnd([3])])
fcase("conj", torch.conj, [crnd([2, 3])])
fcase("conj", torch.conj, [In(crnd([3, 2], C128), [["transpose", 0, 1]])])
fcase("angle", torch.angle, [crnd([2, 3])])
fcase("angle", torch.angle, [torch.tensor([-2.0, 0.0, 3.0, float("nan"), -0.5])])
fcase("angle", torch.angle, [torch.tensor([-2, 0, 3])])

prints = []
for t in [torch.tensor([1 + 2j, 3 - 4j]), torch.tensor([0.5 + 1.25j, -1 - 0.125j]),
          torch.tensor(1.5 - 2j), torch.tensor([[1 + 1j, 2], [3j, -4 - 0j]], dtype=C128),
          torch.tensor([1e-5 + 1e5j, 2 + 3j]), torch.tensor([complex(float("nan"), 1), 1 - 1j]),
          torch.zeros(0, dtype=C64), torch.zeros(2, 0, dtype=C128), torch.tensor([-0.0 - 0.0j]),
          torch.tensor([complex(float("nan"), 1), 1 - 1j, 10 + 0.5j]), torch.tensor([0j, 1 - 1j]),
          # real columns are sized as torch sizes them: by the finite non-zero values
          torch.tensor([float("nan"), 1.0]), torch.tensor([float("-inf"), 1.5, 0.0])]:
    prints.append({"input": spec_of(t), "str": str(t).replace("torch.", "")})


grads = [
    grad_case("abs_mul", lambda z, w: (z * w).abs().sum(), [crnd([3], C128), crnd([3], C128)]),
    grad_case("exp_div_real", lambda z: (z.exp() / (z + 3)).real.sum(), [crnd([4], C128, 1.0)]),
    grad_case("log_imag", lambda z: torch.log(z).imag.sum() + torch.log(z).real.sum(),
              [crnd([4], C128) + 0.5]),
    grad_case("sqrt_view_as_real", lambda z: torch.view_as_real(torch.sqrt(z)).sum(),
              [crnd([2, 2], C128) + 3]),
    grad_case("matmul_abs2", lambda a, b: ((a @ b).abs() ** 2).sum(),
              [crnd([2, 3], C128), crnd([3, 2], C128)]),
    grad_case("real_param", lambda z, r: (z * r - r).abs().sum(),
              [crnd([2, 3], C128), rrnd([3], torch.float64)]),
    grad_case("conj_mul", lambda z: (z * z.conj()).real.sum() + (z.conj() * 2j).imag.sum(),
              [crnd([3], C128)]),
    grad_case("angle_mean", lambda z: z.angle().sum() + z.mean().abs(), [crnd([5], C128)]),
    grad_case("tanh_prod_cumprod", lambda z: z.tanh().abs().sum() + z.prod().real
              + z.cumprod(0).imag.sum(), [crnd([5], C128, 1.0)]),
    grad_case("sum_broadcast", lambda z, w: (z + w).sum(0).abs().sum(),
              [crnd([2, 3], C128), crnd([3], C128)]),
    grad_case("slices", lambda z: z[1:3].abs().sum() + z[::2].abs().sum() + z[0].real,
              [crnd([4], C128)]),
    grad_case("inverse_trig", lambda z: sum((f(z).real + f(z).imag ** 2).sum() for f in
                                            [torch.asin, torch.acos, torch.atan, torch.asinh,
                                             torch.acosh, torch.atanh]),
              [crnd([5], C128, 1.5)]),
    grad_case("complex_polar", lambda a, b: torch.polar(a, b).imag.sum()
              + torch.complex(a, b).abs().sum(),
              [rrnd([3], torch.float64, 0.5, 2), rrnd([3], torch.float64)]),
]
os.makedirs(os.path.join(DATA, "complex"), exist_ok=True)
# a safetensors file written by an independent writer (tests/gen/safetensors_tool.py)
from safetensors_tool import save as save_safetensors  # noqa: E402
stored = [("z64", crnd([2, 3])), ("z128", crnd([3], C128)), ("empty", crnd([0, 2]))]
save_safetensors(os.path.join(DATA, "complex", "complex.safetensors"), stored)
path = os.path.join(DATA, "complex", "functions.json")
with open(path, "w") as f:
    json.dump({"generator": "tests/gen/gen_complex.py", "torch": torch.__version__,
               "functions": fns, "prints": prints, "grads": grads,
               "safetensors": [{"name": n, "tensor": tensor_spec(t)} for n, t in stored]},
              f, separators=(",", ":"))
print("complex/functions: %d functions, %d prints, %d gradients -> %s"
      % (len(fns), len(prints), len(grads), path))
