"""Golden cases for the reductions: sum, mean, prod, max, min, amax, amin, argmax, argmin, any,
all, var, std, logsumexp, norm, count_nonzero.

Attrs: "dims" (list or null = all), "keepdim", "dtype" (sum/mean/prod), "dim" (prod, max/min,
argmax/argmin: null = whole tensor), "correction" (var/std), "p" (norm).
Run with /usr/bin/python3 (torch 1.13)."""
import torch

from common import ALL, FLOATS, INTS, NAMES, In, case, error, num, rnd, via_f32, write

NAN, INF = float("nan"), float("inf")
HALVES = (torch.float16, torch.bfloat16)
NUMERIC = INTS + FLOATS
cases = []


def reduced(tfn, dims, keepdim, **kw):
    """torch call reducing over dims (None = all dims, keeping them as 1 when keepdim)."""
    def f(x):
        if dims is None:
            if keepdim:
                return tfn(x, dim=tuple(range(x.dim())), keepdim=True, **kw)
            return tfn(x, **kw)
        return tfn(x, dim=dims, keepdim=keepdim, **kw)
    return f


def geometries():
    """(name, input, dims, keepdim) in float32 covering the reduction engine's paths."""
    c34 = rnd((3, 4))
    c234 = rnd((2, 3, 4))
    t34 = In(rnd((4, 3)), [["transpose", 0, 1]])
    step = In(rnd((3, 8)), [["slice", 1, 0, 8, 2]])
    exp = In(rnd((3, 1)), [["expand", [3, 4]]])
    perm = In(rnd((2, 3, 4)), [["permute", [2, 0, 1]]])
    return [
        ("all", c34, None, False), ("all_keepdim", c34, None, True),
        ("dim1", c34, [1], False), ("dim_neg_keepdim", c34, [-2], True),
        ("dims02", c234, [0, 2], False), ("dims_neg_keepdim", c234, [-1, -3], True),
        ("transposed_dim0", t34, [0], False), ("transposed_dim1", t34, [1], True),
        ("step_dim1", step, [1], False), ("step_all", step, None, False),
        ("expanded_dim1", exp, [1], False), ("expanded_dim0", exp, [0], False),
        ("permuted_dim1", perm, [1], False), ("permuted_dims02", perm, [0, 2], True),
        ("column", rnd((5, 20)), [0], False), ("lanes", rnd((2, 40)), [1], False),
        ("middle", rnd((3, 5, 18)), [1], False),
    ]


def dims_attrs(dims, keepdim):
    return {"dims": dims, "keepdim": keepdim}


def reduction_family(op, tfn, dtypes, ref=None, lo=-3.0, hi=3.0, **kw):
    """Every dtype (all dims and one dim), every geometry, empty and 0-d inputs."""
    ref = ref or (lambda d: tfn)
    for d in dtypes:
        x = rnd((3, 4), d, lo, hi)
        for dims in (None, [1]):
            name = "%s_%s_%s" % (op, NAMES[d], "all" if dims is None else "dim1")
            cases.append(case(op, reduced(ref(d), dims, False, **kw), [x], dims_attrs(dims, False),
                              name=name))
    for name, x, dims, keepdim in geometries():
        cases.append(case(op, reduced(tfn, dims, keepdim, **kw), [x], dims_attrs(dims, keepdim),
                          name="%s_%s" % (op, name)))
    for dims in (None, [0], [1]):
        cases.append(case(op, reduced(tfn, dims, False, **kw), [torch.zeros(0, 3)],
                          dims_attrs(dims, False), name="%s_empty_%s" % (op, dims)))
    for dims, keepdim in ((None, False), ([0], False), ([-1], True)):
        cases.append(case(op, reduced(tfn, dims, keepdim, **kw), [torch.tensor(1.75)],
                          dims_attrs(dims, keepdim), name="%s_0d_%s" % (op, dims)))


def f16_via32(tfn):
    return lambda d: via_f32(tfn, HALVES) if d == torch.float16 else tfn


# --- sum, mean, prod ---
reduction_family("sum", torch.sum, ALL)
reduction_family("mean", torch.mean, FLOATS)
for op, tfn in (("sum", torch.sum), ("mean", torch.mean)):
    x = rnd((2, 3), torch.int32)
    for d in (torch.float32, torch.float64):
        cases.append(case(op, lambda x, d=d: tfn(x, dim=1, dtype=d), [x],
                          {"dims": [1], "dtype": NAMES[d]}, name="%s_dtype_%s" % (op, NAMES[d])))
cases.append(case("sum", lambda x: torch.sum(x, dtype=torch.int32), [rnd((2, 3))],
                  {"dtype": "int32"}, name="sum_float_to_int32"))
cases.append(case("sum", lambda x: torch.sum(x, 0, dtype=torch.uint8),
                  [torch.tensor([200, 100, 7], dtype=torch.uint8)],
                  {"dims": [0], "dtype": "uint8"}, name="sum_uint8_wraps"))
cases.append(case("sum", lambda x: torch.sum(x, 1, dtype=torch.bool),
                  [torch.tensor([[1.0, -1.0], [0.0, 0.0], [0.5, 0.0]])],
                  {"dims": [1], "dtype": "bool"}, name="sum_to_bool"))
cases.append(case("sum", lambda x: torch.sum(x, 0),
                  [torch.tensor([1.0, NAN, 2.0])], {"dims": [0]}, name="sum_nan"))
cases.append(error("sum", [rnd((3, 4))], "IndexError", {"dims": [2]}, name="sum_dim_out_of_range"))
cases.append(error("sum", [rnd((3, 4))], "ValueError", {"dims": [0, -2]}, name="sum_dim_repeated"))
cases.append(error("mean", [rnd((3, 4), torch.int64)], "DTypeError", {}, name="mean_int"))
cases.append(error("mean", [rnd((3, 4), torch.int64)], "DTypeError", {"dtype": "int32"},
                   name="mean_int_dtype"))

# prod takes one dim (or all); float16/bfloat16 have no CPU kernel in torch 1.13.
for d in ALL:
    x = rnd((3, 4), d, -1.5, 1.5)
    ref = via_f32(torch.prod, HALVES) if d in HALVES else torch.prod
    cases.append(case("prod", ref, [x], {}, name="prod_%s_all" % NAMES[d]))
    cases.append(case("prod", lambda x, ref=ref: ref(x, 1), [x], {"dim": 1},
                      name="prod_%s_dim1" % NAMES[d]))
for name, x, dims, keepdim in geometries():
    if dims is not None and len(dims) == 1:
        cases.append(case("prod", lambda x, dm=dims[0], k=keepdim: torch.prod(x, dm, keepdim=k),
                          [x], {"dim": dims[0], "keepdim": keepdim}, name="prod_" + name))
cases.append(case("prod", torch.prod, [torch.zeros(0, 3)], {}, name="prod_empty"))
cases.append(case("prod", lambda x: torch.prod(x, 0), [torch.zeros(0, 3)], {"dim": 0},
                  name="prod_empty_dim"))
cases.append(case("prod", lambda x: torch.prod(x, 0, keepdim=True), [torch.tensor(-2.5)],
                  {"dim": 0, "keepdim": True}, name="prod_0d"))
cases.append(case("prod", lambda x: torch.prod(x, 1, dtype=torch.float64),
                  [rnd((2, 3), torch.int16)],
                  {"dim": 1, "dtype": "float64"}, name="prod_dtype_float64"))
cases.append(case("prod", lambda x: torch.prod(x, 1, dtype=torch.bool),
                  [torch.tensor([[1, 2], [3, 0]])], {"dim": 1, "dtype": "bool"},
                  name="prod_to_bool"))
cases.append(error("prod", [rnd((3, 4))], "IndexError", {"dim": -3}, name="prod_dim_out_of_range"))

# --- amax, amin ---
for op, tfn in (("amax", torch.amax), ("amin", torch.amin)):
    for d in ALL:
        x = rnd((3, 4), d)
        for dims in (None, [0]):
            cases.append(case(op, reduced(tfn, dims, False), [x], dims_attrs(dims, False),
                              name="%s_%s_%s" % (op, NAMES[d], dims)))
    for name, x, dims, keepdim in geometries():
        cases.append(case(op, reduced(tfn, dims, keepdim), [x], dims_attrs(dims, keepdim),
                          name="%s_%s" % (op, name)))
    nan = torch.tensor([[1.0, NAN, 3.0], [4.0, 5.0, -1.0]])
    cases.append(case(op, lambda x: tfn(x, 1), [nan], {"dims": [1]}, name=op + "_nan"))
    cases.append(case(op, lambda x: tfn(x, 1), [torch.zeros(0, 3)], {"dims": [1]},
                      name=op + "_empty_kept_dim"))
    cases.append(case(op, lambda x: tfn(x, -1), [torch.tensor(2.5)], {"dims": [-1]},
                      name=op + "_0d"))
    cases.append(error(op, [torch.zeros(0, 3)], "IndexError", {"dims": [0]},
                       name=op + "_empty_dim"))
    cases.append(error(op, [torch.zeros(2, 0, 3)], "IndexError", {}, name=op + "_empty_all"))

# --- max, min (whole tensor, and (values, indices) along a dim) ---
ties = torch.tensor([[1, 3, 3, 1], [2, 2, 0, 2], [5, 1, 5, 5]])
for op, tfn in (("max", torch.max), ("min", torch.min)):
    for d in ALL:
        x = rnd((3, 4), d)
        cases.append(case(op, tfn, [x], {}, name="%s_%s_whole" % (op, NAMES[d])))
        cases.append(case(op, lambda x: tfn(x, 1), [x], {"dim": 1},
                          name="%s_%s_dim1" % (op, NAMES[d])))
    for name, x, dims, keepdim in geometries():
        if dims is not None and len(dims) == 1:
            cases.append(case(op, lambda x, dm=dims[0], k=keepdim: tfn(x, dm, keepdim=k), [x],
                              {"dim": dims[0], "keepdim": keepdim}, name="%s_%s" % (op, name)))
    for dim in (0, 1):  # ties: the first occurrence, like torch
        cases.append(case(op, lambda x, dm=dim: tfn(x, dm), [ties], {"dim": dim},
                          name="%s_ties_dim%d" % (op, dim)))
    nan = torch.tensor([[1.0, NAN, 3.0, NAN], [4.0, 5.0, -1.0, 0.0]])
    cases.append(case(op, tfn, [nan], {}, name=op + "_nan_whole"))
    cases.append(case(op, lambda x: tfn(x, 1), [nan], {"dim": 1}, name=op + "_nan_dim"))
    cases.append(case(op, lambda x: tfn(x, 0), [nan], {"dim": 0}, name=op + "_nan_dim0"))
    cases.append(case(op, lambda x: tfn(x, 1), [torch.zeros(0, 3)], {"dim": 1},
                      name=op + "_empty_kept_dim"))
    cases.append(case(op, lambda x: tfn(x, 0, keepdim=True), [torch.tensor(-1.5)],
                      {"dim": 0, "keepdim": True}, name=op + "_0d_dim"))
    cases.append(case(op, tfn, [torch.tensor(-1.5)], {}, name=op + "_0d_whole"))
    cases.append(error(op, [torch.zeros(0, 3)], "IndexError", {}, name=op + "_empty_whole"))
    cases.append(error(op, [torch.zeros(0, 3)], "IndexError", {"dim": 0}, name=op + "_empty_dim"))
    cases.append(error(op, [rnd((3, 4))], "IndexError", {"dim": 2}, name=op + "_dim_out_of_range"))

# --- argmax, argmin (int64; flattened without a dim; no bool) ---
for op, tfn in (("argmax", torch.argmax), ("argmin", torch.argmin)):
    for d in NUMERIC:
        x = rnd((3, 4), d)
        cases.append(case(op, tfn, [x], {}, name="%s_%s_flat" % (op, NAMES[d])))
        cases.append(case(op, lambda x: tfn(x, 1), [x], {"dim": 1},
                          name="%s_%s_dim1" % (op, NAMES[d])))
    for name, x, dims, keepdim in geometries():
        if dims is None:
            cases.append(case(op, lambda x, k=keepdim: tfn(x, keepdim=k), [x], {"keepdim": keepdim},
                              name="%s_%s" % (op, name)))
        elif len(dims) == 1:
            cases.append(case(op, lambda x, dm=dims[0], k=keepdim: tfn(x, dm, keepdim=k), [x],
                              {"dim": dims[0], "keepdim": keepdim}, name="%s_%s" % (op, name)))
    cases.append(case(op, tfn, [ties], {}, name=op + "_ties_flat"))
    for dim in (0, 1):
        cases.append(case(op, lambda x, dm=dim: tfn(x, dm), [ties], {"dim": dim},
                          name="%s_ties_dim%d" % (op, dim)))
    nan = torch.tensor([[1.0, NAN, 3.0, NAN], [4.0, 5.0, -INF, INF]])
    cases.append(case(op, tfn, [nan], {}, name=op + "_nan_flat"))
    cases.append(case(op, lambda x: tfn(x, 1), [nan], {"dim": 1}, name=op + "_nan_dim"))
    cases.append(case(op, lambda x: tfn(x, 1), [torch.zeros(0, 3)], {"dim": 1},
                      name=op + "_empty_kept_dim"))
    cases.append(case(op, tfn, [torch.tensor(4.0)], {}, name=op + "_0d"))
    cases.append(case(op, lambda x: tfn(x, 0, keepdim=True), [torch.tensor(4.0)],
                      {"dim": 0, "keepdim": True}, name=op + "_0d_dim"))
    cases.append(error(op, [rnd((3, 4), torch.bool)], "DTypeError", {}, name=op + "_bool"))
    cases.append(error(op, [torch.zeros(0, 3)], "IndexError", {}, name=op + "_empty_flat"))
    cases.append(error(op, [torch.zeros(0, 3)], "IndexError", {"dim": 0}, name=op + "_empty_dim"))
    cases.append(error(op, [rnd((3, 4))], "IndexError", {"dim": -3}, name=op + "_dim_out_of_range"))

# --- any, all (uint8 stays uint8 in torch 1.13, everything else gives bool) ---
for op, tfn in (("any", torch.any), ("all", torch.all)):
    for d in ALL:
        x = rnd((3, 4), d, 0, 1) if d != torch.bool else rnd((3, 4), d)
        x = x * (rnd((3, 4), torch.float32) > -1.5).to(d)  # some zeros in every dtype
        for dims in (None, [1]):
            tf = (lambda x, dm=dims: tfn(x)) if dims is None else (lambda x, dm=dims: tfn(x, dm[0]))
            cases.append(case(op, tf, [x], dims_attrs(dims, False),
                              name="%s_%s_%s" % (op, NAMES[d], dims)))
    mask = torch.tensor([[True, False, True], [True, True, True]])
    cases.append(case(op, lambda x: tfn(x, 1, keepdim=True), [mask], {"dims": [1], "keepdim": True},
                      name=op + "_keepdim"))
    cases.append(case(op, lambda x: tfn(x, 0), [In(mask, [["transpose", 0, 1]])], {"dims": [0]},
                      name=op + "_transposed"))
    cases.append(case(op, lambda x: tfn(x, 1), [torch.tensor([[NAN, 0.0], [0.0, 0.0]])],
                      {"dims": [1]}, name=op + "_nan_is_true"))
    cases.append(case(op, tfn, [torch.zeros(0, 3)], {}, name=op + "_empty"))
    cases.append(case(op, lambda x: tfn(x, 0), [torch.zeros(0, 3)], {"dims": [0]},
                      name=op + "_empty_dim"))
    cases.append(case(op, tfn, [torch.tensor(0.0)], {}, name=op + "_0d"))
    cases.append(error(op, [rnd((3, 4))], "IndexError", {"dims": [5]},
                       name=op + "_dim_out_of_range"))

# --- var, std ---
for op, tfn in (("var", torch.var), ("std", torch.std)):
    def stat(dims, keepdim, corr=1, tfn=tfn):
        def f(x):
            dm = tuple(range(x.dim())) if dims is None and keepdim else dims
            return tfn(x, dim=dm, correction=corr, keepdim=keepdim)
        return f
    for d in FLOATS:
        x = rnd((3, 4), d)
        for dims in (None, [1]):
            cases.append(case(op, stat(dims, False), [x], {"dims": dims},
                              name="%s_%s_%s" % (op, NAMES[d], dims)))
    for name, x, dims, keepdim in geometries():
        cases.append(case(op, stat(dims, keepdim), [x], dims_attrs(dims, keepdim),
                          name="%s_%s" % (op, name)))
    x = rnd((3, 4))
    for corr in (0, 2, -1, 5):  # 5 > n: torch divides by max(0, n - correction) = 0 -> inf
        cases.append(case(op, stat([1], False, corr), [x],
                          {"dims": [1], "correction": corr}, name="%s_correction_%d" % (op, corr)))
    big = rnd((4, 5), torch.float32) + 1e4  # a large mean: a naive sum of squares loses digits
    cases.append(case(op, stat([1], False), [big], {"dims": [1]}, name=op + "_large_mean"))
    cases.append(case(op, stat([1], False), [torch.tensor([[INF, 1.0], [NAN, 2.0], [1.0, 1.0]])],
                      {"dims": [1]}, name=op + "_nonfinite"))
    cases.append(case(op, stat(None, False), [torch.zeros(0, 3)], {}, name=op + "_empty"))
    cases.append(case(op, stat([0], False), [torch.zeros(0, 3)], {"dims": [0]},
                      name=op + "_empty_dim"))
    cases.append(case(op, stat([1], False), [torch.ones(2, 1)], {"dims": [1]},
                      name=op + "_single_element"))
    cases.append(case(op, stat(None, False), [torch.tensor(3.0)], {}, name=op + "_0d"))
    cases.append(case(op, stat(None, False, 0), [torch.tensor(3.0)], {"correction": 0},
                      name=op + "_0d_biased"))
    for d in (torch.int32, torch.bool):
        cases.append(error(op, [rnd((3, 4), d)], "DTypeError", {}, name="%s_%s" % (op, NAMES[d])))
    cases.append(error(op, [rnd((3, 4))], "IndexError", {"dims": [2]},
                       name=op + "_dim_out_of_range"))

# --- logsumexp (integers give the default float dtype; float16 has no CPU kernel) ---
def lse(x, dim=None, keepdim=False):
    """torch.logsumexp needs its dims spelled out (ember's empty list means all of them)."""
    if dim is None:
        dim = tuple(range(x.dim())) or 0
    return torch.logsumexp(x, dim, keepdim=keepdim)


reduction_family("logsumexp", lse, ALL, ref=f16_via32(lse))
inf_rows = torch.tensor([[INF, 1.0], [-INF, -INF], [NAN, 1.0], [INF, INF], [-INF, 2.0], [INF, -INF],
                         [1000.0, 1000.0], [-1000.0, -999.0]])
cases.append(case("logsumexp", lambda x: torch.logsumexp(x, 1), [inf_rows], {"dims": [1]},
                  name="logsumexp_nonfinite_and_large"))
cases.append(error("logsumexp", [rnd((3, 4))], "IndexError", {"dims": [-3]},
                   name="logsumexp_dim_out_of_range"))

# --- norm ---
PS = [2, 1, INF, -INF, 0, 0.5, 3, -1, 1.5]


def norm_fn(p, dims, keepdim):
    def f(x):
        if dims is None:
            return torch.norm(x, p, dim=tuple(range(x.dim())) if keepdim else None, keepdim=keepdim)
        return torch.norm(x, p, dim=dims, keepdim=keepdim)
    return f


for p in PS:
    x = torch.tensor([[1.0, -2.0, 0.0, 0.25], [0.5, 3.0, -4.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    for dims in (None, [1], [0]):
        cases.append(case("norm", norm_fn(p, dims, False), [x], {"p": num(float(p)), "dims": dims},
                          name="norm_p%s_%s" % (p, dims)))
    for dims in (None, [0], [1]):
        cases.append(case("norm", norm_fn(p, dims, False), [torch.zeros(0, 3)],
                          {"p": num(float(p)), "dims": dims}, name="norm_p%s_empty_%s" % (p, dims)))
    cases.append(case("norm", norm_fn(p, None, False), [torch.tensor(-3.0)], {"p": num(float(p))},
                      name="norm_p%s_0d" % p))
    cases.append(case("norm", norm_fn(p, [1], False), [torch.tensor([[NAN, 1.0], [1.0, 2.0]])],
                      {"p": num(float(p)), "dims": [1]}, name="norm_p%s_nan" % p))
for d in FLOATS:
    for p in (2, 1, INF):
        cases.append(case("norm", norm_fn(p, [1], False), [rnd((3, 4), d)],
                          {"p": num(float(p)), "dims": [1]}, name="norm_%s_p%s" % (NAMES[d], p)))
for name, x, dims, keepdim in geometries():
    cases.append(case("norm", norm_fn(2, dims, keepdim), [x],
                      {"p": 2.0, "dims": dims, "keepdim": keepdim}, name="norm_" + name))
for d in (torch.int64, torch.bool):
    cases.append(error("norm", [rnd((3, 4), d)], "DTypeError", {"p": 2.0}, name="norm_" + NAMES[d]))
cases.append(error("norm", [rnd((3, 4))], "IndexError", {"p": 2.0, "dims": [3]},
                   name="norm_dim_out_of_range"))

# --- count_nonzero (int64, no keepdim) ---
for d in ALL:
    x = rnd((3, 4), d) * (rnd((3, 4)) > 0).to(d)
    for dims in (None, [1]):
        cases.append(case("count_nonzero", lambda x, dm=dims: torch.count_nonzero(x, dm), [x],
                          {"dims": dims}, name="count_nonzero_%s_%s" % (NAMES[d], dims)))
for name, x, dims, keepdim in geometries():
    if not keepdim:
        cases.append(case("count_nonzero", lambda x, dm=dims: torch.count_nonzero(x, dm),
                          [In(x.base * (x.base > 0), x.views) if isinstance(x, In)
                           else x * (x > 0)],
                          {"dims": dims}, name="count_nonzero_" + name))
cases.append(case("count_nonzero", lambda x: torch.count_nonzero(x, 1),
                  [torch.tensor([[NAN, 0.0, -0.0], [0.5, 1e-30, 0.0]])], {"dims": [1]},
                  name="count_nonzero_nan_and_signed_zero"))
cases.append(case("count_nonzero", torch.count_nonzero, [torch.zeros(0, 3)], {},
                  name="count_nonzero_empty"))
cases.append(case("count_nonzero", lambda x: torch.count_nonzero(x, 0), [torch.tensor(2.0)],
                  {"dims": [0]}, name="count_nonzero_0d"))
cases.append(error("count_nonzero", [rnd((3, 4))], "IndexError", {"dims": [2]},
                   name="count_nonzero_dim_out_of_range"))
cases.append(error("count_nonzero", [rnd((3, 4))], "ValueError", {"dims": [1, 1]},
                   name="count_nonzero_dim_repeated"))

write("reduce", cases)
