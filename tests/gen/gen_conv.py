"""Golden cases for convolution: conv1d/2d/3d, conv_transpose1d/2d, unfold (im2col), fold (col2im).
Run with /usr/bin/python3 (torch 1.13); writes tests/data/conv.json.
torch 1.13 has no float16 convolution (and no integer unfold/fold) on the CPU: those goldens are
computed in float32 (exact for the small integers used) and cast back."""
import itertools

import torch
import torch.nn.functional as F

from common import In, case, error, rnd, via_f32, write

cases = []
F32, F64, F16, BF16, I64 = torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64
CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d}


def conv_case(nd, x, w, b, name, dtype=None, **opts):
    fn = lambda x, w, b: CONV[nd](x, w, b, **opts)
    if dtype == F16:
        fn = via_f32(fn)
    tol = 1e-4 if dtype in (None, F32, F64) else None
    cases.append(case("conv%dd" % nd, fn, [x, w, b], dict(opts), name=name, rtol=tol, atol=tol))


def convt_case(nd, x, w, b, name, **opts):
    cases.append(case("conv_transpose%dd" % nd, lambda x, w, b: CONV_T[nd](x, w, b, **opts), [x, w, b],
                      dict(opts), name=name, rtol=1e-4, atol=1e-4))


# --- conv2d: every combination of stride, padding, dilation, groups and bias ---
for i, (stride, padding, dilation, groups, bias) in enumerate(itertools.product(
        [1, 2], [0, 1, [2, 1]], [1, [2, 1]], [1, 2], [True, False])):
    if i % 2 and not bias and groups == 2:
        continue  # keep the file small: drop a few redundant no-bias cases
    x = rnd((1, 4, 6, 5))
    w = rnd((4, 4 // groups, 3, 2), lo=-1, hi=1)
    b = rnd((4,)) if bias else None
    conv_case(2, x, w, b, "conv2d_s%s_p%s_d%s_g%d_%s" % (stride, padding, dilation, groups, "b" if bias else "nb"),
              stride=stride, padding=padding, dilation=dilation, groups=groups)
conv_case(2, rnd((2, 3, 5, 5)), rnd((4, 3, 3, 3), lo=-1, hi=1), rnd((4,)), "conv2d_same_odd", padding="same")
conv_case(2, rnd((1, 2, 5, 4)), rnd((2, 2, 2, 3), lo=-1, hi=1), None, "conv2d_same_even_kernel", padding="same")
conv_case(2, rnd((1, 2, 6, 6)), rnd((4, 1, 2, 2), lo=-1, hi=1), rnd((4,)), "conv2d_same_dilated_groups",
          padding="same", dilation=2, groups=2)
conv_case(2, rnd((1, 2, 5, 4)), rnd((2, 2, 3, 3), lo=-1, hi=1), None, "conv2d_valid", padding="valid")
conv_case(2, rnd((3, 5, 5)), rnd((2, 3, 3, 3), lo=-1, hi=1), rnd((2,)), "conv2d_unbatched", padding=1)
conv_case(2, rnd((1, 4, 4, 4)), rnd((4, 1, 3, 3), lo=-1, hi=1), rnd((4,)), "conv2d_depthwise", groups=4, padding=1)
conv_case(2, rnd((2, 3, 4, 4)), rnd((5, 3, 1, 1), lo=-1, hi=1), rnd((5,)), "conv2d_1x1")
conv_case(2, rnd((1, 3, 5, 5)), rnd((2, 3, 1, 1), lo=-1, hi=1), None, "conv2d_1x1_strided", stride=2)
conv_case(2, In(rnd((1, 5, 4, 3)), [["permute", [0, 3, 1, 2]]]), In(rnd((3, 3, 2, 4)), [["transpose", 0, 3]]),
          None, "conv2d_noncontiguous", padding=1)
conv_case(2, rnd((0, 2, 4, 4)), rnd((3, 2, 3, 3)), rnd((3,)), "conv2d_empty_batch")
for dt in [F64, BF16, F16, I64]:
    conv_case(2, rnd((1, 2, 4, 4), dt), rnd((3, 2, 2, 2), dt, lo=-1, hi=1), rnd((3,), dt),
              "conv2d_" + str(dt).split(".")[1], dtype=dt, padding=1)

# --- conv1d / conv3d ---
for stride, padding, dilation, groups in [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2), (3, 1, 2, 2)]:
    conv_case(1, rnd((2, 4, 9)), rnd((6, 4 // groups, 3), lo=-1, hi=1), rnd((6,)),
              "conv1d_s%d_p%d_d%d_g%d" % (stride, padding, dilation, groups),
              stride=stride, padding=padding, dilation=dilation, groups=groups)
conv_case(1, rnd((3, 7)), rnd((2, 3, 4), lo=-1, hi=1), None, "conv1d_unbatched_same", padding="same")
conv_case(1, rnd((1, 2, 6)), rnd((2, 2, 3), lo=-1, hi=1), None, "conv1d_valid", padding="valid")
conv_case(1, rnd((1, 2, 6), F64), rnd((2, 2, 3), F64), rnd((2,), F64), "conv1d_float64")
conv_case(1, In(rnd((2, 8, 3)), [["transpose", 1, 2]]), rnd((2, 3, 3), lo=-1, hi=1), None, "conv1d_noncontiguous")
for stride, padding, dilation, groups in [(1, 0, 1, 1), ([1, 2, 1], [1, 0, 1], [1, 1, 2], 2)]:
    conv_case(3, rnd((1, 2, 4, 5, 5)), rnd((2, 2 // groups, 2, 3, 2), lo=-1, hi=1), rnd((2,)),
              "conv3d_s%s_p%s_d%s_g%d" % (stride, padding, dilation, groups),
              stride=stride, padding=padding, dilation=dilation, groups=groups)
conv_case(3, rnd((2, 3, 3, 3)), rnd((2, 2, 3, 3, 3), lo=-1, hi=1), None, "conv3d_unbatched_same", padding="same")

# --- conv errors ---
def conv_err(nd, x, w, b, kind, name, **opts):
    cases.append(error("conv%dd" % nd, [x, w, b], kind, dict(opts), name=name))


conv_err(2, rnd((2, 2, 2, 2, 2)), rnd((4, 2, 3, 3)), None, "ShapeError", "conv2d_input_rank", padding=1)
conv_err(2, rnd((1, 2, 5, 5)), rnd((4, 2, 3)), None, "ShapeError", "conv2d_weight_rank")
conv_err(2, rnd((1, 3, 5, 5)), rnd((4, 2, 3, 3)), None, "ShapeError", "conv2d_channels")
conv_err(2, rnd((1, 2, 5, 5)), rnd((3, 1, 2, 2)), None, "ShapeError", "conv2d_groups_divide", groups=2)
conv_err(2, rnd((1, 2, 5, 5)), rnd((4, 2, 2, 2)), None, "ValueError", "conv2d_bad_padding_mode", padding="foo")
conv_err(2, rnd((1, 2, 5, 5)), rnd((4, 2, 3, 3)), None, "ValueError", "conv2d_same_strided", padding="same", stride=2)
conv_err(2, rnd((1, 2, 2, 2)), rnd((4, 2, 3, 3)), None, "ShapeError", "conv2d_kernel_too_big")
conv_err(2, rnd((1, 2, 4, 4)), rnd((4, 2, 3, 3)), rnd((3,)), "ShapeError", "conv2d_bias_shape")
conv_err(2, rnd((1, 2, 4, 4)), rnd((4, 2, 3, 3), F64), None, "DTypeError", "conv2d_dtype_mismatch")
conv_err(2, rnd((1, 2, 4, 4)), rnd((4, 2, 3, 3)), rnd((4,), F64), "DTypeError", "conv2d_bias_dtype")
conv_err(2, rnd((1, 2, 4, 4), torch.bool), rnd((4, 2, 3, 3), torch.bool), None, "DTypeError", "conv2d_bool")
conv_err(2, rnd((1, 2, 4, 4)), rnd((4, 2, 3, 3)), None, "ValueError", "conv2d_stride_zero", stride=0)
conv_err(2, rnd((1, 2, 4, 4)), rnd((4, 2, 3, 3)), None, "ValueError", "conv2d_negative_padding", padding=-1)
conv_err(2, rnd((1, 2, 4, 4)), rnd((4, 2, 3, 3)), None, "ValueError", "conv2d_groups_zero", groups=0)
conv_err(2, rnd((1, 2, 4, 4)), rnd((4, 2, 3, 3)), None, "ValueError", "conv2d_stride_count", stride=[1, 1, 1])
conv_err(1, rnd((1, 2, 4, 4)), rnd((4, 2, 3)), None, "ShapeError", "conv1d_input_rank")
conv_err(3, rnd((1, 2, 4, 4)), rnd((4, 2, 3, 3, 3)), None, "ShapeError", "conv3d_input_rank")

# --- conv_transpose: stride, padding, output_padding, groups, dilation ---
for stride, padding, out_pad, groups, dilation in [(1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (2, 0, 1, 2, 1),
                                                   ([2, 3], [1, 0], [0, 2], 1, 1), (1, 1, 1, 2, 2),
                                                   (3, 2, 2, 1, [1, 2])]:
    convt_case(2, rnd((1, 4, 3, 4)), rnd((4, 6 // groups, 3, 2), lo=-1, hi=1), rnd((6,)),
               "conv_transpose2d_s%s_p%s_op%s_g%d_d%s" % (stride, padding, out_pad, groups, dilation),
               stride=stride, padding=padding, output_padding=out_pad, groups=groups, dilation=dilation)
convt_case(2, rnd((2, 3, 3)), rnd((2, 2, 2, 2), lo=-1, hi=1), None, "conv_transpose2d_unbatched", stride=2)
convt_case(2, In(rnd((1, 3, 2, 4)), [["transpose", 2, 3]]), rnd((3, 2, 3, 3), lo=-1, hi=1), None,
           "conv_transpose2d_noncontiguous", stride=2, padding=1)
convt_case(2, rnd((1, 2, 3, 3), F64), rnd((2, 2, 2, 2), F64), rnd((2,), F64), "conv_transpose2d_float64", stride=2)
cases.append(case("conv_transpose2d", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2), [
    rnd((1, 2, 3, 3), I64), rnd((2, 2, 2, 2), I64, lo=-1, hi=1), rnd((2,), I64)], {"stride": 2},
    name="conv_transpose2d_int64"))
for stride, padding, out_pad, groups, dilation in [(1, 0, 0, 1, 1), (2, 1, 1, 2, 1), (3, 2, 1, 1, 2)]:
    convt_case(1, rnd((2, 4, 5)), rnd((4, 4 // groups, 3), lo=-1, hi=1), rnd((4,)),
               "conv_transpose1d_s%d_p%d_op%d_g%d_d%d" % (stride, padding, out_pad, groups, dilation),
               stride=stride, padding=padding, output_padding=out_pad, groups=groups, dilation=dilation)
convt_case(1, rnd((2, 4)), rnd((2, 3, 3), lo=-1, hi=1), None, "conv_transpose1d_unbatched", stride=2)
cases.append(error("conv_transpose2d", [rnd((1, 2, 4, 4)), rnd((2, 3, 3, 3)), None], "ValueError",
                   {"stride": 2, "output_padding": 2}, name="conv_transpose2d_output_padding_too_big"))
cases.append(error("conv_transpose2d", [rnd((1, 3, 4, 4)), rnd((2, 3, 3, 3)), None], "ShapeError",
                   name="conv_transpose2d_channels"))
cases.append(error("conv_transpose2d", [rnd((1, 2, 1, 1)), rnd((2, 3, 3, 3)), None], "ShapeError",
                   {"padding": 2}, name="conv_transpose2d_output_too_small"))
cases.append(error("conv_transpose1d", [rnd((1, 2, 4)), rnd((2, 3, 3), F64), None], "DTypeError",
                   name="conv_transpose1d_dtype_mismatch"))

# --- unfold (im2col) and fold (col2im) ---
def blocks_attrs(kernel_size, dilation=1, padding=0, stride=1, output_size=None):
    a = {"kernel_size": kernel_size, "dilation": dilation, "padding": padding, "stride": stride}
    if output_size is not None:
        a["output_size"] = output_size
    return a


for k, d, p, s in [(2, 1, 0, 1), ([2, 3], 1, 1, 2), (2, 2, [1, 0], [1, 2]), (3, 1, 1, 1)]:
    a = blocks_attrs(k, d, p, s)
    cases.append(case("unfold", lambda x: F.unfold(x, k, d, p, s), [rnd((2, 2, 5, 6))], a,
                      name="unfold_k%s_d%s_p%s_s%s" % (k, d, p, s)))
    x = rnd((2, 2, 5, 6))
    cols = F.unfold(x, k, d, p, s)
    a = blocks_attrs(k, d, p, s, [5, 6])
    cases.append(case("fold", lambda c: F.fold(c, (5, 6), k, d, p, s), [cols], a,
                      name="fold_roundtrip_k%s_d%s_p%s_s%s" % (k, d, p, s)))
cases.append(case("unfold", lambda x: F.unfold(x, 2), [rnd((3, 4, 4))], blocks_attrs(2), name="unfold_unbatched"))
cases.append(case("unfold", lambda x: F.unfold(x, 2, stride=2), [In(rnd((1, 4, 4, 2)), [["permute", [0, 3, 1, 2]]])],
                  blocks_attrs(2, stride=2), name="unfold_noncontiguous"))
cases.append(case("unfold", via_f32(lambda x: F.unfold(x, 2, padding=1)), [rnd((1, 2, 3, 3), I64)],
                  blocks_attrs(2, padding=1), name="unfold_int64"))
cases.append(case("unfold", lambda x: F.unfold(x, 2), [rnd((1, 2, 3, 3), F64)], blocks_attrs(2), name="unfold_float64"))
cases.append(case("fold", lambda c: F.fold(c, 4, 2, stride=2), [rnd((3, 8, 4))], blocks_attrs(2, stride=2, output_size=4),
                  name="fold_output_size_scalar"))
cases.append(case("fold", lambda c: F.fold(c, (3, 4), 2), [rnd((4, 6))], blocks_attrs(2, output_size=[3, 4]),
                  name="fold_unbatched"))
cases.append(case("fold", lambda c: F.fold(c, (3, 3), 2), [rnd((1, 4, 4), BF16)], blocks_attrs(2, output_size=[3, 3]),
                  name="fold_bfloat16"))
cases.append(case("fold", via_f32(lambda c: F.fold(c, (3, 3), 2)), [rnd((1, 4, 4), I64)],
                  blocks_attrs(2, output_size=[3, 3]), name="fold_int64"))
cases.append(error("unfold", [rnd((3, 3))], "ShapeError", blocks_attrs(2), name="unfold_rank"))
cases.append(error("unfold", [rnd((1, 1, 3, 3))], "ShapeError", blocks_attrs(4), name="unfold_kernel_too_big"))
cases.append(error("unfold", [rnd((1, 1, 3, 3))], "ValueError", blocks_attrs(0), name="unfold_kernel_zero"))
cases.append(error("fold", [rnd((1, 4, 5))], "ShapeError", blocks_attrs(2, output_size=[3, 3]), name="fold_block_count"))
cases.append(error("fold", [rnd((1, 5, 4))], "ShapeError", blocks_attrs(2, output_size=[3, 3]), name="fold_divisible"))
cases.append(error("fold", [rnd((4,))], "ShapeError", blocks_attrs(2, output_size=[3, 3]), name="fold_rank"))

write("conv", cases)
