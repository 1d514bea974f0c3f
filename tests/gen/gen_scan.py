"""Golden cases for scans, sorting and order statistics: cumsum, cumprod, cummax, cummin, sort,
argsort, topk, kthvalue, median.

Attrs: "dim" (median: null = whole tensor), "dtype" (cumsum/cumprod), "descending" (sort/argsort),
"k", "largest", "sorted" (topk), "keepdim" (kthvalue/median).
Ties: sort/argsort are stable (torch's stable=True) and cummax/cummin follow torch's rule, so
their ties are recorded; topk/kthvalue/median use tie-free inputs, or record only values.
Run with /usr/bin/python3 (torch 1.13)."""
import zlib

import torch

from common import ALL, FLOATS, INTS, NAMES, In, case, error, rnd, via_f32, write

NAN, INF = float("nan"), float("inf")
NUMERIC = INTS + FLOATS
cases = []


def distinct(shape, dtype):
    """Tie-free data of any numeric dtype (a shuffled range, exact in bfloat16)."""
    n = 1
    for s in shape:
        n *= s
    g = torch.Generator().manual_seed(zlib.crc32(repr((tuple(shape), str(dtype))).encode()))
    p = torch.randperm(n, generator=g).reshape(shape)
    if dtype == torch.uint8:
        return p.to(dtype)
    if dtype in INTS:
        return (p - n // 2).to(dtype)
    return (p.double() * 0.5 - n / 4).to(dtype)


def geometries(make):
    """(name, input, dim) around one dim, covering layouts."""
    return [
        ("dim1", make((3, 4)), 1), ("dim0", make((3, 4)), 0), ("dim_neg", make((2, 3, 4)), -2),
        ("transposed_dim0", In(make((4, 3)), [["transpose", 0, 1]]), 0),
        ("transposed_dim1", In(make((4, 3)), [["transpose", 0, 1]]), 1),
        ("step", In(make((3, 8)), [["slice", 1, 1, 8, 2]]), 1),
        ("permuted", In(make((2, 3, 4)), [["permute", [2, 0, 1]]]), 1),
        ("expanded", In(make((1, 4)), [["expand", [3, 4]]]), 1),
        ("wide_inner", make((5, 20)), 0), ("long", make((2, 70)), 1),
    ]


def tied(shape, dtype):
    """Data with many ties (small integer range)."""
    return rnd(shape, dtype, -1, 1) if dtype != torch.uint8 else rnd(shape, dtype, 0, 1)


def scan_to(tfn, x, dtype):
    """tfn(x, 1, dtype=dtype); float16 (no CPU kernel) scans in float32 and rounds each output."""
    if dtype == torch.float16:
        return tfn(x, 1, dtype=torch.float32).half()
    return tfn(x, 1, dtype=dtype)


# --- cumsum, cumprod ---
for op, tfn, lo, hi in (("cumsum", torch.cumsum, -3.0, 3.0), ("cumprod", torch.cumprod, -1.6, 1.6)):
    ref = via_f32(tfn, (torch.float16,))
    for d in ALL:
        x = rnd((3, 4), d, lo, hi)
        for dim in (1, 0):
            cases.append(case(op, lambda x, dm=dim: ref(x, dm), [x], {"dim": dim},
                              name="%s_%s_dim%d" % (op, NAMES[d], dim)))
    for name, x, dim in geometries(lambda s: rnd(s, torch.float32, lo, hi)):
        cases.append(case(op, lambda x, dm=dim: tfn(x, dm), [x], {"dim": dim},
                          name=op + "_" + name))
    for src, dst in ((torch.int32, torch.float64), (torch.float32, torch.int32),
                     (torch.uint8, torch.uint8), (torch.float32, torch.float64),
                     (torch.int64, torch.float16)):
        x = rnd((2, 5), src, lo, hi)
        if src == torch.uint8:
            x = torch.tensor([[200, 100, 7, 90, 1]] * 2, dtype=torch.uint8)
        cases.append(case(op, lambda x, dt=dst: scan_to(tfn, x, dt), [x],
                          {"dim": 1, "dtype": NAMES[dst]},
                          name="%s_%s_to_%s" % (op, NAMES[src], NAMES[dst])))
    cases.append(case(op, lambda x: tfn(x, 1), [torch.tensor([[1.0, NAN, 2.0], [INF, 1.0, -INF]])],
                      {"dim": 1}, name=op + "_nonfinite"))
    for dim in (0, 1):
        cases.append(case(op, lambda x, dm=dim: tfn(x, dm), [torch.zeros(0, 3)], {"dim": dim},
                          name="%s_empty_dim%d" % (op, dim)))
    for dim in (0, -1):
        cases.append(case(op, lambda x, dm=dim: tfn(x, dm), [torch.tensor(1.5)], {"dim": dim},
                          name="%s_0d_dim%d" % (op, dim)))
    cases.append(error(op, [rnd((3, 4))], "IndexError", {"dim": 2}, name=op + "_dim_out_of_range"))
    cases.append(error(op, [rnd((3, 4))], "DTypeError", {"dim": 0, "dtype": "bool"},
                       name=op + "_to_bool"))

# --- cummax, cummin (ties move to the latest index; NaN takes over) ---
for op, tfn in (("cummax", torch.cummax), ("cummin", torch.cummin)):
    ref = via_f32(tfn, (torch.float16,))
    for d in ALL:
        x = tied((3, 5), d)
        for dim in (1, 0):
            cases.append(case(op, lambda x, dm=dim: ref(x, dm), [x], {"dim": dim},
                              name="%s_%s_dim%d" % (op, NAMES[d], dim)))
    for name, x, dim in geometries(lambda s: tied(s, torch.float32)):
        cases.append(case(op, lambda x, dm=dim: tfn(x, dm), [x], {"dim": dim},
                          name=op + "_" + name))
    nan = torch.tensor([[1.0, NAN, 3.0, NAN, 2.0], [2.0, 1.0, 2.0, -INF, INF]])
    cases.append(case(op, lambda x: tfn(x, 1), [nan], {"dim": 1}, name=op + "_nan"))
    cases.append(case(op, lambda x: tfn(x, 0), [torch.zeros(0, 3)], {"dim": 0}, name=op + "_empty"))
    cases.append(case(op, lambda x: tfn(x, 0), [torch.tensor(-2.0)], {"dim": 0}, name=op + "_0d"))
    cases.append(error(op, [rnd((3, 4))], "IndexError", {"dim": -3}, name=op + "_dim_out_of_range"))


# --- sort, argsort (stable) ---
def sort_ref(dim, desc, values=True):
    def f(x):
        r = torch.sort(x, dim=dim, descending=desc, stable=True)
        return r if values else r.indices
    return f


for op, values in (("sort", True), ("argsort", False)):
    for d in ALL:
        x = tied((3, 6), d)
        for dim, desc in ((-1, False), (0, True), (1, True)):
            cases.append(case(op, sort_ref(dim, desc, values), [x],
                              {"dim": dim, "descending": desc},
                              name="%s_%s_dim%d_%s" % (op, NAMES[d], dim,
                                                       "desc" if desc else "asc")))
    for name, x, dim in geometries(lambda s: rnd(s, torch.float32)):
        for desc in (False, True):
            cases.append(case(op, sort_ref(dim, desc, values), [x],
                              {"dim": dim, "descending": desc},
                              name="%s_%s_%s" % (op, name, "desc" if desc else "asc")))
    special = torch.tensor([[1.0, NAN, 3.0, -INF, NAN, 0.0, -0.0, INF, 3.0, -2.0]])
    for desc in (False, True):
        cases.append(case(op, sort_ref(1, desc, values), [special], {"dim": 1, "descending": desc},
                          name="%s_nan_inf_zeros_%s" % (op, "desc" if desc else "asc")))
    cases.append(case(op, sort_ref(0, False, values), [torch.zeros(0, 3)], {"dim": 0},
                      name=op + "_empty"))
    cases.append(case(op, sort_ref(0, True, values), [torch.tensor(5.0)],
                      {"dim": 0, "descending": True},
                      name=op + "_0d"))
    cases.append(error(op, [rnd((3, 4))], "IndexError", {"dim": 2}, name=op + "_dim_out_of_range"))

# --- topk ---
def topk_ref(k, dim, largest=True, sorted_=True):
    def f(x):
        r = torch.topk(x, k, dim, largest, sorted_)
        if sorted_:
            return r
        # torch's unsorted order is unspecified: compare the sorted values only.
        return torch.sort(r.values, dim=dim, descending=largest, stable=True).values, None
    return via_f32(f, (torch.float16,))


for d in NUMERIC:
    x = distinct((3, 5), d)
    for k, dim, largest in ((2, 1, True), (1, 0, False), (3, -1, False)):
        cases.append(case("topk", topk_ref(k, dim, largest), [x],
                          {"k": k, "dim": dim, "largest": largest},
                          name="topk_%s_k%d_dim%d_%s" % (NAMES[d], k, dim,
                                                         "largest" if largest else "smallest")))
for name, x, dim in geometries(lambda s: distinct(s, torch.float32)):
    for k, largest in ((1, True), (2, False)):
        cases.append(case("topk", topk_ref(k, dim, largest), [x],
                          {"k": k, "dim": dim, "largest": largest},
                          name="topk_%s_k%d_%s" % (name, k, "largest" if largest else "smallest")))
x = distinct((3, 6), torch.float32)
for k in (0, 6):
    cases.append(case("topk", topk_ref(k, 1), [x], {"k": k, "dim": 1}, name="topk_k%d" % k))
for largest in (True, False):
    cases.append(case("topk", topk_ref(4, 1, largest, False), [x],
                      {"k": 4, "dim": 1, "largest": largest, "sorted": False},
                      name="topk_unsorted_%s" % ("largest" if largest else "smallest")))
nan = torch.tensor([[1.0, NAN, 3.0, -INF, 2.0], [INF, 0.0, -1.0, NAN, 5.0]])
for largest in (True, False):
    cases.append(case("topk", topk_ref(3, 1, largest), [nan],
                      {"k": 3, "dim": 1, "largest": largest},
                      name="topk_nan_%s" % ("largest" if largest else "smallest")))
cases.append(case("topk", topk_ref(2, 1), [torch.zeros(0, 3)], {"k": 2, "dim": 1},
                  name="topk_empty"))
cases.append(case("topk", topk_ref(0, 0), [torch.zeros(0, 3)], {"k": 0, "dim": 0},
                  name="topk_empty_dim_k0"))
for k in (1, 0):
    cases.append(case("topk", topk_ref(k, 0), [torch.tensor(2.5)], {"k": k, "dim": 0},
                      name="topk_0d_k%d" % k))
cases.append(error("topk", [rnd((3, 4))], "IndexError", {"k": 5, "dim": 1},
                   name="topk_k_too_large"))
cases.append(error("topk", [rnd((3, 4))], "IndexError", {"k": -1, "dim": 1},
                   name="topk_k_negative"))
cases.append(error("topk", [torch.zeros(0, 3)], "IndexError", {"k": 1, "dim": 0},
                   name="topk_empty_dim"))
cases.append(error("topk", [torch.tensor(1.0)], "IndexError", {"k": 2, "dim": 0},
                   name="topk_0d_k2"))
cases.append(error("topk", [rnd((3, 4), torch.bool)], "DTypeError", {"k": 1, "dim": 1},
                   name="topk_bool"))
cases.append(error("topk", [rnd((3, 4))], "IndexError", {"k": 1, "dim": 3},
                   name="topk_dim_out_of_range"))


# --- kthvalue, median ---
def kth_ref(k, dim, keepdim=False, values_only=False):
    def f(x):
        r = torch.kthvalue(x, k, dim, keepdim)
        return (r.values, None) if values_only else r
    return via_f32(f, (torch.float16,))


def median_ref(dim=None, keepdim=False, values_only=False):
    def f(x):
        if dim is None:
            return torch.median(x)
        r = torch.median(x, dim, keepdim)
        return (r.values, None) if values_only else r
    return via_f32(f, (torch.float16,))


for d in NUMERIC:
    x = distinct((3, 5), d)
    for k, dim, keepdim in ((1, 1, False), (3, 1, True), (2, 0, False)):
        cases.append(case("kthvalue", kth_ref(k, dim, keepdim), [x],
                          {"k": k, "dim": dim, "keepdim": keepdim},
                          name="kthvalue_%s_k%d_dim%d" % (NAMES[d], k, dim)))
    cases.append(case("median", median_ref(), [x], {}, name="median_%s_whole" % NAMES[d]))
    cases.append(case("median", median_ref(), [distinct((2, 4), d)], {},
                      name="median_%s_whole_even" % NAMES[d]))
    for dim, keepdim in ((1, False), (0, True)):
        cases.append(case("median", median_ref(dim, keepdim), [x], {"dim": dim, "keepdim": keepdim},
                          name="median_%s_dim%d" % (NAMES[d], dim)))
    t = tied((4, 6), d)
    cases.append(case("kthvalue", kth_ref(3, 1, values_only=True), [t], {"k": 3, "dim": 1},
                      name="kthvalue_%s_ties_values" % NAMES[d]))
    cases.append(case("median", median_ref(1, values_only=True), [t], {"dim": 1},
                      name="median_%s_ties_values" % NAMES[d]))
for name, x, dim in geometries(lambda s: distinct(s, torch.float32)):
    cases.append(case("kthvalue", kth_ref(2, dim), [x], {"k": 2, "dim": dim},
                      name="kthvalue_" + name))
    cases.append(case("median", median_ref(dim), [x], {"dim": dim}, name="median_" + name))
    cases.append(case("median", median_ref(), [x], {}, name="median_whole_" + name))
nan1 = torch.tensor([[1.0, NAN, 3.0, -INF], [2.0, 0.0, -1.0, INF], [NAN, 4.0, NAN, 0.5]])
for k in (2, 4):
    cases.append(case("kthvalue", kth_ref(k, 1), [nan1[:2]], {"k": k, "dim": 1},
                      name="kthvalue_nan_k%d" % k))
cases.append(case("median", median_ref(1), [nan1], {"dim": 1}, name="median_nan_dim"))
cases.append(case("median", median_ref(), [nan1], {}, name="median_nan_whole"))
cases.append(case("median", median_ref(), [torch.zeros(0, 3)], {}, name="median_empty_whole"))
cases.append(case("median", median_ref(1), [torch.zeros(0, 3)], {"dim": 1},
                  name="median_empty_kept"))
cases.append(case("kthvalue", kth_ref(1, 1), [torch.zeros(0, 3)], {"k": 1, "dim": 1},
                  name="kthvalue_empty_kept"))
cases.append(case("median", median_ref(), [torch.tensor(-4.0)], {}, name="median_0d"))
cases.append(case("median", median_ref(0, True), [torch.tensor(-4.0)], {"dim": 0, "keepdim": True},
                  name="median_0d_dim"))
cases.append(case("kthvalue", kth_ref(1, -1), [torch.tensor(-4.0)], {"k": 1, "dim": -1},
                  name="kthvalue_0d"))
for k in (0, 6):
    cases.append(error("kthvalue", [rnd((3, 5))], "IndexError", {"k": k, "dim": 1},
                       name="kthvalue_k%d_out_of_range" % k))
cases.append(error("kthvalue", [torch.zeros(0, 3)], "IndexError", {"k": 1, "dim": 0},
                   name="kthvalue_empty_dim"))
cases.append(error("kthvalue", [rnd((3, 4), torch.bool)], "DTypeError", {"k": 1, "dim": 1},
                   name="kthvalue_bool"))
cases.append(error("kthvalue", [rnd((3, 4))], "IndexError", {"k": 1, "dim": 2},
                   name="kthvalue_dim_out_of_range"))
cases.append(error("median", [torch.zeros(0, 3)], "IndexError", {"dim": 0},
                   name="median_empty_dim"))
cases.append(error("median", [rnd((3, 4), torch.bool)], "DTypeError", {}, name="median_bool"))
cases.append(error("median", [rnd((3, 4), torch.bool)], "DTypeError", {"dim": 0},
                   name="median_bool_dim"))
cases.append(error("median", [rnd((3, 4))], "IndexError", {"dim": -3},
                   name="median_dim_out_of_range"))

write("scan", cases)
