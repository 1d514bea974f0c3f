#!/usr/bin/python3
"""Golden cases for unary, binary and ternary elementwise ops -> tests/data/elementwise.json."""
import torch
import torch.nn.functional as F

from common import (ALL, FLOATS, INTS, In, Scalar, case, error, rnd, write)

cases = []


def add_opt(make):
    """Adds a case torch can express; a few scalar forms have no torch overload (atan2)."""
    try:
        cases.append(make())
    except TypeError:
        pass



# --- unary ---
FLOAT_UNARY = {
    "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1, "log": torch.log,
    "log2": torch.log2, "log10": torch.log10, "log1p": torch.log1p, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "reciprocal": torch.reciprocal, "sin": torch.sin, "cos": torch.cos,
    "tan": torch.tan, "asin": torch.asin, "acos": torch.acos, "atan": torch.atan,
    "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh, "asinh": torch.asinh,
    "acosh": torch.acosh, "atanh": torch.atanh, "erf": torch.erf, "erfinv": torch.erfinv,
    "sigmoid": torch.sigmoid, "silu": F.silu, "mish": F.mish, "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
}
# domains keep most values finite (edges like log(0) are covered by the special-values case)
DOMAIN = {"log": (0.05, 4), "log2": (0.05, 4), "log10": (0.05, 4), "log1p": (-0.9, 4),
          "sqrt": (0, 4), "rsqrt": (0.1, 4), "asin": (-1, 1), "acos": (-1, 1),
          "acosh": (1, 4), "atanh": (-0.95, 0.95), "erfinv": (-0.99, 0.99), "reciprocal": (0.2, 3)}
SPECIAL = torch.tensor([0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 0.5, 2.0])

for name, fn in FLOAT_UNARY.items():
    lo, hi = DOMAIN.get(name, (-3, 3))
    for dt in FLOATS:
        cases.append(case(name, fn, [rnd([3, 4], dt, lo, hi)], name=f"{name}_{dt}"[:60]))
    # non-contiguous (transposed) input, 0-d, empty, int input promotes to float
    cases.append(case(name, fn, [In(rnd([4, 3], torch.float32, lo, hi), [["transpose", 0, 1]])], name=name + "_noncontig"))
    cases.append(case(name, fn, [rnd([], torch.float64, lo, hi)], name=name + "_0d"))
    cases.append(case(name, fn, [torch.zeros(0, 3)], name=name + "_empty"))
    try:
        cases.append(case(name, fn, [torch.tensor([1, 2, 3], dtype=torch.int32)], name=name + "_int"))
    except RuntimeError:
        pass  # torch has no integer form of this op
    cases.append(case(name, fn, [SPECIAL.double()], name=name + "_special"))

SAME_UNARY = {"neg": torch.neg, "abs": torch.abs, "sign": torch.sign, "square": torch.square,
              "relu": torch.relu, "floor": torch.floor, "ceil": torch.ceil, "round": torch.round,
              "trunc": torch.trunc}
for name, fn in SAME_UNARY.items():
    dts = FLOATS + [d for d in INTS if not (d == torch.uint8 and name in ("neg",))]
    if name in ("sign",):
        dts = dts + [torch.bool]
    for dt in dts:
        try:
            cases.append(case(name, fn, [rnd([2, 5], dt)], name=f"{name}_{dt}"))
        except RuntimeError:
            pass
    cases.append(case(name, fn, [In(rnd([5, 2]), [["transpose", 0, 1]])], name=name + "_noncontig"))
    cases.append(case(name, fn, [torch.tensor(-2.5)], name=name + "_0d"))
    cases.append(case(name, fn, [torch.zeros(0)], name=name + "_empty"))
    cases.append(case(name, fn, [SPECIAL], name=name + "_special"))
cases.append(case("round", torch.round, [torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5])], name="round_half_even"))
cases.append(case("square", torch.square, [torch.tensor([True, False])], name="square_bool"))
for name in ("neg", "abs", "relu"):
    cases.append(error(name, [torch.tensor([True, False])], "DTypeError", name=name + "_bool_error"))

for dt in FLOATS:
    x = rnd([3, 4], dt)
    cases.append(case("gelu", lambda t: F.gelu(t), [x], {"approximate": "none"}, name=f"gelu_{dt}"))
    cases.append(case("gelu", lambda t: F.gelu(t, approximate="tanh"), [x], {"approximate": "tanh"}, name=f"gelu_tanh_{dt}"))
    cases.append(case("softplus", lambda t: F.softplus(t, 2.0, 3.0), [x], {"beta": 2.0, "threshold": 3.0}, name=f"softplus_{dt}"))
    cases.append(case("elu", lambda t: F.elu(t, 0.7), [x], {"alpha": 0.7}, name=f"elu_{dt}"))
    cases.append(case("leaky_relu", lambda t: F.leaky_relu(t, 0.2), [x], {"slope": 0.2}, name=f"leaky_relu_{dt}"))
cases.append(case("softplus", lambda t: F.softplus(t), [SPECIAL], {"beta": 1.0, "threshold": 20.0}, name="softplus_special"))
cases.append(error("gelu", [torch.ones(2)], "ValueError", {"approximate": "fast"}))

for dt in ALL:
    x = rnd([2, 3], dt)
    cases.append(case("logical_not", torch.logical_not, [x], name=f"logical_not_{dt}"))
    for name, fn in (("isnan", torch.isnan), ("isinf", torch.isinf), ("isfinite", torch.isfinite)):
        cases.append(case(name, fn, [x], name=f"{name}_{dt}"))
for name, fn in (("isnan", torch.isnan), ("isinf", torch.isinf), ("isfinite", torch.isfinite)):
    cases.append(case(name, fn, [SPECIAL], name=name + "_special"))
for dt in INTS + [torch.bool]:
    cases.append(case("bitwise_not", torch.bitwise_not, [rnd([2, 3], dt)], name=f"bitwise_not_{dt}"))
cases.append(error("bitwise_not", [torch.ones(2)], "DTypeError"))
for dt in FLOATS:
    cases.append(case("nan_to_num", lambda t: torch.nan_to_num(t), [SPECIAL.to(dt)], {}, name=f"nan_to_num_{dt}"))
cases.append(case("nan_to_num", lambda t: torch.nan_to_num(t, 1.0, 2.0, -3.0), [SPECIAL],
                  {"nan": 1.0, "posinf": 2.0, "neginf": -3.0}, name="nan_to_num_values"))
cases.append(case("nan_to_num", lambda t: torch.nan_to_num(t), [torch.arange(3)], {}, name="nan_to_num_int"))

# casts: every pair of dtypes, with values that survive the trip in each
for src in ALL:
    x = rnd([7], src, -2, 3) if src != torch.bool else torch.tensor([True, False, True])
    if src in FLOATS:
        x = torch.tensor([-1.75, -0.5, 0.0, 0.5, 1.25, 2.9, 100.0], dtype=src)
    for dst in ALL:
        if src in FLOATS and dst in (torch.uint8,):
            xx = x.abs()
        else:
            xx = x
        cases.append(case("cast", lambda t, d=dst: t.to(d), [xx], {"dtype": str(dst).replace("torch.", "")},
                          name=f"cast_{src}_{dst}".replace("torch.", "")))
cases.append(case("cast", lambda t: t.to(torch.int64), [In(rnd([3, 4]), [["transpose", 0, 1]])],
                  {"dtype": "int64"}, name="cast_noncontig"))

# --- binary ---
ARITH = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
         "remainder": torch.remainder, "fmod": torch.fmod, "pow": torch.pow, "atan2": torch.atan2,
         "maximum": torch.maximum, "minimum": torch.minimum}
CMP = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}
LOGIC = {"logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor}
BITS = {"bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor}


def nonzero(t):
    if t.dtype == torch.bool:
        return torch.ones_like(t)
    return torch.where(t == 0, torch.ones_like(t), t)


for name, fn in {**ARITH, **CMP}.items():
    for dt in ALL:
        a, b = rnd([3, 4], dt), rnd([3, 4], dt, 1, 3) if name in ("pow",) else rnd([4], dt)
        if name in ("remainder", "fmod", "div") or (name == "pow" and dt in INTS):
            b = nonzero(b) if name != "pow" else rnd([4], dt, 0, 1).abs()
        try:
            fn(a, b)
        except RuntimeError:
            if dt == torch.bool:
                cases.append(error(name, [a, b], "DTypeError", name=f"{name}_bool_error"))
            continue
        cases.append(case(name, fn, [a, b], name=f"{name}_{dt}_bcast"))
    # broadcasting both ways, non-contiguous, 0-d, empty, mixed dtypes, scalars
    cases.append(case(name, fn, [rnd([3, 1]), rnd([1, 4], lo=0.5)], name=name + "_bcast2"))
    cases.append(case(name, fn, [In(rnd([4, 3]), [["transpose", 0, 1]]), In(rnd([3, 8], lo=0.5), [["slice", 1, 0, 8, 2]])], name=name + "_noncontig"))
    cases.append(case(name, fn, [rnd([]), rnd([], lo=0.5)], name=name + "_0d"))
    cases.append(case(name, fn, [torch.zeros(0, 3), rnd([3], lo=0.5)], name=name + "_empty"))
    cases.append(case(name, fn, [rnd([2, 3], torch.int32, 1, 3), rnd([3], torch.float64, 0.5, 2)], name=name + "_mixed"))
    cases.append(case(name, fn, [rnd([2, 3], torch.float16, 0.5, 2), rnd([3], torch.bfloat16, 0.5, 2)], name=name + "_f16_bf16", rtol=2e-2, atol=2e-2))
    add_opt(lambda: case(name, lambda a, b: fn(a, b), [rnd([2, 3], torch.int64, 1, 3), Scalar(2)], name=name + "_int_scalar"))
    add_opt(lambda: case(name, lambda a, b: fn(a, b), [rnd([2, 3], torch.int32, 1, 3), Scalar(1.5)], name=name + "_int_float_scalar"))
    add_opt(lambda: case(name, lambda a, b: fn(a, b), [rnd([2, 3], torch.float16, 0.5, 3), Scalar(2.5)], name=name + "_half_scalar"))
    add_opt(lambda: case(name, lambda a, b: fn(torch.tensor(a), b), [Scalar(3), rnd([2, 3], torch.float32, 0.5, 3)], name=name + "_scalar_lhs"))
    cases.append(case(name, fn, [rnd([2, 3], torch.int32, 1, 3), rnd([], torch.float64, 0.5, 2)], name=name + "_0d_float_wins"))
    cases.append(case(name, fn, [rnd([2, 3], torch.float16, 0.5, 3), rnd([], torch.float64, 0.5, 2)], name=name + "_0d_same_cat"))
    cases.append(error(name, [torch.ones(2, 3), torch.ones(4, 3)], "ShapeError", name=name + "_shape_error"))

for mode in ("floor", "trunc"):
    for dt in (torch.float32, torch.float64, torch.int64, torch.int32, torch.int8):
        a = torch.tensor([7, -7, 7, -7, 0, 5], dtype=dt)
        b = torch.tensor([2, 2, -2, -2, 3, 5], dtype=dt)
        cases.append(case("div", lambda x, y, m=mode: torch.div(x, y, rounding_mode=m), [a, b], {"rounding_mode": mode}, name=f"div_{mode}_{dt}"))
    cases.append(error("div", [torch.tensor([1, 2]), torch.tensor([1, 0])], "ValueError", {"rounding_mode": mode}, name=f"div_{mode}_by_zero"))
cases.append(case("div", lambda x, y: torch.div(x, y, rounding_mode="floor"), [torch.tensor([1.0, -1.0, 0.0]), torch.tensor([0.0, 0.0, 0.0])], {"rounding_mode": "floor"}, name="div_floor_float_zero"))
cases.append(error("div", [torch.ones(2), torch.ones(2)], "ValueError", {"rounding_mode": "ceil"}, name="div_bad_mode"))
cases.append(error("remainder", [torch.tensor([1, 2]), torch.tensor([1, 0])], "ValueError", name="remainder_by_zero"))
cases.append(case("remainder", torch.remainder, [torch.tensor([5.5, -5.5, 5.5, -5.5]), torch.tensor([2.0, 2.0, -2.0, -2.0])], name="remainder_signs"))
cases.append(case("fmod", torch.fmod, [torch.tensor([5, -5, 5, -5]), torch.tensor([3, 3, -3, -3])], name="fmod_int_signs"))
cases.append(case("pow", torch.pow, [torch.tensor([2, -2, 1, -1, 3]), torch.tensor([-1, -1, -5, -3, 0])], name="pow_int_negative_exp"))
cases.append(case("maximum", torch.maximum, [torch.tensor([1.0, float("nan"), 3.0]), torch.tensor([float("nan"), 2.0, 1.0])], name="maximum_nan"))
cases.append(case("minimum", torch.minimum, [torch.tensor([1.0, float("nan"), 3.0]), torch.tensor([float("nan"), 2.0, 1.0])], name="minimum_nan"))

for name, fn in LOGIC.items():
    for dt in ALL:
        cases.append(case(name, fn, [rnd([2, 3], dt), rnd([3], dt)], name=f"{name}_{dt}"))
    cases.append(case(name, fn, [rnd([2, 3], torch.float32), rnd([3], torch.int64)], name=name + "_mixed"))
for name, fn in BITS.items():
    for dt in INTS + [torch.bool]:
        cases.append(case(name, fn, [rnd([2, 3], dt), rnd([3], dt)], name=f"{name}_{dt}"))
    add_opt(lambda: case(name, fn, [rnd([2, 3], torch.int64), Scalar(6)], name=name + "_scalar"))
    cases.append(error(name, [torch.ones(2), torch.ones(2)], "DTypeError", name=name + "_float_error"))
for name, fn in (("bitwise_left_shift", torch.bitwise_left_shift), ("bitwise_right_shift", torch.bitwise_right_shift)):
    for dt in INTS:
        cases.append(case(name, fn, [rnd([2, 3], dt, -2, 5), torch.tensor([0, 1, 3], dtype=dt)], name=f"{name}_{dt}"))
    cases.append(error(name, [torch.ones(2), torch.ones(2)], "DTypeError", name=name + "_float_error"))

# --- ternary ---
for dt in ALL:
    c = rnd([3, 4], torch.bool)
    cases.append(case("where", torch.where, [c, rnd([3, 4], dt), rnd([4], dt)], name=f"where_{dt}"))
cases.append(case("where", torch.where, [rnd([3, 1], torch.bool), rnd([1, 4], torch.int32), rnd([3, 4], torch.float64)], name="where_promote"))
cases.append(case("where", torch.where, [In(rnd([4, 3], torch.bool), [["transpose", 0, 1]]), rnd([3, 4]), Scalar(0.5)], name="where_scalar_noncontig"))
cases.append(error("where", [torch.ones(3), torch.ones(3), torch.ones(3)], "DTypeError", name="where_cond_dtype"))
cases.append(error("where", [torch.ones(3, dtype=torch.bool), torch.ones(2), torch.ones(3)], "ShapeError", name="where_shape"))

for dt in [d for d in ALL if d != torch.bool]:
    x = rnd([3, 4], dt)
    cases.append(case("clamp", lambda t, lo, hi: torch.clamp(t, lo, hi), [x, Scalar(-1), Scalar(2)], name=f"clamp_{dt}"))
cases.append(case("clamp", lambda t, lo, hi: torch.clamp(t, min=lo), [rnd([3, 4]), Scalar(0.5), None], name="clamp_min_only"))
cases.append(case("clamp", lambda t, lo, hi: torch.clamp(t, None, hi), [rnd([3, 4]), None, Scalar(0.5)], name="clamp_max_only"))
cases.append(case("clamp", torch.clamp, [rnd([3, 4]), rnd([4], lo=-3, hi=0), rnd([3, 1], lo=0, hi=3)], name="clamp_tensors"))
cases.append(case("clamp", lambda t, lo, hi: torch.clamp(t, lo, hi), [rnd([5]), Scalar(1.0), Scalar(-1.0)], name="clamp_lo_gt_hi"))
cases.append(case("clamp", lambda t, lo, hi: torch.clamp(t, lo, hi), [rnd([3], torch.int64), Scalar(0.5), Scalar(1.5)], name="clamp_int_float_bounds"))
cases.append(error("clamp", [torch.ones(2), None, None], "ValueError", name="clamp_no_bounds"))

for dt in FLOATS:
    cases.append(case("lerp", torch.lerp, [rnd([3, 4], dt), rnd([4], dt), rnd([3, 4], dt, 0, 1)], name=f"lerp_{dt}"))
cases.append(case("lerp", lambda a, b, w: torch.lerp(a, b, w), [rnd([3, 4]), rnd([3, 4]), Scalar(0.3)], name="lerp_scalar"))
cases.append(error("lerp", [torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64), Scalar(0.5)], "DTypeError", name="lerp_int"))
for dt in FLOATS + [torch.int64, torch.int32]:
    x, a, b = rnd([3, 4], dt), rnd([4], dt), rnd([3, 1], dt, 1, 3)
    cases.append(case("addcmul", lambda x, a, b: torch.addcmul(x, a, b, value=2), [x, a, b], {"value": 2}, name=f"addcmul_{dt}"))
    if dt in FLOATS:
        cases.append(case("addcdiv", lambda x, a, b: torch.addcdiv(x, a, b, value=0.5), [x, a, b], {"value": 0.5}, name=f"addcdiv_{dt}"))
cases.append(error("addcdiv", [torch.ones(2, dtype=torch.int64)] * 3, "DTypeError", {"value": 1}, name="addcdiv_int"))

write("elementwise", cases)
