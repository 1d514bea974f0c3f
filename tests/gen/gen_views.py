"""Golden cases for the view ops (reshape ... diagonal) plus contiguous and copy.

Run with /usr/bin/python3 (torch 1.13). Writes tests/data/views.json. A case's attrs carry
"alias": true/false when torch's result shares (or does not share) the input's storage; the runner
checks that ember's result does the same (views stay zero-copy, copies never alias).
"""
import torch

from common import ALL, FLOATS, In, case, error, rnd, write

cases = []


def shares(out, inp):
    if inp.numel() == 0 or out.numel() == 0:
        return None
    return out.storage().data_ptr() == inp.storage().data_ptr()


def view_case(op, fn, x, attrs, name=None):
    c = case(op, fn, [x], attrs, name)
    c["attrs"]["alias"] = shares(fn(x.value() if isinstance(x, In) else x),
                                 x.value() if isinstance(x, In) else x)
    cases.append(c)


def base(shape, dtype=torch.float32):
    return rnd(shape, dtype)


# --- reshape / view ---
for dt in ALL:
    view_case("reshape", lambda x: x.reshape(3, 4), base([2, 6], dt), {"shape": [3, 4]},
              "reshape_" + str(dt).split(".")[1])
view_case("reshape", lambda x: x.reshape(-1), base([2, 3, 4]), {"shape": [-1]}, "reshape_flat")
view_case("reshape", lambda x: x.reshape(2, -1, 2), base([2, 3, 4]), {"shape": [2, -1, 2]},
          "reshape_infer")
view_case("reshape", lambda x: x.reshape(4, 3), In(base([3, 4]), [["transpose", 0, 1]]),
          {"shape": [4, 3]}, "reshape_noncontig_copy")
view_case("reshape", lambda x: x.reshape(12), In(base([3, 4]), [["transpose", 0, 1]]),
          {"shape": [12]}, "reshape_transposed_flat")
view_case("reshape", lambda x: x.reshape(2, 2, 3), In(base([4, 6]), [["slice", 1, 0, 6, 2]]),
          {"shape": [2, 2, 3]}, "reshape_sliced_view")
view_case("reshape", lambda x: x.reshape(1, 1), torch.tensor(2.5), {"shape": [1, 1]},
          "reshape_0d_up")
view_case("reshape", lambda x: x.reshape([]), base([1, 1]), {"shape": []}, "reshape_to_0d")
view_case("reshape", lambda x: x.reshape(0, 3), base([3, 0]), {"shape": [0, 3]}, "reshape_empty")
view_case("reshape", lambda x: x.reshape(2, 3), In(base([3]), [["expand", [2, 3]]]),
          {"shape": [2, 3]}, "reshape_expanded")
cases.append(error("reshape", [base([2, 3])], "ShapeError", {"shape": [4, 2]}, "reshape_bad_numel"))
cases.append(error("reshape", [base([2, 3])], "ShapeError", {"shape": [-1, -1]}, "reshape_two_infer"))
cases.append(error("reshape", [base([2, 3])], "ShapeError", {"shape": [-2, 3]}, "reshape_negative"))
cases.append(error("reshape", [base([0, 3])], "ShapeError", {"shape": [-1, 0]}, "reshape_infer_empty"))

for dt in [torch.int64, torch.bool, torch.float16]:
    view_case("view", lambda x: x.view(6, 2), base([3, 4], dt), {"shape": [6, 2]},
              "view_" + str(dt).split(".")[1])
view_case("view", lambda x: x.view(2, 3, 2), In(base([4, 6]), [["slice", 0, 0, 4, 2]]),
          {"shape": [2, 3, 2]}, "view_sliced_rows")
view_case("view", lambda x: x.view(1), torch.tensor(7.0), {"shape": [1]}, "view_0d")
view_case("view", lambda x: x.view(3, 1, 4, 1), In(base([4, 3]), [["transpose", 0, 1]]),
          {"shape": [3, 1, 4, 1]}, "view_transposed_unit_dims")
cases.append(error("view", [In(base([3, 4]), [["transpose", 0, 1]])], "ShapeError",
                   {"shape": [12]}, "view_incompatible_strides"))
cases.append(error("view", [base([3, 4])], "ShapeError", {"shape": [5, -1]}, "view_bad_numel"))

# --- flatten / unflatten ---
view_case("flatten", lambda x: x.flatten(), base([2, 3, 4]), {"start": 0, "end": -1}, "flatten_all")
view_case("flatten", lambda x: x.flatten(1, 2), base([2, 3, 4], torch.int32), {"start": 1, "end": 2},
          "flatten_inner")
view_case("flatten", lambda x: x.flatten(-3, -2), base([2, 3, 4]), {"start": -3, "end": -2},
          "flatten_negative")
view_case("flatten", lambda x: x.flatten(), torch.tensor(3), {"start": 0, "end": -1}, "flatten_0d")
view_case("flatten", lambda x: x.flatten(0, 1), In(base([3, 4]), [["transpose", 0, 1]]),
          {"start": 0, "end": 1}, "flatten_noncontig_copies")
view_case("flatten", lambda x: x.flatten(1), base([2, 0, 3]), {"start": 1, "end": -1}, "flatten_empty")
cases.append(error("flatten", [base([2, 3, 4])], "ValueError", {"start": 2, "end": 1}, "flatten_reversed"))
cases.append(error("flatten", [base([2, 3])], "IndexError", {"start": 0, "end": 2}, "flatten_dim_range"))

view_case("unflatten", lambda x: x.unflatten(1, (2, 3)), base([4, 6]), {"dim": 1, "sizes": [2, 3]},
          "unflatten")
view_case("unflatten", lambda x: x.unflatten(-1, (-1, 2)), base([4, 6], torch.bfloat16),
          {"dim": -1, "sizes": [-1, 2]}, "unflatten_infer")
view_case("unflatten", lambda x: x.unflatten(0, (2, 2)), In(base([6, 4]), [["transpose", 0, 1]]),
          {"dim": 0, "sizes": [2, 2]}, "unflatten_noncontig")
cases.append(error("unflatten", [base([4, 6])], "ShapeError", {"dim": 1, "sizes": [4, 2]},
                   "unflatten_bad_sizes"))
cases.append(error("unflatten", [base([4, 6])], "ValueError", {"dim": 1, "sizes": []},
                   "unflatten_no_sizes"))

# --- permute / transpose / movedim ---
for dt in ALL:
    view_case("permute", lambda x: x.permute(2, 0, 1), base([2, 3, 4], dt), {"dims": [2, 0, 1]},
              "permute_" + str(dt).split(".")[1])
view_case("permute", lambda x: x.permute(-1, 0), In(base([3, 5]), [["slice", 1, 1, 5, 2]]),
          {"dims": [-1, 0]}, "permute_negative_sliced")
view_case("permute", lambda x: x.permute(()), torch.tensor(1.5), {"dims": []}, "permute_0d")
cases.append(error("permute", [base([2, 3])], "ShapeError", {"dims": [0]}, "permute_too_few"))
cases.append(error("permute", [base([2, 3])], "ValueError", {"dims": [0, 0]}, "permute_repeated"))
cases.append(error("permute", [base([2, 3])], "IndexError", {"dims": [0, 2]}, "permute_range"))

view_case("transpose", lambda x: x.transpose(0, 2), base([2, 3, 4], torch.int16), {"d0": 0, "d1": 2},
          "transpose")
view_case("transpose", lambda x: x.transpose(-1, -2), In(base([4, 3]), [["transpose", 0, 1]]),
          {"d0": -1, "d1": -2}, "transpose_back")
view_case("transpose", lambda x: x.transpose(0, -1), torch.tensor(2.0), {"d0": 0, "d1": -1}, "transpose_0d")
cases.append(error("transpose", [torch.tensor(2.0)], "IndexError", {"d0": 0, "d1": 1},
                   "transpose_0d_range"))
cases.append(error("transpose", [base([2, 3])], "IndexError", {"d0": 0, "d1": -3}, "transpose_range"))

view_case("movedim", lambda x: torch.movedim(x, 0, -1), base([2, 3, 4]), {"src": [0], "dst": [-1]},
          "movedim")
view_case("movedim", lambda x: torch.movedim(x, (0, 1), (2, 0)), base([2, 3, 4], torch.uint8),
          {"src": [0, 1], "dst": [2, 0]}, "movedim_two")
cases.append(error("movedim", [base([2, 3])], "ValueError", {"src": [0, 1], "dst": [1]},
                   "movedim_lengths"))
cases.append(error("movedim", [base([2, 3])], "ValueError", {"src": [0, 0], "dst": [1, 0]},
                   "movedim_repeated"))

# --- squeeze / unsqueeze ---
view_case("squeeze", lambda x: x.squeeze(), base([1, 3, 1, 2]), {"dims": []}, "squeeze_all")
view_case("squeeze", lambda x: x.squeeze(2), base([1, 3, 1, 2], torch.bool), {"dims": [2]}, "squeeze_dim")
view_case("squeeze", lambda x: x.squeeze(1), base([2, 3]), {"dims": [1]}, "squeeze_not_one")
view_case("squeeze", lambda x: x.squeeze(-1), base([3, 1]), {"dims": [-1]}, "squeeze_negative")
view_case("squeeze", lambda x: x.squeeze(0), torch.tensor(4), {"dims": [0]}, "squeeze_0d")
cases.append(error("squeeze", [base([2, 1])], "IndexError", {"dims": [2]}, "squeeze_range"))

view_case("unsqueeze", lambda x: x.unsqueeze(1), base([2, 3]), {"dim": 1}, "unsqueeze")
view_case("unsqueeze", lambda x: x.unsqueeze(-1), In(base([3, 2]), [["transpose", 0, 1]]), {"dim": -1},
          "unsqueeze_end_noncontig")
view_case("unsqueeze", lambda x: x.unsqueeze(0), torch.tensor(1.0, dtype=torch.float64), {"dim": 0},
          "unsqueeze_0d")
cases.append(error("unsqueeze", [base([2, 3])], "IndexError", {"dim": 3}, "unsqueeze_range"))

# --- expand / broadcast_to ---
for dt in [torch.float32, torch.int8, torch.bool, torch.bfloat16]:
    view_case("expand", lambda x: x.expand(2, 3, 4), base([3, 1], dt), {"shape": [2, 3, 4]},
              "expand_" + str(dt).split(".")[1])
view_case("expand", lambda x: x.expand(-1, 5), base([3, 1]), {"shape": [-1, 5]}, "expand_keep")
view_case("expand", lambda x: x.expand(3, 0), base([3, 1]), {"shape": [3, 0]}, "expand_to_empty")
view_case("expand", lambda x: x.expand(2, 2), torch.tensor(5), {"shape": [2, 2]}, "expand_0d")
cases.append(error("expand", [base([3, 2])], "ShapeError", {"shape": [3, 4]}, "expand_non_unit"))
cases.append(error("expand", [base([3, 2])], "ShapeError", {"shape": [2]}, "expand_fewer_dims"))
cases.append(error("expand", [base([3, 2])], "ShapeError", {"shape": [-1, 3, 2]}, "expand_new_minus_one"))
cases.append(error("expand", [base([3, 1])], "ShapeError", {"shape": [3, -2]}, "expand_negative"))
view_case("broadcast_to", lambda x: torch.broadcast_to(x, (4, 2, 3)), base([2, 1]), {"shape": [4, 2, 3]},
          "broadcast_to")
cases.append(error("broadcast_to", [base([2, 3])], "ShapeError", {"shape": [3, 3]}, "broadcast_to_bad"))

# --- slice / select / narrow ---
for dt in ALL:
    view_case("slice", lambda x: x[:, 1:4:2], base([3, 5], dt),
              {"dim": 1, "start": 1, "stop": 4, "step": 2}, "slice_" + str(dt).split(".")[1])
view_case("slice", lambda x: x[-2:], base([4, 2]), {"dim": 0, "start": -2, "stop": None, "step": 1},
          "slice_negative_start")
view_case("slice", lambda x: x[:, :-1], base([4, 3]), {"dim": -1, "start": None, "stop": -1, "step": 1},
          "slice_negative_stop")
view_case("slice", lambda x: x[5:10], base([4, 2]), {"dim": 0, "start": 5, "stop": 10, "step": 1},
          "slice_out_of_range_empty")
view_case("slice", lambda x: x[3:1], base([4, 2]), {"dim": 0, "start": 3, "stop": 1, "step": 1},
          "slice_reversed_empty")
view_case("slice", lambda x: x[::3], In(base([3, 7]), [["transpose", 0, 1]]),
          {"dim": 0, "start": None, "stop": None, "step": 3}, "slice_noncontig_step")
cases.append(error("slice", [base([4])], "ValueError", {"dim": 0, "start": 0, "stop": 4, "step": 0},
                   "slice_step_zero"))
cases.append(error("slice", [torch.tensor(1.0)], "IndexError", {"dim": 0, "start": 0, "stop": 1, "step": 1},
                   "slice_0d"))

for dt in [torch.float32, torch.int64, torch.float16]:
    view_case("select", lambda x: x.select(1, 2), base([3, 4, 2], dt), {"dim": 1, "index": 2},
              "select_" + str(dt).split(".")[1])
view_case("select", lambda x: x.select(-1, -1), In(base([2, 3]), [["transpose", 0, 1]]),
          {"dim": -1, "index": -1}, "select_negative")
view_case("select", lambda x: x.select(0, 0), base([1]), {"dim": 0, "index": 0}, "select_to_0d")
cases.append(error("select", [base([3, 4])], "IndexError", {"dim": 1, "index": 4}, "select_range"))
cases.append(error("select", [base([3, 4])], "IndexError", {"dim": 0, "index": -4}, "select_range_neg"))
cases.append(error("select", [torch.tensor(1.0)], "IndexError", {"dim": 0, "index": 0}, "select_0d"))

view_case("narrow", lambda x: x.narrow(1, 1, 2), base([3, 4], torch.int32), {"dim": 1, "start": 1, "length": 2},
          "narrow")
view_case("narrow", lambda x: x.narrow(0, -2, 2), base([3, 4]), {"dim": 0, "start": -2, "length": 2},
          "narrow_negative_start")
view_case("narrow", lambda x: x.narrow(0, 3, 0), base([3, 4]), {"dim": 0, "start": 3, "length": 0},
          "narrow_empty_at_end")
cases.append(error("narrow", [base([3, 4])], "IndexError", {"dim": 1, "start": 2, "length": 3},
                   "narrow_too_long"))
cases.append(error("narrow", [base([3, 4])], "IndexError", {"dim": 1, "start": -5, "length": 1},
                   "narrow_start_range"))

# --- diagonal ---
for dt in [torch.float32, torch.bool, torch.int64]:
    view_case("diagonal", lambda x: x.diagonal(), base([3, 4], dt), {"offset": 0, "d0": 0, "d1": 1},
              "diagonal_" + str(dt).split(".")[1])
view_case("diagonal", lambda x: x.diagonal(1), base([3, 4]), {"offset": 1, "d0": 0, "d1": 1}, "diagonal_above")
view_case("diagonal", lambda x: x.diagonal(-2), base([4, 3]), {"offset": -2, "d0": 0, "d1": 1},
          "diagonal_below")
view_case("diagonal", lambda x: x.diagonal(0, -1, 0), base([2, 3, 2]), {"offset": 0, "d0": -1, "d1": 0},
          "diagonal_batched")
view_case("diagonal", lambda x: x.diagonal(5), base([3, 4]), {"offset": 5, "d0": 0, "d1": 1}, "diagonal_empty")
view_case("diagonal", lambda x: x.diagonal(), In(base([4, 3]), [["transpose", 0, 1]]),
          {"offset": 0, "d0": 0, "d1": 1}, "diagonal_noncontig")
cases.append(error("diagonal", [base([3])], "ShapeError", {"offset": 0, "d0": 0, "d1": 1}, "diagonal_1d"))
cases.append(error("diagonal", [base([3, 3])], "ValueError", {"offset": 0, "d0": 1, "d1": 1},
                   "diagonal_same_dims"))

# --- contiguous / copy ---
for dt in ALL:
    view_case("contiguous", lambda x: x.contiguous(), In(base([3, 4], dt), [["transpose", 0, 1]]), {},
              "contiguous_" + str(dt).split(".")[1])
view_case("contiguous", lambda x: x.contiguous(), base([3, 4]), {}, "contiguous_already")
view_case("contiguous", lambda x: x.contiguous(), In(base([3]), [["expand", [2, 3]]]), {}, "contiguous_expanded")
view_case("contiguous", lambda x: x.contiguous(), base([0, 4]), {}, "contiguous_empty")
for dt in ALL:
    c = case("copy", lambda x: x.clone(), [In(base([2, 3], dt), [["slice", 1, 0, 3, 2]])], {},
             "clone_" + str(dt).split(".")[1])
    c["attrs"]["alias"] = False
    cases.append(c)
cases.append(case("copy", lambda x: x.clone(), [torch.tensor(3.5)], {}, "clone_0d"))


def copy_into(dst, src):
    d = dst.clone()
    d.copy_(src)
    return d


cases.append(case("copy", copy_into, [base([2, 3]), base([3], torch.float64)], {"inplace": True},
                  "copy_broadcast_cast"))
cases.append(case("copy", copy_into, [In(base([3, 2]), [["transpose", 0, 1]]), base([2, 3], torch.int32)],
                  {"inplace": True}, "copy_into_noncontig"))
cases.append(case("copy", copy_into, [base([2, 2], torch.bool), base([2, 2])], {"inplace": True},
                  "copy_float_to_bool"))
cases.append(error("copy", [base([2, 3]), base([3, 3])], "ShapeError", {"inplace": True}, "copy_bad_shape"))

write("views", cases)
