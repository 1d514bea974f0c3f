"""Golden cases for the layout ops: cat, stack, split, chunk, unbind, repeat, tile,
repeat_interleave, flip, roll, tril, triu, pad, meshgrid.

Run with /usr/bin/python3 (torch 1.13). Writes tests/data/layout.json. torch 1.13 implements
reflect/replicate padding only for float32/float64 inputs of 2-5 dims; these ops only move data,
so the expected values for other dtypes (and for a 1-d input) come from the same padding done in
float64 on an input with a batch dim, cast back.
"""
import torch
import torch.nn.functional as F

from common import ALL, FLOATS, INTS, In, case, error, rnd, write

cases = []


def nm(dt):
    return str(dt).split(".")[1]


def add(c):
    cases.append(c)


def listed(fn):
    """Wraps an op taking a tensor list so case() can pass the list as separate inputs."""
    return lambda *xs: fn(list(xs))


# --- cat ---
for dt in ALL:
    add(case("cat", listed(lambda xs: torch.cat(xs, 0)), [rnd([2, 3], dt), rnd([1, 3], dt)], {"dim": 0},
             "cat_" + nm(dt)))
add(case("cat", listed(lambda xs: torch.cat(xs, 1)), [rnd([2, 1, 2]), rnd([2, 3, 2]), rnd([2, 2, 2])],
         {"dim": 1}, "cat_middle"))
add(case("cat", listed(lambda xs: torch.cat(xs, -1)),
         [In(rnd([3, 2]), [["transpose", 0, 1]]), In(rnd([2, 6]), [["slice", 1, 0, 6, 2]])], {"dim": -1},
         "cat_noncontig"))
for a, b in [(torch.int64, torch.float32), (torch.uint8, torch.int8), (torch.bool, torch.int32),
             (torch.float16, torch.bfloat16), (torch.int16, torch.float64)]:
    add(case("cat", listed(lambda xs: torch.cat(xs, 0)), [rnd([2, 2], a), rnd([1, 2], b)], {"dim": 0},
             "cat_promote_%s_%s" % (nm(a), nm(b))))
add(case("cat", listed(lambda xs: torch.cat(xs, 1)), [rnd([2, 2]), torch.zeros(0, dtype=torch.float64), rnd([2, 1])],
         {"dim": 1}, "cat_skips_1d_empty"))
add(case("cat", listed(lambda xs: torch.cat(xs, 0)), [torch.zeros(0), torch.zeros(0, dtype=torch.int32)],
         {"dim": 0}, "cat_all_empty"))
add(case("cat", listed(lambda xs: torch.cat(xs, 1)), [rnd([2, 0]), rnd([2, 3]), rnd([2, 0])], {"dim": 1},
         "cat_empty_parts"))
add(case("cat", listed(lambda xs: torch.cat(xs, 0)), [rnd([3])], {"dim": 0}, "cat_single"))
add(case("cat", listed(lambda xs: torch.cat(xs, 0)), [rnd([1, 2]) for _ in range(40)], {"dim": 0},
         "cat_many"))
add(error("cat", [], "ValueError", {"dim": 0}, "cat_no_tensors"))
add(error("cat", [torch.tensor(1.0), torch.tensor(2.0)], "ShapeError", {"dim": 0}, "cat_0d"))
add(error("cat", [rnd([2, 2]), rnd([2])], "ShapeError", {"dim": 0}, "cat_rank"))
add(error("cat", [rnd([2, 2]), rnd([2, 3])], "ShapeError", {"dim": 0}, "cat_sizes"))
add(error("cat", [rnd([2, 2]), rnd([2, 2])], "IndexError", {"dim": 2}, "cat_dim"))

# --- stack ---
for dt in [torch.float32, torch.int64, torch.bool, torch.float16]:
    add(case("stack", listed(lambda xs: torch.stack(xs, 0)), [rnd([2, 3], dt), rnd([2, 3], dt)], {"dim": 0},
             "stack_" + nm(dt)))
add(case("stack", listed(lambda xs: torch.stack(xs, 2)), [rnd([2, 3]), rnd([2, 3]), rnd([2, 3])], {"dim": 2},
         "stack_last"))
add(case("stack", listed(lambda xs: torch.stack(xs, -2)),
         [In(rnd([3, 2]), [["transpose", 0, 1]]), rnd([2, 3], torch.float64)], {"dim": -2},
         "stack_negative_promote_noncontig"))
add(case("stack", listed(lambda xs: torch.stack(xs, 0)), [torch.tensor(1), torch.tensor(2), torch.tensor(3)],
         {"dim": 0}, "stack_0d"))
add(case("stack", listed(lambda xs: torch.stack(xs, 1)), [rnd([0, 2]), rnd([0, 2])], {"dim": 1}, "stack_empty"))
add(error("stack", [], "ValueError", {"dim": 0}, "stack_no_tensors"))
add(error("stack", [rnd([2, 3]), rnd([3, 2])], "ShapeError", {"dim": 0}, "stack_shapes"))
add(error("stack", [rnd([2]), rnd([2])], "IndexError", {"dim": 2}, "stack_dim"))

# --- split / chunk / unbind (views) ---
add(case("split", lambda x: torch.split(x, 2, 0), [rnd([5, 2])], {"size": 2, "dim": 0}, "split_uneven"))
add(case("split", lambda x: torch.split(x, 2, -1), [rnd([3, 4], torch.int32)], {"size": 2, "dim": -1},
         "split_even_last"))
add(case("split", lambda x: torch.split(x, 9, 0), [rnd([3])], {"size": 9, "dim": 0}, "split_bigger"))
add(case("split", lambda x: torch.split(x, [1, 0, 3], 1), [rnd([2, 4], torch.bool)], {"sizes": [1, 0, 3], "dim": 1},
         "split_sizes"))
add(case("split", lambda x: torch.split(x, 2, 1), [In(rnd([5, 3]), [["transpose", 0, 1]])], {"size": 2, "dim": 1},
         "split_noncontig"))
add(case("split", lambda x: torch.split(x, 0, 0), [rnd([0, 2])], {"size": 0, "dim": 0}, "split_empty_size0"))
add(case("split", lambda x: torch.split(x, 2, 0), [rnd([0, 2])], {"size": 2, "dim": 0}, "split_empty"))
add(error("split", [torch.tensor(1.0)], "ShapeError", {"size": 1, "dim": 0}, "split_0d"))
add(error("split", [rnd([3])], "ValueError", {"size": -1, "dim": 0}, "split_negative"))
add(error("split", [rnd([3])], "ValueError", {"size": 0, "dim": 0}, "split_zero"))
add(error("split", [rnd([3])], "ShapeError", {"sizes": [1, 1], "dim": 0}, "split_sizes_sum"))
add(error("split", [rnd([3])], "ValueError", {"sizes": [4, -1], "dim": 0}, "split_sizes_negative"))
add(error("split", [rnd([3])], "IndexError", {"size": 1, "dim": 1}, "split_dim"))

add(case("chunk", lambda x: torch.chunk(x, 3, 0), [rnd([6, 2], torch.float16)], {"chunks": 3, "dim": 0}, "chunk_even"))
add(case("chunk", lambda x: torch.chunk(x, 4, -1), [rnd([2, 5])], {"chunks": 4, "dim": -1}, "chunk_fewer"))
add(case("chunk", lambda x: torch.chunk(x, 3, 1), [In(rnd([7, 2]), [["transpose", 0, 1]])], {"chunks": 3, "dim": 1},
         "chunk_noncontig"))
add(case("chunk", lambda x: torch.chunk(x, 3, 0), [rnd([0])], {"chunks": 3, "dim": 0}, "chunk_empty"))
add(error("chunk", [rnd([3])], "ValueError", {"chunks": 0, "dim": 0}, "chunk_zero"))
add(error("chunk", [torch.tensor(1.0)], "ShapeError", {"chunks": 1, "dim": 0}, "chunk_0d"))

add(case("unbind", lambda x: torch.unbind(x, 0), [rnd([3, 2], torch.int8)], {"dim": 0}, "unbind"))
add(case("unbind", lambda x: torch.unbind(x, -1), [In(rnd([3, 2]), [["transpose", 0, 1]])], {"dim": -1},
         "unbind_noncontig"))
add(case("unbind", lambda x: torch.unbind(x, 0), [rnd([0, 2])], {"dim": 0}, "unbind_empty"))
add(error("unbind", [torch.tensor(1.0)], "IndexError", {"dim": 0}, "unbind_0d"))
add(error("unbind", [rnd([2])], "IndexError", {"dim": 1}, "unbind_dim"))

# --- repeat / tile ---
for dt in ALL:
    add(case("repeat", lambda x: x.repeat(2, 1, 3), [rnd([2, 3], dt)], {"repeats": [2, 1, 3]}, "repeat_" + nm(dt)))
add(case("repeat", lambda x: x.repeat(2, 2), [In(rnd([3, 2]), [["transpose", 0, 1]])], {"repeats": [2, 2]},
         "repeat_noncontig"))
add(case("repeat", lambda x: x.repeat(3, 2), [torch.tensor(4.0)], {"repeats": [3, 2]}, "repeat_0d"))
add(case("repeat", lambda x: x.repeat([]), [torch.tensor(4.0)], {"repeats": []}, "repeat_0d_none"))
add(case("repeat", lambda x: x.repeat(2, 0), [rnd([2, 2])], {"repeats": [2, 0]}, "repeat_zero"))
add(case("repeat", lambda x: x.repeat(1, 1), [rnd([2, 3])], {"repeats": [1, 1]}, "repeat_ones"))
add(case("repeat", lambda x: x.repeat(2, 1, 2, 1, 2, 1, 2, 1, 2), [rnd([2, 1, 2, 1, 2, 1, 2, 1, 2])],
         {"repeats": [2, 1, 2, 1, 2, 1, 2, 1, 2]}, "repeat_many_dims"))
# More dims than the loop engine walks needs >= 2^17 outputs: covered by tests/layout_test.cpp.
add(error("repeat", [rnd([2, 2])], "ShapeError", {"repeats": [2]}, "repeat_too_few"))
add(error("repeat", [rnd([2, 2])], "ValueError", {"repeats": [2, -1]}, "repeat_negative"))

add(case("tile", lambda x: torch.tile(x, (2,)), [rnd([2, 3])], {"reps": [2]}, "tile_fewer_reps"))
add(case("tile", lambda x: torch.tile(x, (2, 1, 2)), [rnd([3], torch.int64)], {"reps": [2, 1, 2]}, "tile_more_reps"))
add(case("tile", lambda x: torch.tile(x, (2, 2)), [In(rnd([3, 2]), [["transpose", 0, 1]])], {"reps": [2, 2]},
         "tile_noncontig"))
add(case("tile", lambda x: torch.tile(x, (3,)), [torch.tensor(True)], {"reps": [3]}, "tile_0d"))
add(error("tile", [rnd([2, 2])], "ValueError", {"reps": [-2]}, "tile_negative"))

# --- repeat_interleave: attrs "repeats" (int) or a second input; "dim" or null ---
for dt in [torch.float32, torch.int64, torch.bool, torch.bfloat16, torch.uint8]:
    add(case("repeat_interleave", lambda x: torch.repeat_interleave(x, 2, dim=1), [rnd([2, 3], dt)],
             {"repeats": 2, "dim": 1}, "repeat_interleave_" + nm(dt)))
add(case("repeat_interleave", lambda x: torch.repeat_interleave(x, 3), [rnd([2, 2])], {"repeats": 3, "dim": None},
         "repeat_interleave_flat"))
add(case("repeat_interleave", lambda x: torch.repeat_interleave(x, 0, dim=0), [rnd([2, 2])],
         {"repeats": 0, "dim": 0}, "repeat_interleave_zero"))
add(case("repeat_interleave", lambda x: torch.repeat_interleave(x, 1, dim=0), [rnd([2, 2])],
         {"repeats": 1, "dim": 0}, "repeat_interleave_one_copies"))
add(case("repeat_interleave", lambda x: torch.repeat_interleave(x, 2, dim=-1),
         [In(rnd([3, 2]), [["transpose", 0, 1]])], {"repeats": 2, "dim": -1}, "repeat_interleave_noncontig"))
add(case("repeat_interleave", lambda x: torch.repeat_interleave(x, 3), [torch.tensor(5)], {"repeats": 3, "dim": None},
         "repeat_interleave_0d"))
add(case("repeat_interleave", lambda x, r: torch.repeat_interleave(x, r, dim=0),
         [rnd([3, 2]), torch.tensor([1, 0, 3])], {"dim": 0}, "repeat_interleave_tensor"))
add(case("repeat_interleave", lambda x, r: torch.repeat_interleave(x, r, dim=1),
         [rnd([2, 3], torch.int16), torch.tensor([2], dtype=torch.int32)], {"dim": 1},
         "repeat_interleave_tensor_one_i32"))
add(case("repeat_interleave", lambda x, r: torch.repeat_interleave(x, r),
         [rnd([2, 2]), torch.tensor(2)], {"dim": None}, "repeat_interleave_tensor_0d_flat"))
add(error("repeat_interleave", [rnd([3])], "ValueError", {"repeats": -1, "dim": 0}, "repeat_interleave_negative"))
add(error("repeat_interleave", [rnd([3]), torch.tensor([1, -1, 1])], "ValueError", {"dim": 0},
          "repeat_interleave_tensor_negative"))
add(error("repeat_interleave", [rnd([3]), torch.tensor([1, 1])], "ShapeError", {"dim": 0},
          "repeat_interleave_tensor_length"))
add(error("repeat_interleave", [rnd([3]), torch.tensor([[1, 1, 1]])], "ShapeError", {"dim": 0},
          "repeat_interleave_tensor_2d"))
add(error("repeat_interleave", [rnd([3]), torch.tensor([1.0, 1.0, 1.0])], "DTypeError", {"dim": 0},
          "repeat_interleave_tensor_float"))

# --- flip / roll ---
for dt in ALL:
    add(case("flip", lambda x: torch.flip(x, (0, 2)), [rnd([2, 3, 4], dt)], {"dims": [0, 2]}, "flip_" + nm(dt)))
add(case("flip", lambda x: torch.flip(x, (-1,)), [In(rnd([4, 3]), [["transpose", 0, 1]])], {"dims": [-1]},
         "flip_noncontig"))
add(case("flip", lambda x: torch.flip(x, ()), [rnd([3])], {"dims": []}, "flip_no_dims"))
add(case("flip", lambda x: torch.flip(x, (0,)), [torch.tensor(3.0)], {"dims": [0]}, "flip_0d"))
add(case("flip", lambda x: torch.flip(x, (0, 1)), [rnd([0, 3])], {"dims": [0, 1]}, "flip_empty"))
add(error("flip", [rnd([2, 3])], "ValueError", {"dims": [0, -2]}, "flip_repeated"))
add(error("flip", [rnd([2, 3])], "IndexError", {"dims": [2]}, "flip_dim"))

for dt in [torch.float32, torch.int32, torch.bool, torch.float16]:
    add(case("roll", lambda x: torch.roll(x, 2, 1), [rnd([3, 5], dt)], {"shifts": [2], "dims": [1]}, "roll_" + nm(dt)))
add(case("roll", lambda x: torch.roll(x, (1, -2), (0, 1)), [rnd([3, 4])], {"shifts": [1, -2], "dims": [0, 1]},
         "roll_two_dims"))
add(case("roll", lambda x: torch.roll(x, 3), [rnd([2, 3])], {"shifts": [3], "dims": []}, "roll_flat"))
add(case("roll", lambda x: torch.roll(x, 3), [In(rnd([3, 2]), [["transpose", 0, 1]])], {"shifts": [3], "dims": []},
         "roll_flat_noncontig"))
add(case("roll", lambda x: torch.roll(x, (-7, 11, 1), (0, 2, 0)), [In(rnd([4, 3, 5]), [["permute", [0, 2, 1]]])],
         {"shifts": [-7, 11, 1], "dims": [0, 2, 0]}, "roll_large_repeated_noncontig"))
add(case("roll", lambda x: torch.roll(x, 1), [torch.tensor(2.0)], {"shifts": [1], "dims": []}, "roll_0d"))
add(case("roll", lambda x: torch.roll(x, 1, 0), [rnd([0, 2])], {"shifts": [1], "dims": [0]}, "roll_empty"))
add(error("roll", [rnd([2, 2])], "ValueError", {"shifts": [1, 1], "dims": [0]}, "roll_misaligned"))
add(error("roll", [rnd([2, 2])], "ValueError", {"shifts": [1, 1], "dims": []}, "roll_flat_two_shifts"))
add(error("roll", [rnd([2, 2])], "IndexError", {"shifts": [1], "dims": [2]}, "roll_dim"))

# --- tril / triu ---
for op, fn in [("tril", torch.tril), ("triu", torch.triu)]:
    for dt in ALL:
        add(case(op, lambda x: fn(x), [rnd([4, 5], dt)], {"diagonal": 0}, "%s_%s" % (op, nm(dt))))
    for k in [1, -2, 7, -9]:
        add(case(op, lambda x: fn(x, k), [rnd([2, 4, 3])], {"diagonal": k}, "%s_diag_%d" % (op, k)))
    add(case(op, lambda x: fn(x, -1), [In(rnd([5, 3]), [["transpose", 0, 1]])], {"diagonal": -1}, op + "_noncontig"))
    add(case(op, lambda x: fn(x), [rnd([2, 0, 3])], {"diagonal": 0}, op + "_empty"))
    add(error(op, [rnd([3])], "ShapeError", {"diagonal": 0}, op + "_1d"))

# --- pad ---
def pad_ref(x, p, mode, value=0.0, batch=0):
    """F.pad, computed in float64 (on an input with `batch` leading dims added) and cast back."""
    y = x.double()
    for _ in range(batch):
        y = y.unsqueeze(0)
    y = F.pad(y, p, mode=mode, value=value) if mode == "constant" else F.pad(y, p, mode=mode)
    for _ in range(batch):
        y = y.squeeze(0)
    return y.to(x.dtype)


for dt in ALL:
    v = 1 if dt == torch.bool else (2.5 if dt in INTS else -1.5)
    add(case("pad", lambda x: pad_ref(x, (1, 2), "constant", v), [rnd([2, 3], dt)],
             {"pad": [1, 2], "mode": "constant", "value": v}, "pad_constant_" + nm(dt)))
add(case("pad", lambda x: F.pad(x, (1, 0, 0, 2), value=9.0), [rnd([2, 3])],
         {"pad": [1, 0, 0, 2], "mode": "constant", "value": 9.0}, "pad_constant_2d"))
add(case("pad", lambda x: F.pad(x, (1, 1, 2, 0, 0, 1)), [In(rnd([3, 2, 2]), [["transpose", 0, 2]])],
         {"pad": [1, 1, 2, 0, 0, 1], "mode": "constant", "value": 0.0}, "pad_constant_3d_noncontig"))
add(case("pad", lambda x: F.pad(x, (-1, 2, 1, -1)), [rnd([3, 4])],
         {"pad": [-1, 2, 1, -1], "mode": "constant", "value": 0.0}, "pad_constant_crop"))
add(case("pad", lambda x: F.pad(x, (-2, -2)), [rnd([2, 4])], {"pad": [-2, -2], "mode": "constant", "value": 0.0},
         "pad_constant_crop_all"))
add(case("pad", lambda x: F.pad(x, (0, 0, 1, 1)), [rnd([0, 2])], {"pad": [0, 0, 1, 1], "mode": "constant", "value": 0.0},
         "pad_constant_empty_input"))
add(case("pad", lambda x: F.pad(x, ()), [torch.tensor(1.0)], {"pad": [], "mode": "constant", "value": 0.0},
         "pad_0d_nothing"))
for mode in ["reflect", "replicate", "circular"]:
    for dt in [torch.float32, torch.float64, torch.int32, torch.float16, torch.bool]:
        add(case("pad", lambda x: pad_ref(x, (2, 1), mode, batch=1), [rnd([2, 4], dt)],
                 {"pad": [2, 1], "mode": mode}, "pad_%s_1d_%s" % (mode, nm(dt))))
    add(case("pad", lambda x: pad_ref(x, (1, 2, 2, 1), mode, batch=1), [rnd([2, 3, 4])],
             {"pad": [1, 2, 2, 1], "mode": mode}, "pad_%s_2d" % mode))
    add(case("pad", lambda x: pad_ref(x, (1, 1, 0, 1, 1, 0), mode, batch=1),
             [In(rnd([3, 2, 2, 3]), [["transpose", 1, 3]])],
             {"pad": [1, 1, 0, 1, 1, 0], "mode": mode}, "pad_%s_3d_noncontig" % mode))
    add(case("pad", lambda x: pad_ref(x, (-1, 2), mode, batch=1), [rnd([2, 4])],
             {"pad": [-1, 2], "mode": mode}, "pad_%s_negative" % mode))
    add(case("pad", lambda x: pad_ref(x, (1, 2), mode, batch=2), [rnd([4])],
             {"pad": [1, 2], "mode": mode}, "pad_%s_1d_input" % mode))
add(error("pad", [rnd([2, 3])], "ValueError", {"pad": [1], "mode": "constant", "value": 0.0}, "pad_odd"))
add(error("pad", [rnd([3])], "ShapeError", {"pad": [1, 1, 1, 1], "mode": "constant", "value": 0.0}, "pad_too_many"))
add(error("pad", [rnd([2, 3])], "ValueError", {"pad": [1, 1], "mode": "wrap", "value": 0.0}, "pad_bad_mode"))
add(error("pad", [rnd([2, 3])], "ValueError", {"pad": [3, 0], "mode": "reflect"}, "pad_reflect_too_big"))
add(error("pad", [rnd([2, 3])], "ValueError", {"pad": [4, 0], "mode": "circular"}, "pad_circular_wraps"))
add(error("pad", [rnd([2, 3])], "ShapeError", {"pad": [-2, -2], "mode": "constant", "value": 0.0},
          "pad_negative_size"))
add(error("pad", [rnd([2, 0])], "ShapeError", {"pad": [1, 1], "mode": "replicate"}, "pad_replicate_empty_dim"))
add(error("pad", [rnd([2], torch.int32)], "ValueError", {"pad": [1, 1], "mode": "constant", "value": "nan"},
          "pad_nan_into_int"))

# --- meshgrid (views) ---
for idx in ["ij", "xy"]:
    add(case("meshgrid", lambda a, b: torch.meshgrid(a, b, indexing=idx), [rnd([3]), rnd([2])],
             {"indexing": idx}, "meshgrid_" + idx))
    add(case("meshgrid", lambda a, b, c: torch.meshgrid(a, b, c, indexing=idx),
             [rnd([2], torch.int64), rnd([3], torch.int64), torch.tensor(7)], {"indexing": idx},
             "meshgrid_three_0d_" + idx))
add(case("meshgrid", lambda a: torch.meshgrid(a, indexing="xy"), [rnd([4], torch.bool)], {"indexing": "xy"},
         "meshgrid_single"))
add(case("meshgrid", lambda a, b: torch.meshgrid(a, b, indexing="ij"),
         [In(rnd([6]), [["slice", 0, 0, 6, 2]]), rnd([0])], {"indexing": "ij"}, "meshgrid_noncontig_empty"))
add(error("meshgrid", [], "ValueError", {"indexing": "ij"}, "meshgrid_none"))
add(error("meshgrid", [rnd([2, 2])], "ShapeError", {"indexing": "ij"}, "meshgrid_2d"))
add(error("meshgrid", [rnd([2]), rnd([2], torch.int64)], "DTypeError", {"indexing": "ij"}, "meshgrid_dtypes"))
add(error("meshgrid", [rnd([2])], "ValueError", {"indexing": "ji"}, "meshgrid_indexing"))

write("layout", cases)
