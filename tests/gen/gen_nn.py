"""Golden cases for nn functional ops (pooling, interpolate, softmax, normalisation, dropout,
embedding, distances) -> tests/data/nn.json. Losses are in gen_loss.py, attention in
gen_nn_attention.py. Run with /usr/bin/python3 (torch 1.13)."""
import torch
import torch.nn.functional as F

from common import FLOATS, In, case, error, num, rnd, stats, write

F32, F64, BF16, F16 = torch.float32, torch.float64, torch.bfloat16, torch.float16
TORCH_FLOATS = [F32, F64, BF16]  # what torch 1.13's CPU kernels accept for most nn ops
cases = []


def add(*cs):
    cases.extend(cs)


def with_nan(t):
    t = t.clone()
    flat = t.view(-1)
    flat[1] = float("nan")
    flat[5] = float("-inf")
    return t


# --- pooling ---
def pool_args(a):
    k = a["kernel_size"]
    return dict(kernel_size=k, stride=a.get("stride") or None, padding=a.get("padding", 0),
                ceil_mode=a.get("ceil_mode", False))


def max_pool(nd):
    fn = F.max_pool1d if nd == 1 else F.max_pool2d

    def run(a):
        return lambda x: fn(x, dilation=a.get("dilation", 1), return_indices=a.get("return_indices", False),
                            **pool_args(a))
    return run


def avg_pool(nd):
    fn = F.avg_pool1d if nd == 1 else F.avg_pool2d
    return lambda a: (lambda x: fn(x, count_include_pad=a.get("count_include_pad", True), **pool_args(a)))


for nd, op in ((1, "max_pool1d"), (2, "max_pool2d")):
    run = max_pool(nd)
    shape = [2, 3, 9] if nd == 1 else [2, 2, 5, 5]
    for dt in TORCH_FLOATS:
        a = {"kernel_size": 3, "stride": 2, "padding": 1, "return_indices": True}
        add(case(op, run(a), [rnd(shape, dt)], a, name=f"{op}_{dt}"))
    variants = [
        {"kernel_size": 2},
        {"kernel_size": 3, "stride": 2, "ceil_mode": True, "return_indices": True},
        {"kernel_size": 3, "stride": 1, "padding": 1, "dilation": 2, "return_indices": True},
        {"kernel_size": 2, "stride": 3, "padding": 1, "ceil_mode": True, "return_indices": True},
    ]
    if nd == 2:
        variants.append({"kernel_size": [2, 3], "stride": [1, 2], "padding": [1, 0],
                         "dilation": [2, 1], "return_indices": True})
    for i, a in enumerate(variants):
        add(case(op, run(a), [rnd([1, 2] + shape[2:], F32)], a, name=f"{op}_opts{i}"))
    ia = {"kernel_size": 2, "return_indices": True}
    add(case(op, run(ia), [with_nan(rnd(shape, F32))], ia, name=f"{op}_nan"))
    for dt in TORCH_FLOATS:  # ties: the first maximum of each window is reported
        add(case(op, run(ia), [rnd(shape, F32).round().to(dt)], ia, name=f"{op}_ties_{dt}"))
    add(case(op, run(ia), [rnd(shape[1:], F32)], ia, name=f"{op}_unbatched"))
    add(case(op, run(ia), [rnd([0] + shape[1:], F32)], ia, name=f"{op}_empty_batch"))
    perm = [0, 2, 1] if nd == 1 else [0, 3, 1, 2]
    base = rnd([2, 9, 3] if nd == 1 else [1, 5, 5, 2], F32)
    add(case(op, run(ia), [In(base, [["permute", perm]])], ia, name=f"{op}_noncontig"))
    add(error(op, [rnd(shape[-1:], F32)], "ShapeError", {"kernel_size": 2}, name=f"{op}_rank"))
    add(error(op, [rnd(shape, F32)], "ValueError", {"kernel_size": 2, "padding": 2}, name=f"{op}_pad"))
    add(error(op, [rnd(shape, F32)], "ValueError", {"kernel_size": 0}, name=f"{op}_kernel0"))
    add(error(op, [rnd(shape, F32)], "ValueError", {"kernel_size": [2, 2, 2]}, name=f"{op}_kernel3"))
    add(error(op, [rnd(shape, F32)], "ShapeError", {"kernel_size": 12}, name=f"{op}_small"))
    add(error(op, [rnd(shape, torch.int64)], "DTypeError", {"kernel_size": 2}, name=f"{op}_int"))

for nd, op in ((1, "avg_pool1d"), (2, "avg_pool2d")):
    run = avg_pool(nd)
    shape = [2, 3, 9] if nd == 1 else [2, 2, 5, 5]
    for dt in TORCH_FLOATS:
        a = {"kernel_size": 3, "stride": 2, "padding": 1}
        add(case(op, run(a), [rnd(shape, dt)], a, name=f"{op}_{dt}"))
    variants = [
        {"kernel_size": 2},
        {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
        {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
        {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
        {"kernel_size": 2, "stride": 3, "padding": 1, "ceil_mode": True},
    ]
    if nd == 2:
        variants.append({"kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 0]})
    for i, a in enumerate(variants):
        add(case(op, run(a), [rnd([1, 2] + shape[2:], F32)], a, name=f"{op}_opts{i}"))
    a = {"kernel_size": 2}
    add(case(op, run(a), [rnd(shape[1:], F64)], a, name=f"{op}_unbatched"))
    add(case(op, run(a), [rnd([0] + shape[1:], F32)], a, name=f"{op}_empty_batch"))
    base = rnd([2, 9, 3] if nd == 1 else [1, 5, 5, 2], F32)
    perm = [0, 2, 1] if nd == 1 else [0, 3, 1, 2]
    add(case(op, run(a), [In(base, [["permute", perm]])], a, name=f"{op}_noncontig"))
    add(error(op, [rnd([2, 3, 4, 4, 4], F32)], "ShapeError", {"kernel_size": 2}, name=f"{op}_rank"))
    add(error(op, [rnd(shape, F32)], "ValueError", {"kernel_size": 3, "padding": 2}, name=f"{op}_pad"))
    add(error(op, [rnd(shape, F32)], "ValueError", {"kernel_size": 2, "stride": 0}, name=f"{op}_stride0"))
    add(error(op, [rnd(shape, torch.int32)], "DTypeError", {"kernel_size": 2}, name=f"{op}_int"))

# adaptive pooling
for size in (4, 3, 12, 1):
    a = {"output_size": size}
    add(case("adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x, size), [rnd([2, 3, 10], F32)], a,
             name=f"adaptive_avg_pool1d_{size}"))
for dt in TORCH_FLOATS:
    add(case("adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x, 3), [rnd([3, 7], dt)],
             {"output_size": 3}, name=f"adaptive_avg_pool1d_{dt}"))
add(case("adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x, 3),
         [In(rnd([7, 2, 3], F32), [["permute", [1, 2, 0]]])], {"output_size": 3},
         name="adaptive_avg_pool1d_noncontig"))
add(error("adaptive_avg_pool1d", [rnd([2, 3, 4, 4], F32)], "ShapeError", {"output_size": 2}))
add(error("adaptive_avg_pool1d", [rnd([2, 3, 4], F32)], "ValueError", {"output_size": -1},
          name="adaptive_avg_pool1d_negative"))

for op, fn in (("adaptive_avg_pool2d", F.adaptive_avg_pool2d),
               ("adaptive_max_pool2d", lambda x, s: F.adaptive_max_pool2d(x, s, return_indices=True))):
    for size in ([3, 3], [2, 4], [7, 5], [1, 1], [4]):
        a = {"output_size": size}
        arg = size[0] if len(size) == 1 else size
        add(case(op, lambda x: fn(x, arg), [rnd([1, 2, 6, 5], F32)], a, name=f"{op}_{'x'.join(map(str, size))}"))
    for dt in TORCH_FLOATS:
        add(case(op, lambda x: fn(x, [2, 3]), [rnd([2, 5, 7], dt)], {"output_size": [2, 3]}, name=f"{op}_{dt}"))
    add(case(op, lambda x: fn(x, [3, 2]), [In(rnd([2, 6, 5, 3], F32), [["permute", [0, 3, 1, 2]]])],
             {"output_size": [3, 2]}, name=f"{op}_noncontig"))
    add(case(op, lambda x: fn(x, [2, 2]), [rnd([0, 3, 4, 4], F32)], {"output_size": [2, 2]},
             name=f"{op}_empty_batch"))
    add(error(op, [rnd([4, 4], F32)], "ShapeError", {"output_size": [2, 2]}, name=f"{op}_rank"))
    add(error(op, [rnd([1, 2, 4, 4], F32)], "ValueError", {"output_size": [2, 2, 2]}, name=f"{op}_size3"))
    add(error(op, [rnd([1, 2, 4, 4], torch.int64)], "DTypeError", {"output_size": [2, 2]}, name=f"{op}_int"))
add(case("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, [0, 2]), [rnd([1, 2, 4, 4], F32)],
         {"output_size": [0, 2]}, name="adaptive_avg_pool2d_zero"))
add(case("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, [2, 2], return_indices=True),
         [with_nan(rnd([2, 2, 4, 4], F32))], {"output_size": [2, 2]}, name="adaptive_max_pool2d_nan"))


# --- interpolate ---
def interp(a):
    def run(x):
        return F.interpolate(x, size=a.get("size"), scale_factor=a.get("scale_factor"),
                             mode=a.get("mode", "nearest"), align_corners=a.get("align_corners"))
    return run


interp_variants = [
    ([1, 2, 5], {"scale_factor": 2.0}),
    ([1, 2, 5], {"scale_factor": 1.7}),
    ([1, 2, 8], {"scale_factor": 0.5}),
    ([1, 2, 5], {"size": 8}),
    ([1, 2, 9], {"size": 4}),
    ([1, 2, 4, 5], {"scale_factor": 2.0}),
    ([1, 2, 4, 5], {"scale_factor": [1.5, 2.3]}),
    ([1, 2, 4, 5], {"size": [7, 3]}),
    ([1, 1, 6, 6], {"size": [6, 6]}),
    ([1, 2, 7, 6], {"scale_factor": 0.6}),
]
for shape, a in interp_variants:
    modes = ["nearest"] + (["linear"] if len(shape) == 3 else ["bilinear", "bicubic"])
    for mode in modes:
        aligns = [None] if mode == "nearest" else [False, True]
        for al in aligns:
            aa = dict(a, mode=mode)
            if al is not None:
                aa["align_corners"] = al
            name = "interpolate_%s_%s_%s%s" % (mode, "x".join(map(str, shape)),
                                               "size" if "size" in a else "scale", "_ac" if al else "")
            add(case("interpolate", interp(aa), [rnd(shape, F32)], aa, name=name))
for dt in (F64, BF16):
    for mode, shape in (("nearest", [1, 2, 3, 4]), ("linear", [2, 2, 5]), ("bilinear", [1, 2, 3, 4]),
                        ("bicubic", [1, 2, 3, 4])):
        aa = {"scale_factor": 1.5, "mode": mode}
        fn = interp(aa)
        if dt == BF16 and mode != "nearest":
            # torch 1.13 computes bf16 interpolation weights in bf16 (errors of several percent);
            # the reference is the float32 result rounded once, which is what ember computes.
            fn = (lambda f: lambda x: f(x.float()).bfloat16())(fn)
        add(case("interpolate", fn, [rnd(shape, dt)], aa, name=f"interpolate_{mode}_{dt}"))
aa = {"scale_factor": 2.0, "mode": "nearest"}
add(case("interpolate", interp(aa), [rnd([1, 2, 3, 3], torch.uint8, 0, 80)], aa, name="interpolate_nearest_u8"))
aa = {"size": [5, 4], "mode": "bilinear", "align_corners": False}
add(case("interpolate", interp(aa), [In(rnd([1, 3, 4, 2], F32), [["permute", [0, 2, 3, 1]]])], aa,
         name="interpolate_bilinear_noncontig"))
aa = {"size": [5, 4], "mode": "bicubic"}
add(case("interpolate", interp(aa), [rnd([0, 2, 3, 3], F32)], aa, name="interpolate_empty_batch"))
add(error("interpolate", [rnd([1, 1, 2, 2, 2], F32)], "ShapeError", {"scale_factor": 2.0}, name="interpolate_5d"))
add(error("interpolate", [rnd([1, 1, 4], F32)], "ShapeError", {"scale_factor": 2.0, "mode": "bilinear"},
          name="interpolate_bilinear_3d"))
add(error("interpolate", [rnd([1, 1, 4, 4], F32)], "ShapeError", {"scale_factor": 2.0, "mode": "linear"},
          name="interpolate_linear_4d"))
add(error("interpolate", [rnd([1, 1, 4], F32)], "ValueError", {"scale_factor": 2.0, "mode": "area"},
          name="interpolate_mode"))
add(error("interpolate", [rnd([1, 1, 4], F32)], "ValueError", {"scale_factor": 2.0, "size": 3},
          name="interpolate_size_and_scale"))
add(error("interpolate", [rnd([1, 1, 4], F32)], "ValueError", {}, name="interpolate_neither"))
add(error("interpolate", [rnd([1, 1, 4], F32)], "ValueError", {"scale_factor": 2.0, "align_corners": True},
          name="interpolate_nearest_align"))
add(error("interpolate", [rnd([1, 1, 4, 4], torch.int64)], "DTypeError",
          {"scale_factor": 2.0, "mode": "bilinear"}, name="interpolate_int"))

# --- softmax / log_softmax ---
for op, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
    for dim in (0, 1, -1):
        for dt in TORCH_FLOATS:
            add(case(op, lambda x: fn(x, dim), [rnd([2, 3, 4], dt)], {"dim": dim}, name=f"{op}_d{dim}_{dt}"))
    add(case(op, lambda x: fn(x, -1), [rnd([2, 45], F32)], {"dim": -1}, name=f"{op}_long_row"))
    add(case(op, lambda x: fn(x, 1), [rnd([1, 3, 260], F32)], {"dim": 1}, name=f"{op}_wide_inner"))
    add(case(op, lambda x: fn(x, -1), [rnd([4, 6], F32, -1e4, 1e4)], {"dim": -1}, name=f"{op}_large"))
    x = rnd([3, 5], F32)
    x[0, 1] = float("-inf")
    x[2, :] = float("-inf")
    add(case(op, lambda x: fn(x, 1), [x], {"dim": 1}, name=f"{op}_neginf"))
    add(case(op, lambda x: fn(x, 0), [In(rnd([5, 4], F32), [["transpose", 0, 1]])], {"dim": 0},
             name=f"{op}_noncontig"))
    add(case(op, lambda x: fn(x, 1), [In(rnd([4, 6, 3], F64), [["slice", 1, 0, 6, 2]])], {"dim": 1},
             name=f"{op}_strided"))
    add(case(op, lambda x: fn(x, 0), [torch.tensor(1.5)], {"dim": 0}, name=f"{op}_0d"))
    add(case(op, lambda x: fn(x, 1), [rnd([1, 7], F32)], {"dim": 1}, name=f"{op}_batch1"))
    add(case(op, lambda x: fn(x, 1), [rnd([0, 4], F32)], {"dim": 1}, name=f"{op}_empty"))
    add(error(op, [rnd([3, 4], torch.int64)], "DTypeError", {"dim": 1}, name=f"{op}_int"))
    add(error(op, [rnd([3, 4], F32)], "IndexError", {"dim": 2}, name=f"{op}_dim"))

# --- normalisation ---
def ln(a):
    return lambda x, w, b: F.layer_norm(x, a["normalized_shape"], w, b, a.get("eps", 1e-5))


for dt in TORCH_FLOATS:
    a = {"normalized_shape": [8]}
    add(case("layer_norm", ln(a), [rnd([2, 3, 8], dt), rnd([8], dt), rnd([8], dt)], a, name=f"layer_norm_{dt}"))
for i, (shape, ns, w, b) in enumerate((([2, 3, 8], [3, 8], True, True), ([4, 5], [5], False, False),
                                      ([4, 5], [5], True, False), ([4, 5], [5], False, True),
                                      ([2, 45], [45], True, True), ([0, 5], [5], True, True))):
    a = {"normalized_shape": ns, "eps": 1e-3 if i == 1 else 1e-5}
    add(case("layer_norm", ln(a), [rnd(shape, F32), rnd(ns, F32) if w else None, rnd(ns, F32) if b else None],
             a, name=f"layer_norm_opts{i}"))
a = {"normalized_shape": [6]}
add(case("layer_norm", ln(a), [rnd([1, 6], F32), rnd([6], F32), rnd([6], F32)], a, name="layer_norm_batch1"))
a = {"normalized_shape": [4]}
add(case("layer_norm", ln(a), [In(rnd([4, 3], F32), [["transpose", 0, 1]]), In(rnd([8], F32), [["slice", 0, 0, 8, 2]]),
                                rnd([4], F32)], a, name="layer_norm_noncontig"))
add(error("layer_norm", [rnd([2, 4], F32), None, None], "ShapeError", {"normalized_shape": [3]}, name="layer_norm_shape"))
add(error("layer_norm", [rnd([2, 4], F32), rnd([3], F32), None], "ShapeError", {"normalized_shape": [4]},
          name="layer_norm_weight"))
add(error("layer_norm", [rnd([2, 4], torch.int64), None, None], "DTypeError", {"normalized_shape": [4]},
          name="layer_norm_int"))


def rms_ref(a):
    def run(x, w):
        eps = a["eps"] if "eps" in a else torch.finfo(x.dtype).eps
        xd = x.double()
        dims = tuple(range(-len(a["normalized_shape"]), 0))
        y = xd * torch.rsqrt(xd.pow(2).mean(dims, keepdim=True) + eps)
        if w is not None:
            y = y * w.double()
        return y.to(x.dtype)
    return run


for dt in TORCH_FLOATS + [F16]:
    a = {"normalized_shape": [6]}
    add(case("rms_norm", rms_ref(a), [rnd([3, 6], dt), rnd([6], dt)], a, name=f"rms_norm_{dt}"))
for i, (shape, ns, w, eps) in enumerate((([2, 3, 4], [3, 4], True, 1e-6), ([5, 7], [7], False, None),
                                        ([2, 45], [45], True, 1e-5), ([0, 3], [3], True, None))):
    a = {"normalized_shape": ns}
    if eps is not None:
        a["eps"] = eps
    add(case("rms_norm", rms_ref(a), [rnd(shape, F32), rnd(ns, F32) if w else None], a, name=f"rms_norm_opts{i}"))
a = {"normalized_shape": [3]}
add(case("rms_norm", rms_ref(a), [In(rnd([3, 4], F32), [["transpose", 0, 1]]), None], a, name="rms_norm_noncontig"))
add(error("rms_norm", [rnd([2, 4], F32), None], "ShapeError", {"normalized_shape": [2, 4, 1]}, name="rms_norm_shape"))
add(error("rms_norm", [rnd([2, 4], torch.int32), None], "DTypeError", {"normalized_shape": [4]}, name="rms_norm_int"))


def gn(a):
    return lambda x, w, b: F.group_norm(x, a["num_groups"], w, b, a.get("eps", 1e-5))


for dt in TORCH_FLOATS:
    a = {"num_groups": 3}
    add(case("group_norm", gn(a), [rnd([2, 6, 3, 3], dt), rnd([6], dt), rnd([6], dt)], a, name=f"group_norm_{dt}"))
for i, (shape, g, affine) in enumerate((([2, 6, 4], 1, True), ([2, 6, 4], 6, False), ([3, 4], 2, True),
                                       ([1, 4, 2, 2, 2], 2, True), ([0, 4, 3], 2, True))):
    a = {"num_groups": g, "eps": 1e-3}
    c = shape[1]
    add(case("group_norm", gn(a), [rnd(shape, F32), rnd([c], F32) if affine else None,
                                   rnd([c], F32) if affine else None], a, name=f"group_norm_opts{i}"))
a = {"num_groups": 2}
add(case("group_norm", gn(a), [rnd([1, 4, 3], F32), rnd([4], F32), rnd([4], F32)], a, name="group_norm_batch1"))
add(case("group_norm", gn(a), [In(rnd([2, 5, 4], F32), [["permute", [0, 2, 1]]]), rnd([4], F32), None], a,
         name="group_norm_noncontig"))
add(error("group_norm", [rnd([2, 6, 4], F32), None, None], "ShapeError", {"num_groups": 4}, name="group_norm_groups"))
add(error("group_norm", [rnd([2, 6, 4], F32), None, None], "ValueError", {"num_groups": 0}, name="group_norm_zero"))
add(error("group_norm", [rnd([6], F32), None, None], "ShapeError", {"num_groups": 2}, name="group_norm_rank"))
add(error("group_norm", [rnd([2, 6, 4], F32), rnd([4], F32), None], "ShapeError", {"num_groups": 2},
          name="group_norm_weight"))


def bn(a):
    def run(x, rm, rv, w, b):
        rm = None if rm is None else rm.clone()
        rv = None if rv is None else rv.clone()
        y = F.batch_norm(x, rm, rv, w, b, a.get("training", False), a.get("momentum", 0.1), a.get("eps", 1e-5))
        return y, rm, rv
    return run


def stats_inputs(c, dt):
    return [rnd([c], dt, -0.5, 0.5), rnd([c], dt, 0.5, 2.0)]


for dt in TORCH_FLOATS:
    for training in (False, True):
        a = {"training": training}
        add(case("batch_norm", bn(a), [rnd([4, 3, 2, 2], dt)] + stats_inputs(3, dt) + [rnd([3], dt), rnd([3], dt)],
                 a, name=f"batch_norm_{'train' if training else 'eval'}_{dt}"))
for i, (shape, training, has_stats, affine, mom) in enumerate((
        ([5, 4], True, True, False, 0.3), ([2, 3, 5], True, False, True, 0.1), ([2, 3, 5], False, True, False, 0.1),
        ([3, 2, 2, 3, 2], True, True, True, 0.5), ([2, 3, 5], True, True, True, 0.0),
        ([0, 3], False, True, True, 0.1))):
    a = {"training": training, "momentum": mom, "eps": 1e-3}
    c = shape[1]
    st = stats_inputs(c, F32) if has_stats else [None, None]
    add(case("batch_norm", bn(a), [rnd(shape, F32)] + st + ([rnd([c], F32), rnd([c], F32)] if affine else [None, None]),
             a, name=f"batch_norm_opts{i}"))
a = {"training": True}
add(case("batch_norm", bn(a), [rnd([1, 3, 4], F32)] + stats_inputs(3, F32) + [rnd([3], F32), None], a,
         name="batch_norm_batch1"))
add(case("batch_norm", bn(a), [In(rnd([3, 4, 2], F32), [["permute", [0, 2, 1]]])] + stats_inputs(2, F32) + [None, None],
         a, name="batch_norm_noncontig"))
add(error("batch_norm", [rnd([1, 3], F32)] + stats_inputs(3, F32) + [None, None], "ValueError", {"training": True},
          name="batch_norm_one_value"))
add(error("batch_norm", [rnd([2, 3], F32), None, None, None, None], "ValueError", {"training": False},
          name="batch_norm_eval_no_stats"))
add(error("batch_norm", [rnd([2, 3], F32)] + stats_inputs(4, F32) + [None, None], "ShapeError", {"training": False},
          name="batch_norm_stats_shape"))
add(error("batch_norm", [rnd([3], F32), None, None, None, None], "ShapeError", {"training": True}, name="batch_norm_rank"))
add(error("batch_norm", [rnd([2, 3], torch.int64)] + stats_inputs(3, F32) + [None, None], "DTypeError",
          {"training": False}, name="batch_norm_int"))

# --- dropout ---
for dt, hi in ((F32, 1.43), (F64, 1.43), (BF16, 1.44), (F16, 1.43)):
    ones = In(torch.ones(1, 1, dtype=dt), [["expand", [100, 100]]])
    s = stats("dropout", [100, 100], dt, {"p": 0.3, "training": True}, mean=1.0, std=(0.3 / 0.7) ** 0.5, lo=0.0,
              hi=hi, inputs=[ones])
    s["name"] = f"dropout_stats_{dt}"
    add(s)
s = stats("dropout", [200, 100], F32, {"p": 0.9, "training": True}, mean=1.0, std=3.0, lo=0.0, hi=10.01, tol=0.25,
          inputs=[In(torch.ones(1, 1), [["expand", [200, 100]]])])
s["name"] = "dropout_stats_p09"
add(s)
for name, a in (("p0", {"p": 0.0, "training": True}), ("eval", {"p": 0.5, "training": False}),
                ("p1", {"p": 1.0, "training": True})):
    add(case("dropout", lambda x: F.dropout(x, a["p"], a["training"]), [rnd([3, 4], F32)], a, name=f"dropout_{name}"))
add(case("dropout", lambda x: F.dropout(x, 0.5, True), [rnd([0, 4], F32)], {"p": 0.5, "training": True},
         name="dropout_empty"))
add(error("dropout", [rnd([3], F32)], "ValueError", {"p": 1.5, "training": True}, name="dropout_p"))
add(error("dropout", [rnd([3], F32)], "ValueError", {"p": -0.1, "training": True}, name="dropout_negative_p"))
add(error("dropout", [rnd([3], torch.int64)], "DTypeError", {"p": 0.5, "training": True}, name="dropout_int"))

# --- embedding ---
emb_idx = torch.tensor([[0, 4, 2], [1, 1, 3]])
for dt in FLOATS:
    add(case("embedding", lambda i, w: F.embedding(i, w), [emb_idx, rnd([5, 3], dt)], {}, name=f"embedding_{dt}"))
add(case("embedding", lambda i, w: F.embedding(i, w), [emb_idx.int(), rnd([5, 2], F32)], {}, name="embedding_i32"))
add(case("embedding", lambda i, w: F.embedding(i, w, padding_idx=1), [emb_idx, rnd([5, 2], F32)], {"padding_idx": 1},
         name="embedding_padding_idx"))
add(case("embedding", lambda i, w: F.embedding(i, w), [torch.tensor(3), rnd([5, 2], F32)], {}, name="embedding_0d"))
add(case("embedding", lambda i, w: F.embedding(i, w), [torch.zeros(0, dtype=torch.int64), rnd([5, 2], F32)], {},
         name="embedding_empty"))
add(case("embedding", lambda i, w: F.embedding(i, w),
         [In(emb_idx, [["transpose", 0, 1]]), In(rnd([3, 5], F32), [["transpose", 0, 1]])], {},
         name="embedding_noncontig"))
add(case("embedding", lambda i, w: F.embedding(i, w), [emb_idx, rnd([5, 3], torch.int32)], {}, name="embedding_int_weight"))
add(error("embedding", [torch.tensor([0, 5]), rnd([5, 2], F32)], "IndexError", {}, name="embedding_out_of_range"))
add(error("embedding", [torch.tensor([-1]), rnd([5, 2], F32)], "IndexError", {}, name="embedding_negative"))
add(error("embedding", [torch.tensor([0.0]), rnd([5, 2], F32)], "DTypeError", {}, name="embedding_float_index"))
add(error("embedding", [torch.tensor([0]), rnd([5], F32)], "ShapeError", {}, name="embedding_weight_rank"))
add(error("embedding", [torch.tensor([0]), rnd([5, 2], F32)], "ValueError", {"padding_idx": 5},
          name="embedding_padding_idx_range"))

# --- distances ---
for dt in TORCH_FLOATS:
    add(case("cosine_similarity", lambda a, b: F.cosine_similarity(a, b), [rnd([4, 5], dt), rnd([4, 5], dt, -2, 2)],
             {"dim": 1, "eps": 1e-8}, name=f"cosine_similarity_{dt}"))
x0 = rnd([3, 4], F32)
x0[1] = 0
for name, ins, a in (("dim0", [rnd([4, 3], F32), rnd([4, 3], F64)], {"dim": 0, "eps": 1e-8}),
                     ("bcast", [rnd([2, 1, 5], F32), rnd([3, 5], F32)], {"dim": -1, "eps": 1e-8}),
                     ("zero", [x0, rnd([3, 4], F32, -2, 2)], {"dim": 1, "eps": 1e-8}),
                     ("eps", [rnd([3, 4], F32, -1e-3, 1e-3), rnd([3, 4], F32)], {"dim": 1, "eps": 0.1}),
                     ("noncontig", [In(rnd([5, 4], F32), [["transpose", 0, 1]]), rnd([4, 5], F32)], {"dim": 1, "eps": 1e-8}),
                     ("empty", [rnd([0, 3], F32), rnd([0, 3], F32)], {"dim": 1, "eps": 1e-8})):
    add(case("cosine_similarity", lambda u, v: F.cosine_similarity(u, v, a["dim"], a["eps"]), ins, a,
             name=f"cosine_similarity_{name}"))
add(error("cosine_similarity", [rnd([3, 4], F32), rnd([3, 5], F32)], "ShapeError", {"dim": 1, "eps": 1e-8},
          name="cosine_similarity_shape"))
add(error("cosine_similarity", [rnd([3, 4], F32), rnd([3, 4], F32)], "IndexError", {"dim": 2, "eps": 1e-8},
          name="cosine_similarity_dim"))
add(error("cosine_similarity", [rnd([3, 4], torch.int64), rnd([3, 4], F32)], "DTypeError", {"dim": 1, "eps": 1e-8},
          name="cosine_similarity_int"))

for p in (2.0, 1.0, 3.0, 0.0, float("inf"), 0.5):
    for keepdim in (False, True):
        a = {"p": num(p), "eps": 1e-6, "keepdim": keepdim}
        x, y = rnd([4, 5], F32), rnd([4, 5], F32, -2, 2)
        if p == 0.0:
            y[0, :2] = x[0, :2] + 1e-6  # exact zeros after the eps shift
        add(case("pairwise_distance", lambda u, v: F.pairwise_distance(u, v, p, 1e-6, keepdim), [x, y], a,
                 name=f"pairwise_distance_p{p}{'_keep' if keepdim else ''}", atol=1e-5))
for dt in (F64, BF16):
    add(case("pairwise_distance", lambda u, v: F.pairwise_distance(u, v), [rnd([3, 4], dt), rnd([3, 4], dt, -2, 2)],
             {"p": 2.0, "eps": 1e-6, "keepdim": False}, name=f"pairwise_distance_{dt}"))
for name, ins in (("bcast", [rnd([2, 1, 4], F32), rnd([3, 4], F32)]), ("1d", [rnd([5], F32), rnd([5], F32, -1, 1)]),
                  ("noncontig", [In(rnd([4, 3], F32), [["transpose", 0, 1]]), rnd([3, 4], F32)])):
    add(case("pairwise_distance", lambda u, v: F.pairwise_distance(u, v), ins, {"p": 2.0, "eps": 1e-6, "keepdim": False},
             name=f"pairwise_distance_{name}"))
add(error("pairwise_distance", [rnd([3, 4], F32), rnd([2, 4], F32)], "ShapeError", {"p": 2.0, "eps": 1e-6},
          name="pairwise_distance_shape"))
add(error("pairwise_distance", [rnd([3, 4], torch.int32), rnd([3, 4], torch.int32)], "DTypeError", {"p": 2.0, "eps": 1e-6},
          name="pairwise_distance_int"))

# cdist on small row counts (torch's direct path); the matmul path is in gen_nn_attention.py.
for p in (2.0, 1.0, 0.0, float("inf"), 0.5, 3.0):
    x, y = rnd([3, 4], F32), rnd([5, 4], F32, -2, 2)
    if p == 0.0:
        y[0] = x[0]
        y[1, :2] = x[1, :2]
    add(case("cdist", lambda u, v: torch.cdist(u, v, p), [x, y], {"p": num(p)}, name=f"cdist_p{p}", atol=1e-5))
for dt in (F64,):
    add(case("cdist", lambda u, v: torch.cdist(u, v), [rnd([2, 3, 4], dt), rnd([2, 5, 4], dt)], {"p": 2.0},
             name=f"cdist_batched_{dt}"))
add(case("cdist", lambda u, v: torch.cdist(u, v, 1.0), [rnd([2, 1, 3, 4], F32), rnd([3, 2, 4], F32)], {"p": 1.0},
         name="cdist_bcast"))
add(case("cdist", lambda u, v: torch.cdist(u, v), [In(rnd([4, 3], F32), [["transpose", 0, 1]]), rnd([2, 4], F32)],
         {"p": 2.0}, name="cdist_noncontig"))
add(case("cdist", lambda u, v: torch.cdist(u, v), [rnd([0, 4], F32), rnd([2, 4], F32)], {"p": 2.0}, name="cdist_empty"))
add(error("cdist", [rnd([3, 4], F32), rnd([2, 5], F32)], "ShapeError", {"p": 2.0}, name="cdist_shape"))
add(error("cdist", [rnd([4], F32), rnd([2, 4], F32)], "ShapeError", {"p": 2.0}, name="cdist_rank"))
add(error("cdist", [rnd([3, 4], F32), rnd([2, 4], F32)], "ValueError", {"p": -1.0}, name="cdist_p"))
add(error("cdist", [rnd([3, 4], torch.int64), rnd([2, 4], torch.int64)], "DTypeError", {"p": 2.0}, name="cdist_int"))

write("nn", cases)
