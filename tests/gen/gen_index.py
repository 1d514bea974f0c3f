"""Golden cases for the index ops: index_select, gather, scatter, scatter_add, scatter_reduce,
index_add, index_put, masked_fill, masked_select, nonzero, take, one_hot.

Run with /usr/bin/python3 (torch 1.13). Writes tests/data/index.json. Where torch 1.13 rejects an
input ember accepts (int32 indices for index_put), the expected values come from the same call
with int64 indices, which newer torch treats identically.
"""
import torch
import torch.nn.functional as F

from common import ALL, FLOATS, INTS, In, Scalar, case, error, rnd, write

cases = []
G = torch.Generator().manual_seed(1234)
NUMERIC = INTS + FLOATS


def nm(dt):
    return str(dt).split(".")[1]


def ix(shape, hi, lo=0):
    return torch.randint(lo, hi, shape, generator=G)


def unique_cols(n_rows, n_cols, hi):
    """[n_rows, n_cols] int64 with distinct values per column (scatter targets never collide)."""
    return torch.stack([torch.randperm(hi, generator=G)[:n_rows] for _ in range(n_cols)], 1)


def add(c):
    cases.append(c)


# --- index_select ---
for dt in ALL:
    add(case("index_select", lambda x, i: torch.index_select(x, 0, i), [rnd([4, 3], dt), ix([5], 4)],
             {"dim": 0}, "index_select_" + nm(dt)))
add(case("index_select", lambda x, i: torch.index_select(x, 1, i), [rnd([2, 5, 3]), ix([4], 5).int()],
         {"dim": 1}, "index_select_i32_middle"))
add(case("index_select", lambda x, i: torch.index_select(x, -1, i), [rnd([3, 4], torch.int16), ix([6], 4)],
         {"dim": -1}, "index_select_last_dim"))
add(case("index_select", lambda x, i: torch.index_select(x, 0, i),
         [In(rnd([5, 4]), [["transpose", 0, 1]]), In(ix([6], 4), [["slice", 0, 0, 6, 2]])],
         {"dim": 0}, "index_select_noncontig"))
add(case("index_select", lambda x, i: torch.index_select(x, 1, i), [rnd([3, 4]), torch.tensor(2)],
         {"dim": 1}, "index_select_0d_index"))
add(case("index_select", lambda x, i: torch.index_select(x, 0, i),
         [rnd([3, 4]), torch.zeros(0, dtype=torch.long)], {"dim": 0}, "index_select_empty_index"))
add(case("index_select", lambda x, i: torch.index_select(x, 1, i), [rnd([0, 4]), ix([3], 4)],
         {"dim": 1}, "index_select_empty_input"))
add(case("index_select", lambda x, i: torch.index_select(x, 0, i), [torch.tensor(5.0), torch.tensor([0])],
         {"dim": 0}, "index_select_0d_input"))
add(error("index_select", [rnd([3, 4]), ix([2, 2], 3)], "ShapeError", {"dim": 0}, "index_select_2d_index"))
add(error("index_select", [rnd([3, 4]), ix([2], 3).short()], "DTypeError", {"dim": 0}, "index_select_i16"))
add(error("index_select", [rnd([3, 4]), torch.tensor([0.0])], "DTypeError", {"dim": 0}, "index_select_float"))
add(error("index_select", [rnd([3, 4]), torch.tensor([0, 3])], "IndexError", {"dim": 0}, "index_select_oob"))
add(error("index_select", [rnd([3, 4]), torch.tensor([-1])], "IndexError", {"dim": 0}, "index_select_negative"))
add(error("index_select", [rnd([0, 4]), torch.tensor([0])], "IndexError", {"dim": 0}, "index_select_from_empty"))
add(error("index_select", [rnd([3, 4]), torch.tensor([0])], "IndexError", {"dim": 2}, "index_select_dim"))

# --- gather ---
for dt in ALL:
    add(case("gather", lambda x, i: torch.gather(x, 1, i), [rnd([3, 4], dt), ix([3, 5], 4)],
             {"dim": 1}, "gather_" + nm(dt)))
add(case("gather", lambda x, i: torch.gather(x, 0, i), [rnd([3, 4, 2]), ix([5, 2, 2], 3)], {"dim": 0},
         "gather_dim0_smaller"))
add(case("gather", lambda x, i: torch.gather(x, -2, i), [rnd([2, 4, 3], torch.int64), ix([2, 2, 3], 4)],
         {"dim": -2}, "gather_negative_dim"))
add(case("gather", lambda x, i: torch.gather(x, 1, i),
         [In(rnd([4, 3]), [["transpose", 0, 1]]), In(ix([4, 3], 4), [["transpose", 0, 1]])], {"dim": 1},
         "gather_noncontig"))
add(case("gather", lambda x, i: torch.gather(x, 0, i), [torch.tensor(2.5), torch.tensor(0)], {"dim": 0},
         "gather_0d"))
add(case("gather", lambda x, i: torch.gather(x, 0, i), [torch.tensor([1.0, 2.0]), torch.tensor(1)],
         {"dim": 0}, "gather_0d_index"))
add(case("gather", lambda x, i: torch.gather(x, 1, i), [rnd([3, 4]), torch.zeros(5, 0, dtype=torch.long)],
         {"dim": 1}, "gather_empty_index"))
add(error("gather", [rnd([3, 4]), ix([3, 4], 3).int()], "DTypeError", {"dim": 0}, "gather_i32"))
add(error("gather", [rnd([3, 4]), ix([4], 3)], "ShapeError", {"dim": 0}, "gather_rank"))
add(error("gather", [rnd([3, 4]), ix([2, 5], 3)], "ShapeError", {"dim": 0}, "gather_too_wide"))
add(error("gather", [rnd([3, 4]), torch.tensor([[3]])], "IndexError", {"dim": 0}, "gather_oob"))
add(error("gather", [rnd([3, 4]), torch.tensor([[-1]])], "IndexError", {"dim": 0}, "gather_negative"))

# --- scatter (distinct targets: torch leaves repeated ones unspecified) ---
for dt in ALL:
    add(case("scatter", lambda x, i, s: torch.scatter(x, 0, i, s),
             [rnd([5, 3], dt), unique_cols(3, 3, 5), rnd([4, 3], dt)], {"dim": 0}, "scatter_" + nm(dt)))
for dt, v in [(torch.float32, 2.5), (torch.int32, 7), (torch.bool, True), (torch.float16, -1.5),
              (torch.int64, 2.7)]:
    add(case("scatter", lambda x, i: torch.scatter(x, 1, i, v), [rnd([3, 4], dt), unique_cols(2, 3, 4).t()],
             {"dim": 1, "value": v}, "scatter_value_" + nm(dt)))
add(case("scatter", lambda x, i, s: torch.scatter(x, -1, i, s),
         [In(rnd([4, 3]), [["transpose", 0, 1]]), unique_cols(2, 3, 4).t().contiguous(),
          In(rnd([4, 3]), [["transpose", 0, 1]])], {"dim": -1}, "scatter_noncontig"))
add(case("scatter", lambda x, i, s: torch.scatter(x, 0, i, s),
         [torch.tensor(1.0), torch.tensor(0), torch.tensor(9.0)], {"dim": 0}, "scatter_0d"))
add(case("scatter", lambda x, i, s: torch.scatter(x, 0, i, s),
         [rnd([3, 2]), torch.zeros(0, 2, dtype=torch.long), rnd([1, 2])], {"dim": 0}, "scatter_empty_index"))
add(error("scatter", [rnd([3, 4]), unique_cols(2, 4, 3), rnd([2, 4], torch.float64)], "DTypeError",
          {"dim": 0}, "scatter_src_dtype"))
add(error("scatter", [rnd([3, 4]), unique_cols(2, 4, 3).int(), rnd([2, 4])], "DTypeError", {"dim": 0},
          "scatter_i32"))
add(error("scatter", [rnd([3, 4]), unique_cols(2, 4, 3), rnd([2, 3])], "ShapeError", {"dim": 0},
          "scatter_src_small"))
add(error("scatter", [rnd([3, 4]), torch.tensor([[3]]), rnd([1, 1])], "IndexError", {"dim": 0}, "scatter_oob"))
add(error("scatter", [rnd([3, 4]), torch.tensor([[-1]]), rnd([1, 1])], "IndexError", {"dim": 0},
          "scatter_negative"))
add(error("scatter", [rnd([3, 4], torch.int32), torch.tensor([[0]])], "ValueError",
          {"dim": 0, "value": "nan"}, "scatter_nan_into_int"))

# --- scatter_add (repeated targets accumulate) ---
for dt in ALL:
    add(case("scatter_add", lambda x, i, s: torch.scatter_add(x, 0, i, s),
             [rnd([3, 4], dt), ix([5, 4], 3), rnd([5, 4], dt)], {"dim": 0}, "scatter_add_" + nm(dt)))
add(case("scatter_add", lambda x, i, s: torch.scatter_add(x, 1, i, s),
         [In(rnd([4, 3]), [["transpose", 0, 1]]), ix([3, 6], 4), In(rnd([6, 3]), [["transpose", 0, 1]])],
         {"dim": 1}, "scatter_add_noncontig"))
add(case("scatter_add", lambda x, i, s: torch.scatter_add(x, 0, i, s),
         [torch.zeros(3, dtype=torch.int8), torch.tensor([1, 1, 1]), torch.tensor([100, 100, 100], dtype=torch.int8)],
         {"dim": 0}, "scatter_add_int8_wraps"))
add(error("scatter_add", [rnd([3, 4]), ix([2, 4], 3), rnd([2, 4], torch.int32)], "DTypeError", {"dim": 0},
          "scatter_add_src_dtype"))
add(error("scatter_add", [rnd([3, 4]), ix([2, 4, 1], 3), rnd([2, 4, 1])], "ShapeError", {"dim": 0},
          "scatter_add_rank"))
add(error("scatter_add", [rnd([3, 4]), torch.tensor([[5]]), rnd([1, 1])], "IndexError", {"dim": 0},
          "scatter_add_oob"))

# --- scatter_reduce ---
for red in ["sum", "prod", "mean", "amax", "amin"]:
    for incl in [True, False]:
        for dt in [torch.float32, torch.float64, torch.int32, torch.int8, torch.float16, torch.bfloat16]:
            src_lo, src_hi = (-2.0, 2.0) if red == "prod" else (-3.0, 3.0)
            add(case("scatter_reduce", lambda x, i, s: torch.scatter_reduce(x, 0, i, s, red, include_self=incl),
                     [rnd([4, 3], dt, src_lo, src_hi), ix([6, 3], 3), rnd([6, 3], dt, src_lo, src_hi)],
                     {"dim": 0, "reduce": red, "include_self": incl},
                     "scatter_reduce_%s_%s_%s" % (red, "self" if incl else "noself", nm(dt))))
        if red != "mean":
            add(case("scatter_reduce", lambda x, i, s: torch.scatter_reduce(x, 1, i, s, red, include_self=incl),
                     [rnd([2, 4], torch.bool), ix([2, 5], 4), rnd([2, 5], torch.bool)],
                     {"dim": 1, "reduce": red, "include_self": incl},
                     "scatter_reduce_%s_%s_bool" % (red, "self" if incl else "noself")))
add(case("scatter_reduce", lambda x, i, s: torch.scatter_reduce(x, 0, i, s, "mean"),
         [torch.tensor([-5, 7, 4]), torch.tensor([0, 0, 1, 2]), torch.tensor([2, 2, 2, -9])],
         {"dim": 0, "reduce": "mean", "include_self": True}, "scatter_reduce_int_mean_floors"))
add(case("scatter_reduce", lambda x, i, s: torch.scatter_reduce(x, 0, i, s, "amax"),
         [torch.tensor([5.0, float("nan"), 1.0]), torch.tensor([0, 0, 2]),
          torch.tensor([float("nan"), 2.0, 3.0])],
         {"dim": 0, "reduce": "amax", "include_self": True}, "scatter_reduce_amax_nan"))
add(case("scatter_reduce", lambda x, i, s: torch.scatter_reduce(x, -1, i, s, "amin", include_self=False),
         [In(rnd([4, 3]), [["transpose", 0, 1]]), ix([3, 2], 4), rnd([3, 2])],
         {"dim": -1, "reduce": "amin", "include_self": False}, "scatter_reduce_noncontig"))
add(error("scatter_reduce", [rnd([3, 4]), ix([2, 4], 3), rnd([2, 4])], "ValueError",
          {"dim": 0, "reduce": "max", "include_self": True}, "scatter_reduce_bad_reduce"))
add(error("scatter_reduce", [rnd([3, 4], torch.bool), ix([2, 4], 3), rnd([2, 4], torch.bool)], "DTypeError",
          {"dim": 0, "reduce": "mean", "include_self": True}, "scatter_reduce_mean_bool"))
add(error("scatter_reduce", [rnd([3, 4]), torch.tensor([[3]]), rnd([1, 1])], "IndexError",
          {"dim": 0, "reduce": "sum", "include_self": True}, "scatter_reduce_oob"))

# --- index_add ---
for dt in ALL:
    alpha = True if dt == torch.bool else (2 if dt in INTS else 1.5)
    add(case("index_add", lambda x, i, s: torch.index_add(x, 0, i, s, alpha=alpha),
             [rnd([4, 3], dt), ix([5], 4), rnd([5, 3], dt)], {"dim": 0, "alpha": alpha}, "index_add_" + nm(dt)))
add(case("index_add", lambda x, i, s: torch.index_add(x, 1, i, s),
         [rnd([2, 4, 3]), ix([6], 4).int(), rnd([2, 6, 3])], {"dim": 1, "alpha": 1}, "index_add_i32_middle"))
add(case("index_add", lambda x, i, s: torch.index_add(x, -1, i, s, alpha=-2),
         [In(rnd([4, 3]), [["transpose", 0, 1]]), ix([5], 4), In(rnd([5, 3]), [["transpose", 0, 1]])],
         {"dim": -1, "alpha": -2}, "index_add_noncontig"))
add(case("index_add", lambda x, i, s: torch.index_add(x, 0, i, s, alpha=2.5),
         [rnd([3], torch.int64), torch.tensor([1, 1]), rnd([2], torch.int64)], {"dim": 0, "alpha": 2.5},
         "index_add_int_float_alpha"))
add(case("index_add", lambda x, i, s: torch.index_add(x, 0, i, s),
         [torch.tensor(1.0), torch.tensor([0, 0]), torch.tensor([5.0, 1.0])], {"dim": 0, "alpha": 1},
         "index_add_0d"))
add(case("index_add", lambda x, i, s: torch.index_add(x, 0, i, s),
         [rnd([3, 2]), torch.zeros(0, dtype=torch.long), rnd([0, 2])], {"dim": 0, "alpha": 1},
         "index_add_empty_index"))
add(error("index_add", [rnd([3, 4]), ix([2], 3), rnd([2, 4], torch.float64)], "DTypeError",
          {"dim": 0, "alpha": 1}, "index_add_src_dtype"))
add(error("index_add", [rnd([3, 4]), ix([2], 3), rnd([2, 3])], "ShapeError", {"dim": 0, "alpha": 1},
          "index_add_src_shape"))
add(error("index_add", [rnd([3, 4]), ix([2, 1], 3), rnd([2, 4])], "ShapeError", {"dim": 0, "alpha": 1},
          "index_add_2d_index"))
add(error("index_add", [rnd([3, 4]), torch.tensor([0.0]), rnd([1, 4])], "DTypeError", {"dim": 0, "alpha": 1},
          "index_add_float_index"))
add(error("index_add", [rnd([3, 4]), torch.tensor([3]), rnd([1, 4])], "IndexError", {"dim": 0, "alpha": 1},
          "index_add_oob"))
add(error("index_add", [rnd([3, 4]), torch.tensor([-1]), rnd([1, 4])], "IndexError", {"dim": 0, "alpha": 1},
          "index_add_negative"))

# --- index_put: inputs (x, values, indices...), null = ":" ---
def iput(acc):
    return lambda x, v, *idx: torch.ops.aten.index_put(x, list(idx), v, acc)


for dt in ALL:
    add(case("index_put", iput(False), [rnd([5, 3], dt), rnd([3], dt), torch.tensor([4, 0, 2])],
             {"accumulate": False}, "index_put_" + nm(dt)))
add(case("index_put", iput(False), [rnd([4, 5]), torch.tensor(-1.0), torch.tensor([[0], [3]]),
                                    torch.tensor([1, 4, 2])], {"accumulate": False}, "index_put_broadcast_indices"))
add(case("index_put", iput(False), [rnd([3, 4, 5]), rnd([2, 4]), torch.tensor([0, 2]), None,
                                    torch.tensor([1, 4])], {"accumulate": False}, "index_put_non_adjacent"))
add(case("index_put", iput(False), [rnd([3, 4, 5]), rnd([3, 2, 5]), None, torch.tensor([3, -4])],
         {"accumulate": False}, "index_put_middle_dim_negative"))
add(case("index_put", iput(False), [rnd([2, 3, 2]), rnd([2, 2]), None, torch.tensor([[True, False], [False, True],
                                                                                       [False, False]])],
         {"accumulate": False}, "index_put_mask_2d"))
add(case("index_put", iput(False), [rnd([3, 4]), torch.tensor(9.0), torch.tensor([True, False, True])],
         {"accumulate": False}, "index_put_mask_rows"))
add(case("index_put", iput(False), [rnd([3, 4]), torch.tensor(9.0), torch.tensor([1, 0, 1], dtype=torch.uint8)],
         {"accumulate": False}, "index_put_uint8_mask"))
add(case("index_put", iput(False), [rnd([3, 4]), torch.tensor(9.0), torch.tensor(True)],
         {"accumulate": False}, "index_put_0d_mask"))
add(case("index_put", iput(False), [rnd([3, 4]), rnd([4]), torch.tensor(1)], {"accumulate": False},
         "index_put_0d_index"))
add(case("index_put", iput(False), [In(rnd([4, 3]), [["transpose", 0, 1]]), In(rnd([4, 2]), [["transpose", 0, 1]]),
                                    torch.tensor([2, 0])], {"accumulate": False}, "index_put_noncontig"))
add(case("index_put", iput(False), [rnd([3, 2]), rnd([2]), torch.zeros(0, dtype=torch.long)],
         {"accumulate": False}, "index_put_empty_index"))
for dt in [torch.float32, torch.int64, torch.int8, torch.bool, torch.float16, torch.bfloat16]:
    add(case("index_put", iput(True), [rnd([4, 2], dt), rnd([6, 2], dt), torch.tensor([1, 3, 1, 1, 0, 3])],
             {"accumulate": True}, "index_put_accumulate_" + nm(dt)))
add(case("index_put", iput(True), [rnd([3, 4]), torch.tensor(1.0), None, torch.tensor([2, 2, 0])],
         {"accumulate": True}, "index_put_accumulate_columns"))
c = case("index_put", iput(False), [rnd([4, 3]), rnd([2, 3]), torch.tensor([3, 1])], {"accumulate": False},
         "index_put_i32_index")
c["inputs"][2]["dtype"] = "int32"
add(c)
add(error("index_put", [rnd([3, 4]), torch.tensor(1.0, dtype=torch.float64), torch.tensor([0])], "DTypeError",
          {"accumulate": False}, "index_put_values_dtype"))
add(error("index_put", [rnd([3, 4]), torch.tensor(1.0), torch.tensor([0.0])], "DTypeError",
          {"accumulate": False}, "index_put_float_index"))
add(error("index_put", [rnd([3, 4]), torch.tensor(1.0), torch.tensor([0]), torch.tensor([0]), torch.tensor([0])],
          "IndexError", {"accumulate": False}, "index_put_too_many"))
add(error("index_put", [rnd([3, 4]), torch.tensor(1.0), torch.tensor([True, False])], "ShapeError",
          {"accumulate": False}, "index_put_mask_shape"))
add(error("index_put", [rnd([3, 4]), torch.tensor(1.0), torch.tensor([0, 1]), torch.tensor([0, 1, 2])],
          "ShapeError", {"accumulate": False}, "index_put_indices_broadcast"))
add(error("index_put", [rnd([3, 4]), rnd([3, 3]), torch.tensor([0, 1])], "ShapeError",
          {"accumulate": False}, "index_put_values_shape"))
add(error("index_put", [rnd([3, 4]), torch.tensor(1.0), torch.tensor([3])], "IndexError",
          {"accumulate": False}, "index_put_oob"))
add(error("index_put", [rnd([3, 4]), torch.tensor(1.0), None, torch.tensor([-5])], "IndexError",
          {"accumulate": True}, "index_put_negative_oob"))

# --- masked_fill: value {"scalar": v} or a 0-d tensor ---
for dt in ALL:
    v = True if dt == torch.bool else (3 if dt in INTS else -2.5)
    add(case("masked_fill", lambda x, m, v: torch.masked_fill(x, m, v), [rnd([3, 4], dt), rnd([3, 4], torch.bool),
                                                                         Scalar(v)], {}, "masked_fill_" + nm(dt)))
add(case("masked_fill", lambda x, m, v: torch.masked_fill(x, m, v), [rnd([3, 4]), rnd([4], torch.bool), Scalar(1)],
         {}, "masked_fill_mask_broadcast"))
add(case("masked_fill", lambda x, m, v: torch.masked_fill(x, m, v), [rnd([4]), rnd([2, 4], torch.bool), Scalar(1.5)],
         {}, "masked_fill_input_broadcast"))
add(case("masked_fill", lambda x, m, v: torch.masked_fill(x, m, v),
         [rnd([3], torch.int32), rnd([3], torch.bool), Scalar(2.7)], {}, "masked_fill_int_float_value"))
add(case("masked_fill", lambda x, m, v: torch.masked_fill(x, m, v),
         [rnd([3, 2]), rnd([3, 2], torch.bool), torch.tensor(7.25, dtype=torch.float64)], {},
         "masked_fill_tensor_value"))
add(case("masked_fill", lambda x, m, v: torch.masked_fill(x, m, v),
         [rnd([3, 2], torch.int16), rnd([3, 2], torch.bool), torch.tensor(4)], {}, "masked_fill_tensor_value_int"))
add(case("masked_fill", lambda x, m, v: torch.masked_fill(x, m, v),
         [In(rnd([4, 3]), [["transpose", 0, 1]]), In(rnd([3, 4], torch.bool), [["slice", 1, 0, 4, 1]]), Scalar(0)],
         {}, "masked_fill_noncontig"))
add(case("masked_fill", lambda x, m, v: torch.masked_fill(x, m, v),
         [torch.tensor(1.0), torch.tensor(True), Scalar(5.0)], {}, "masked_fill_0d"))
add(case("masked_fill", lambda x, m, v: torch.masked_fill(x, m, v),
         [rnd([0, 3]), rnd([3], torch.bool), Scalar(5.0)], {}, "masked_fill_empty"))
add(error("masked_fill", [rnd([3]), torch.tensor([1, 0, 1], dtype=torch.uint8), Scalar(1.0)], "DTypeError", {},
          "masked_fill_uint8_mask"))
add(error("masked_fill", [rnd([3]), rnd([3]), Scalar(1.0)], "DTypeError", {}, "masked_fill_float_mask"))
add(error("masked_fill", [rnd([3]), rnd([3], torch.bool), torch.tensor([1.0])], "ShapeError", {},
          "masked_fill_1d_value"))
add(error("masked_fill", [rnd([3]), rnd([2], torch.bool), Scalar(1.0)], "ShapeError", {}, "masked_fill_broadcast"))
add(error("masked_fill", [rnd([3], torch.int64), rnd([3], torch.bool), Scalar(float("inf"))], "ValueError", {},
          "masked_fill_inf_into_int"))

# --- masked_select ---
for dt in ALL:
    add(case("masked_select", torch.masked_select, [rnd([3, 4], dt), rnd([3, 4], torch.bool)], {},
             "masked_select_" + nm(dt)))
add(case("masked_select", torch.masked_select, [rnd([3, 4]), rnd([4], torch.bool)], {}, "masked_select_mask_bcast"))
add(case("masked_select", torch.masked_select, [rnd([4]), rnd([2, 4], torch.bool)], {}, "masked_select_x_bcast"))
add(case("masked_select", torch.masked_select,
         [In(rnd([4, 3]), [["transpose", 0, 1]]), In(rnd([4, 3], torch.bool), [["transpose", 0, 1]])], {},
         "masked_select_noncontig"))
add(case("masked_select", torch.masked_select, [torch.tensor(2.0), torch.tensor(True)], {}, "masked_select_0d"))
add(case("masked_select", torch.masked_select, [rnd([3]), torch.zeros(3, dtype=torch.bool)], {},
         "masked_select_none"))
add(case("masked_select", torch.masked_select, [rnd([0, 2]), rnd([2], torch.bool)], {}, "masked_select_empty"))
add(error("masked_select", [rnd([3]), torch.tensor([1, 0, 1], dtype=torch.uint8)], "DTypeError", {},
          "masked_select_uint8_mask"))
add(error("masked_select", [rnd([3]), rnd([4], torch.bool)], "ShapeError", {}, "masked_select_broadcast"))

# --- nonzero ---
for dt in ALL:
    x = rnd([3, 4], dt)
    if dt not in (torch.bool,):
        x = torch.where(rnd([3, 4], torch.bool), torch.zeros_like(x), x)
    add(case("nonzero", torch.nonzero, [x], {}, "nonzero_" + nm(dt)))
add(case("nonzero", torch.nonzero, [torch.tensor([0.0, float("nan"), -0.0, float("inf"), 1e-30])], {},
         "nonzero_special_floats"))
add(case("nonzero", torch.nonzero, [In((rnd([2, 3, 4]) > 1).int(), [["permute", [2, 0, 1]]])], {},
         "nonzero_3d_noncontig"))
add(case("nonzero", torch.nonzero, [torch.tensor(3.0)], {}, "nonzero_0d"))
add(case("nonzero", torch.nonzero, [torch.tensor(0)], {}, "nonzero_0d_zero"))
add(case("nonzero", torch.nonzero, [rnd([0, 3])], {}, "nonzero_empty"))
add(case("nonzero", torch.nonzero, [torch.zeros(2, 2)], {}, "nonzero_all_zero"))

# --- take ---
for dt in ALL:
    add(case("take", torch.take, [rnd([3, 4], dt), ix([2, 3], 12, -12)], {}, "take_" + nm(dt)))
add(case("take", torch.take, [In(rnd([4, 3]), [["transpose", 0, 1]]), ix([5], 12)], {}, "take_noncontig"))
add(case("take", torch.take, [torch.tensor(3.0), torch.tensor([0, -1])], {}, "take_0d_input"))
add(case("take", torch.take, [rnd([3]), torch.tensor(2)], {}, "take_0d_index"))
add(case("take", torch.take, [rnd([0]), torch.zeros(2, 0, dtype=torch.long)], {}, "take_empty"))
add(error("take", [rnd([3]), torch.tensor([0]).int()], "DTypeError", {}, "take_i32"))
add(error("take", [rnd([3, 4]), torch.tensor([12])], "IndexError", {}, "take_oob"))
add(error("take", [rnd([3, 4]), torch.tensor([-13])], "IndexError", {}, "take_negative_oob"))
add(error("take", [rnd([0]), torch.tensor([0])], "IndexError", {}, "take_from_empty"))

# --- one_hot ---
add(case("one_hot", lambda x: F.one_hot(x, 5), [ix([6], 5)], {"num_classes": 5}, "one_hot"))
add(case("one_hot", lambda x: F.one_hot(x, -1), [ix([2, 3], 4)], {"num_classes": -1}, "one_hot_infer"))
add(case("one_hot", lambda x: F.one_hot(x, 3), [torch.tensor(1)], {"num_classes": 3}, "one_hot_0d"))
add(case("one_hot", lambda x: F.one_hot(x, 3), [torch.zeros(0, dtype=torch.long)], {"num_classes": 3},
         "one_hot_empty"))
add(case("one_hot", lambda x: F.one_hot(x, 4), [In(ix([3, 2], 4), [["transpose", 0, 1]])], {"num_classes": 4},
         "one_hot_noncontig"))
add(error("one_hot", [ix([3], 3).int()], "DTypeError", {"num_classes": 3}, "one_hot_i32"))
add(error("one_hot", [torch.tensor([0, -1])], "IndexError", {"num_classes": 3}, "one_hot_negative"))
add(error("one_hot", [torch.tensor([0, 3])], "IndexError", {"num_classes": 3}, "one_hot_too_big"))
add(error("one_hot", [torch.zeros(0, dtype=torch.long)], "ValueError", {"num_classes": -1}, "one_hot_empty_infer"))
add(error("one_hot", [torch.tensor([0])], "ValueError", {"num_classes": -2}, "one_hot_bad_classes"))

write("index", cases)
