"""Golden cases for the vision ops (ember/vision): box ops, nms and roi_align from torchvision.ops,
morphology from OpenCV (cross-checked with scipy.ndimage), connected components from scipy.ndimage
and OpenCV (cross-checked with skimage.measure).

Run with /usr/bin/python3 (Debian python3-torch, python3-torchvision, python3-opencv,
python3-scipy, python3-skimage). Writes:
  tests/data/vision_ops.json       registry-op cases (nms, roi_align, erode, dilate,
                                   connected_components) that the conformance harness runs on every
                                   backend;
  tests/data/vision/boxes.json     the box functions built from ember ops (box_iou, box_convert, ...);
  tests/data/vision/large.json     2048x2048 images that both sides build from a formula (spirals,
                                   checkerboards, hashed noise), with summaries of the references'
                                   outputs (counts, sums, CRC-32 of the label image) instead of data.
"""
import json
import math
import os
import zlib

import numpy as np
import torch
import torchvision
from torchvision import ops as tvo

from common import DATA, In, case, error, rnd, tensor_spec, write

G = torch.Generator().manual_seed(15)
cases = []   # registry ops
boxes_cases = []


def add(c):
    cases.append(c)


def rand_boxes(n, lo=0.0, hi=100.0, max_wh=40.0, dtype=torch.float32, gen=G):
    xy = torch.rand(n, 2, generator=gen, dtype=torch.float64) * (hi - lo) + lo
    wh = torch.rand(n, 2, generator=gen, dtype=torch.float64) * max_wh
    return torch.cat([xy, xy + wh], 1).to(dtype)


def write_sub(name, cs, extra=None):
    path = os.path.join(DATA, "vision", name + ".json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    doc = {"generator": "tests/gen/gen_vision_ops.py", "torch": torch.__version__,
           "torchvision": torchvision.__version__, "cases": cs}
    if extra:
        doc.update(extra)
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    os.replace(path + ".tmp", path)
    print("vision/%s: %d cases -> %s" % (name, len(cs), path))


# ---------------------------------------------------------------- box functions (ember ops)
def bcase(fn_name, fn, inputs, attrs=None, name=None, rtol=None, atol=None):
    boxes_cases.append(case(fn_name, fn, inputs, attrs, name or fn_name, rtol, atol))


A = rand_boxes(7)
B = rand_boxes(5)
Bd = torch.tensor([[10., 10., 10., 10.], [0., 0., 5., 0.], [20., 20., 30., 30.],
                   [20., 20., 30., 30.], [-5., -5., 5., 5.]])  # points, lines, duplicates
for dt in (torch.float32, torch.float64):
    nm = str(dt).split(".")[1]
    a, b = A.to(dt), B.to(dt)
    bcase("box_area", tvo.box_area, [a], name="box_area_" + nm)
    bcase("box_iou", tvo.box_iou, [a, b], name="box_iou_" + nm)
    bcase("generalized_box_iou", tvo.generalized_box_iou, [a, b], name="giou_" + nm)
    bcase("distance_box_iou", tvo.distance_box_iou, [a, b], name="diou_" + nm)
    bcase("complete_box_iou", tvo.complete_box_iou, [a, b], name="ciou_" + nm)
bcase("box_iou", tvo.box_iou, [A, Bd], name="box_iou_degenerate")
bcase("generalized_box_iou", tvo.generalized_box_iou, [Bd[2:], A], name="giou_degenerate")
bcase("box_iou", tvo.box_iou, [A.round().int(), B.round().int()], name="box_iou_int32")
bcase("box_iou", tvo.box_iou, [A, torch.zeros(0, 4)], name="box_iou_empty")
bcase("box_area", tvo.box_area, [A.half()], name="box_area_float16", rtol=1e-3, atol=1e-3)
bcase("box_iou", tvo.box_iou, [In(A.t().contiguous(), [["transpose", 0, 1]]), B], name="box_iou_noncontig")
for fi in ("xyxy", "xywh", "cxcywh"):
    for fo in ("xyxy", "xywh", "cxcywh"):
        bcase("box_convert", lambda x, fi=fi, fo=fo: tvo.box_convert(x, fi, fo), [A],
              {"in_fmt": fi, "out_fmt": fo}, "box_convert_%s_%s" % (fi, fo))
bcase("box_convert", lambda x: tvo.box_convert(x, "xyxy", "cxcywh"), [A.round().long()],
      {"in_fmt": "xyxy", "out_fmt": "cxcywh"}, "box_convert_int64")
bcase("box_convert", lambda x: tvo.box_convert(x, "cxcywh", "xyxy"), [A.reshape(7, 1, 4)],
      {"in_fmt": "cxcywh", "out_fmt": "xyxy"}, "box_convert_3d")
wide = rand_boxes(9, lo=-50, hi=150, max_wh=80)
bcase("clip_boxes_to_image", lambda x: tvo.clip_boxes_to_image(x, (60, 90)), [wide], {"size": [60, 90]},
      "clip_boxes")
bcase("clip_boxes_to_image", lambda x: tvo.clip_boxes_to_image(x, (60, 90)), [wide.round().int()],
      {"size": [60, 90]}, "clip_boxes_int32")
bcase("remove_small_boxes", lambda x: tvo.remove_small_boxes(x, 12.0), [A], {"min_size": 12.0},
      "remove_small_boxes")
masks = torch.zeros(3, 9, 11, dtype=torch.bool)
masks[0, 2:5, 3:8] = True
masks[1, 0, 10] = True
masks[2, 4:9, 0:2] = True
masks[2, 1, 6] = True
bcase("masks_to_boxes", tvo.masks_to_boxes, [masks], name="masks_to_boxes")
bcase("masks_to_boxes", tvo.masks_to_boxes, [masks.to(torch.uint8)], name="masks_to_boxes_u8")


# ---------------------------------------------------------------- nms
def nms_ref(boxes, scores, iou, idxs=None, score_threshold=None, top_k=-1):
    cand = torch.arange(boxes.shape[0])
    if score_threshold is not None:
        cand = cand[scores > score_threshold]
    b, s = boxes[cand], scores[cand]
    if idxs is None:
        keep = tvo.nms(b, s, iou)
    else:
        keep = tvo.batched_nms(b, s, idxs[cand], iou)
    keep = cand[keep]
    if top_k >= 0:
        keep = keep[:top_k]
    return keep


def nms_case(name, boxes, scores, iou, idxs=None, score_threshold=None, top_k=-1):
    attrs = {"iou_threshold": iou, "top_k": top_k}
    if score_threshold is not None:
        attrs["score_threshold"] = score_threshold
    add(case("nms", lambda b, s, i: nms_ref(b, s, iou, i, score_threshold, top_k),
             [boxes, scores, idxs], attrs, name))


clustered = torch.cat([rand_boxes(40, 10, 20, 30), rand_boxes(40, 60, 70, 30), rand_boxes(40, 0, 100, 20)])
sc = torch.rand(120, generator=G)
for thr in (0.3, 0.5, 0.7):
    nms_case("nms_iou%g" % thr, clustered, sc, thr)
nms_case("nms_float64", clustered.double(), sc.double(), 0.5)
nms_case("nms_equal_scores", clustered, torch.full((120,), 0.5), 0.4)
nms_case("nms_score_threshold", clustered, sc, 0.5, score_threshold=0.6)
nms_case("nms_top_k", clustered, sc, 0.5, top_k=7)
nms_case("nms_top_k_zero", clustered, sc, 0.5, top_k=0)
nms_case("nms_threshold_and_top_k", clustered, sc, 0.3, score_threshold=0.2, top_k=12)
deg = torch.tensor([[10., 10., 10., 10.], [10., 10., 10., 10.], [0., 0., 5., 0.], [20., 20., 30., 30.],
                    [20., 20., 30., 30.], [30., 30., 20., 20.], [21., 21., 29., 29.], [0., 0., 1e-4, 1e-4]])
nms_case("nms_degenerate", deg, torch.tensor([.9, .8, .7, .6, .6, .5, .4, .3]), 0.5)
nms_case("nms_degenerate_zero_iou", deg, torch.tensor([.9, .8, .7, .6, .6, .5, .4, .3]), 0.0)
nms_case("nms_empty", torch.zeros(0, 4), torch.zeros(0), 0.5)
nms_case("nms_one", clustered[:1], sc[:1], 0.5)
nms_case("nms_noncontig", In(clustered.t().contiguous(), [["transpose", 0, 1]]),
         In(torch.stack([sc, sc]), [["select", 0, 1]]), 0.5)
big = rand_boxes(600, 0, 400, 60)
nms_case("nms_600", big, torch.rand(600, generator=G), 0.5)
cls = torch.randint(0, 4, (120,), generator=G)
nms_case("batched_nms", clustered, sc, 0.5, idxs=cls)
nms_case("batched_nms_int32", clustered, sc, 0.3, idxs=cls.int())
nms_case("batched_nms_equal_scores", clustered, torch.full((120,), 0.25), 0.5, idxs=cls)
nms_case("batched_nms_threshold_top_k", clustered, sc, 0.5, idxs=cls, score_threshold=0.3, top_k=10)
add(error("nms", [torch.zeros(3, 3), torch.zeros(3), None], "ShapeError", {"iou_threshold": 0.5}, "nms_bad_boxes"))
add(error("nms", [torch.zeros(3, 4), torch.zeros(2), None], "ShapeError", {"iou_threshold": 0.5}, "nms_bad_scores"))
add(error("nms", [torch.zeros(3, 4, dtype=torch.int32), torch.zeros(3), None], "DTypeError",
          {"iou_threshold": 0.5}, "nms_int_boxes"))
add(error("nms", [torch.zeros(3, 4), torch.zeros(3), torch.zeros(3)], "DTypeError", {"iou_threshold": 0.5},
          "nms_float_idxs"))



# ---------------------------------------------------------------- roi_align
def rois_for(n_img, k, h, w, gen=G, spill=0.0):
    bi = torch.randint(0, n_img, (k, 1), generator=gen).double()
    b = rand_boxes(k, -spill * w, w * (1 + spill), max_wh=max(h, w) * 0.7, dtype=torch.float64, gen=gen)
    return torch.cat([bi, b], 1).float()


def roi_case(name, x, rois, out, scale=1.0, ratio=-1, aligned=False, rtol=None, atol=None):
    attrs = {"output_size": list(out), "spatial_scale": scale, "sampling_ratio": ratio, "aligned": aligned}
    add(case("roi_align", lambda a, r: tvo.roi_align(a, r, out, scale, ratio, aligned), [x, rois], attrs,
             name, rtol, atol))


def q(t):  # short decimal data (multiples of 1/64) keeps the committed file small
    return (t * 64).round() / 64


X = q(rnd([2, 3, 12, 15]))
R = rois_for(2, 6, 12, 15)
roi_case("roi_align_3x3_ratio2", X, R, (3, 3), ratio=2)
roi_case("roi_align_adaptive", X, R, (2, 2))
roi_case("roi_align_aligned", X, R, (3, 4), aligned=True)
roi_case("roi_align_aligned_adaptive", X, R, (5, 5), ratio=-1, aligned=True)
roi_case("roi_align_scale_half", q(rnd([2, 2, 8, 9])), rois_for(2, 5, 16, 18, spill=0.3), (2, 3), scale=0.5)
roi_case("roi_align_outside", X, rois_for(2, 6, 12, 15, spill=1.0), (2, 2), ratio=3)
Rd = torch.tensor([[0, 3., 3., 3., 3.], [1, 5., 2., 2., 9.], [0, 0., 0., 15., 12.], [1, -20., -20., -10., -10.],
                   [0, 14.9, 11.9, 40., 40.]])
roi_case("roi_align_degenerate", X, Rd, (2, 2), ratio=2)
roi_case("roi_align_degenerate_aligned", X, Rd, (3, 3), ratio=2, aligned=True)
roi_case("roi_align_float64", X.double(), R.double(), (3, 3), ratio=2)
roi_case("roi_align_noncontig", In(q(rnd([2, 12, 15, 3])), [["permute", [0, 3, 1, 2]]]), R, (2, 3), ratio=2)
roi_case("roi_align_no_rois", X, torch.zeros(0, 5), (2, 2))
roi_case("roi_align_big", q(rnd([1, 2, 32, 32])), rois_for(1, 12, 32, 32), (7, 7), scale=1.0)
add(error("roi_align", [X, R[:, 1:]], "ShapeError", {"output_size": [2, 2]}, "roi_align_rois_4"))
add(error("roi_align", [X[0], R], "ShapeError", {"output_size": [2, 2]}, "roi_align_3d"))
add(error("roi_align", [X.double(), R], "DTypeError", {"output_size": [2, 2]}, "roi_align_mixed_dtypes"))
add(error("roi_align", [X, torch.tensor([[2., 0, 0, 4, 4]])], "IndexError", {"output_size": [2, 2]},
          "roi_align_batch_index"))
add(error("roi_align", [X, R], "ValueError", {"output_size": [0, 2]}, "roi_align_zero_output"))


# ---------------------------------------------------------------- morphology (OpenCV)
import cv2  # noqa: E402
import scipy.ndimage as ndi  # noqa: E402
import skimage.measure  # noqa: E402
from vision_images import checker, hashed_boxes, hashed_features, large_images, spiral  # noqa: E402

func_cases = []  # composite functions: structuring_element, morphology (vision/functions.json)
SHAPES = {"rect": cv2.MORPH_RECT, "cross": cv2.MORPH_CROSS, "ellipse": cv2.MORPH_ELLIPSE}
BORDERS = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT,
           "reflect_101": cv2.BORDER_REFLECT_101}
MOPS = {"open": cv2.MORPH_OPEN, "close": cv2.MORPH_CLOSE, "gradient": cv2.MORPH_GRADIENT,
        "tophat": cv2.MORPH_TOPHAT, "blackhat": cv2.MORPH_BLACKHAT}
rs = np.random.RandomState(15)


def se(shape, h, w):
    return cv2.getStructuringElement(SHAPES[shape], (w, h))


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def planes(fn, x):
    """fn over the last two dims of x (cv2 works on one plane at a time)."""
    if x.ndim == 2:
        return fn(x)
    return np.stack([planes(fn, p) for p in x])


def morph_case(op, name, x, k, anchor=None, border="constant", value=None, iterations=1):
    kw = {"borderType": BORDERS[border], "iterations": iterations}
    if anchor is not None:
        kw["anchor"] = (anchor[1], anchor[0])
    if value is not None:
        kw["borderValue"] = value
    f = cv2.erode if op == "erode" else cv2.dilate
    ref = planes(lambda p: f(p, k.astype(np.uint8), **kw), x)
    attrs = {"border": border, "iterations": iterations}
    if anchor is not None:
        attrs["anchor"] = list(anchor)
    if value is not None:
        attrs["border_value"] = value
    add(case(op, lambda *_: t(ref), [t(x), t(k.astype(bool))], attrs, name))


img_u8 = rs.randint(0, 256, (9, 11)).astype(np.uint8)
img_f32 = (rs.rand(2, 3, 8, 10) * 8 - 4).astype(np.float32)
img_bin = (rs.rand(12, 13) > 0.6).astype(np.uint8)
for op in ("erode", "dilate"):
    for shape, (h, w) in (("rect", (3, 3)), ("cross", (3, 5)), ("ellipse", (5, 5)), ("ellipse", (7, 5)),
                          ("rect", (1, 4)), ("rect", (4, 2))):
        morph_case(op, "%s_u8_%s_%dx%d" % (op, shape, h, w), img_u8, se(shape, h, w))
    for border in ("replicate", "reflect", "reflect_101"):
        morph_case(op, "%s_u8_ellipse_%s" % (op, border), img_u8, se("ellipse", 5, 5), border=border)
    morph_case(op, op + "_u8_constant_value", img_u8, se("rect", 3, 3), value=7)
    morph_case(op, op + "_f32_batched", img_f32, se("cross", 3, 3))
    morph_case(op, op + "_f32_border_value", img_f32, se("rect", 5, 3), value=0.5)
    morph_case(op, op + "_binary", img_bin, se("ellipse", 3, 3))
    morph_case(op, op + "_anchor", img_u8, np.array([[1, 0, 0], [1, 1, 0]], np.uint8), anchor=(0, 2))
    morph_case(op, op + "_iterations", img_u8, se("cross", 3, 3), iterations=3)
    morph_case(op, op + "_large_element", img_u8, se("ellipse", 11, 13))
    # wrap: OpenCV's morphology refuses BORDER_WRAP; scipy's grey morphology with mode="wrap"
    fp = se("ellipse", 5, 5).astype(bool)
    sref = (ndi.grey_erosion if op == "erode" else ndi.grey_dilation)(img_u8, footprint=fp, mode="wrap")
    add(case(op, lambda *_: t(sref), [t(img_u8), t(fp)], {"border": "wrap"}, op + "_u8_wrap_scipy"))
# binary morphology on bool images: scipy.ndimage.binary_erosion / binary_dilation (border 0 for
# dilation, 1 for erosion: the identity, like OpenCV's default)
bimg = rs.rand(10, 12) > 0.5
fp = se("cross", 3, 3).astype(bool)
add(case("erode", lambda *_: t(ndi.binary_erosion(bimg, fp, border_value=1)), [t(bimg), t(fp)],
         {"border": "constant"}, "erode_bool_scipy"))
add(case("dilate", lambda *_: t(ndi.binary_dilation(bimg, fp, border_value=0)), [t(bimg), t(fp)],
         {"border": "constant"}, "dilate_bool_scipy"))
add(error("erode", [t(img_u8[0]), t(fp)], "ShapeError", {}, "erode_1d"))
add(error("dilate", [t(img_u8), t(np.ones((3,), bool))], "ShapeError", {}, "dilate_1d_element"))
add(error("erode", [t(img_u8), t(fp)], "ValueError", {"anchor": [3, 0]}, "erode_anchor_outside"))
add(error("dilate", [t(img_u8), t(fp)], "ValueError", {"border": "circular"}, "dilate_bad_border"))

for shape in SHAPES:
    for (h, w) in ((1, 1), (3, 3), (4, 6), (5, 9), (9, 5), (2, 7), (15, 15)):
        k = se(shape, h, w)
        func_cases.append(case("structuring_element", lambda k=k: t(k.astype(bool)), [],
                               {"shape": shape, "size": [h, w]}, "se_%s_%dx%d" % (shape, h, w)))
k = cv2.getStructuringElement(cv2.MORPH_CROSS, (5, 4), (1, 3))
func_cases.append(case("structuring_element", lambda: t(k.astype(bool)), [],
                       {"shape": "cross", "size": [4, 5], "anchor": [3, 1]}, "se_cross_anchor"))
for mop, code in MOPS.items():
    for border in ("constant", "reflect_101"):
        ref = cv2.morphologyEx(img_u8, code, se("ellipse", 3, 5), borderType=BORDERS[border])
        func_cases.append(case("morphology", lambda *_, ref=ref: t(ref), [t(img_u8), t(se("ellipse", 3, 5).astype(bool))],
                               {"op": mop, "border": border}, "morphology_%s_%s" % (mop, border)))
    ref = cv2.morphologyEx(img_f32[0, 0], code, se("rect", 3, 3), iterations=2)
    func_cases.append(case("morphology", lambda *_, ref=ref: t(ref), [t(img_f32[0, 0]), t(se("rect", 3, 3).astype(bool))],
                           {"op": mop, "iterations": 2}, "morphology_%s_f32_iter2" % mop))
bref = ndi.binary_opening(bimg, fp)
func_cases.append(case("morphology", lambda *_: t(bref), [t(bimg), t(fp)], {"op": "open", "border_value": 0},
                       "morphology_open_bool_scipy"))  # scipy: the border is background


# ---------------------------------------------------------------- connected components
def cc_ref(img, conn):
    algo = cv2.CCL_WU if conn == 8 else cv2.CCL_SAUF
    n, lab, stats, cent = cv2.connectedComponentsWithStatsWithAlgorithm(img.astype(np.uint8), conn, cv2.CV_32S, algo)
    st = ndi.generate_binary_structure(2, 2 if conn == 8 else 1)
    slab, sn = ndi.label(img, structure=st)
    assert sn == n - 1 and (slab == lab).all(), "OpenCV and scipy number components differently"
    sk = skimage.measure.label(img, connectivity=2 if conn == 8 else 1)
    assert (sk == lab).all(), "skimage numbers components differently"
    stats = stats.astype(np.int64)
    if stats[0, 4] == 0:  # no background pixel: ember's row is zeros (OpenCV's is its sentinels)
        stats[0, :] = 0
    return lab, stats, cent


def cc_case(name, img, conn, dtype=None):
    lab, stats, cent = cc_ref(img, conn)
    x = t(img) if dtype is None else t(img).to(dtype)
    add(case("connected_components", lambda *_: (t(lab), t(stats), t(cent)), [x], {"connectivity": conn},
             name, 0, 1e-12))


for conn in (4, 8):
    cc_case("cc_noise_%d" % conn, (rs.rand(16, 20) > 0.55).astype(np.uint8), conn)
    cc_case("cc_spiral_%d" % conn, spiral(24), conn)
    cc_case("cc_checker1_%d" % conn, checker(8, 9, 1), conn)
    cc_case("cc_checker2_%d" % conn, checker(10, 10, 2), conn)
    cc_case("cc_all_zero_%d" % conn, np.zeros((4, 5), np.uint8), conn)
    cc_case("cc_all_one_%d" % conn, np.ones((4, 5), np.uint8), conn)
    cc_case("cc_row_%d" % conn, (rs.rand(1, 30) > 0.5).astype(np.uint8), conn)
    cc_case("cc_col_%d" % conn, (rs.rand(25, 1) > 0.5).astype(np.uint8), conn)
    cc_case("cc_u_shapes_%d" % conn, np.array([[1, 0, 1, 0, 1, 1, 1], [1, 0, 1, 0, 0, 0, 1],
                                                [1, 1, 1, 0, 1, 0, 1], [0, 0, 0, 0, 1, 1, 1],
                                                [1, 0, 0, 1, 0, 0, 0]], np.uint8), conn)
cc_case("cc_float_input", (rs.rand(9, 9) > 0.5).astype(np.uint8), 8, torch.float32)
cc_case("cc_bool_input", (rs.rand(9, 9) > 0.5).astype(np.uint8), 4, torch.bool)
add(error("connected_components", [torch.zeros(2, 3, 4)], "ShapeError", {"connectivity": 8}, "cc_3d"))
add(error("connected_components", [torch.zeros(3, 4)], "ValueError", {"connectivity": 6}, "cc_connectivity"))


# ---------------------------------------------------------------- 2048x2048 summaries
def crc(a):
    return zlib.crc32(np.ascontiguousarray(a).tobytes()) & 0xffffffff


large = []
N = 2048
images = large_images(N)
gray = images.pop("gray")
for name, img in images.items():
    for conn in (4, 8):
        lab, stats, cent = cc_ref(img, conn)
        large.append({"kind": "components", "image": name, "connectivity": conn, "count": int(stats.shape[0] - 1),
                      "labels_crc32": crc(lab.astype("<i4")), "stats_crc32": crc(stats.astype("<i8")),
                      "centroid_sum": float(np.nansum(cent)), "max_area": int(stats[1:, 4].max(initial=0))})
for op, shape, (h, w), border in (("erode", "ellipse", (7, 7), "constant"), ("dilate", "cross", (5, 5), "reflect_101"),
                                  ("dilate", "rect", (9, 9), "replicate"), ("erode", "rect", (3, 15), "reflect")):
    f = cv2.erode if op == "erode" else cv2.dilate
    out = f(gray, se(shape, h, w), borderType=BORDERS[border])
    large.append({"kind": op, "image": "gray", "shape": shape, "size": [h, w], "border": border, "crc32": crc(out)})


NB = 20000
hb, hs, hc = hashed_boxes(NB, 9)
tb, ts, tc = torch.from_numpy(hb), torch.from_numpy(hs), torch.from_numpy(hc)
keep = tvo.nms(tb, ts, 0.5).numpy()
large.append({"kind": "nms", "boxes": NB, "seed": 9, "iou_threshold": 0.5, "count": int(keep.size),
              "keep_crc32": crc(keep.astype("<i8"))})
# torchvision's batched_nms on this many boxes runs per class and re-sorts with an unstable sort:
# compare the kept set.
keep = np.sort(tvo.batched_nms(tb, ts, tc, 0.5).numpy())
large.append({"kind": "batched_nms", "boxes": NB, "seed": 9, "iou_threshold": 0.5, "count": int(keep.size),
              "sorted_keep_crc32": crc(keep.astype("<i8"))})

# roi_align's gradient in the input (ember: autodiff through its decomposition): d/dx of
# sum(roi_align(x) * w).
for name, aligned, ratio in (("roi_align_grad", False, 2), ("roi_align_grad_aligned_adaptive", True, -1)):
    def grad_of(x, r, w, aligned=aligned, ratio=ratio):
        xg = x.clone().requires_grad_()
        (tvo.roi_align(xg, r, (3, 2), 0.5, ratio, aligned) * w).sum().backward()
        return xg.grad
    gx, gr = q(rnd([2, 2, 9, 8])), rois_for(2, 4, 18, 16, spill=0.2)
    gw = q(rnd([4, 2, 3, 2]))
    func_cases.append(case("roi_align_grad", grad_of, [gx, gr, gw],
                           {"output_size": [3, 2], "spatial_scale": 0.5, "sampling_ratio": ratio,
                            "aligned": aligned}, name))

# roi_align over a [2, 64, 64, 64] feature map (stride 16) with 512 of the hashed boxes.
feat = torch.from_numpy(hashed_features((2, 64, 64, 64), 12))
rb = torch.from_numpy(hashed_boxes(512, 13)[0])
rois = torch.cat([(torch.arange(512) % 2).float().unsqueeze(1), rb], 1)
ra = tvo.roi_align(feat, rois, (7, 7), 1 / 16, 2, True).double()
large.append({"kind": "roi_align", "features": [2, 64, 64, 64], "seed": 12, "rois": 512, "roi_seed": 13,
              "output_size": [7, 7], "spatial_scale": 1 / 16, "sampling_ratio": 2, "aligned": True,
              "sum": float(ra.sum()), "abs_diff_sum": float((ra[:, :, 1:] - ra[:, :, :-1]).abs().sum()),
              "first": [float(v) for v in ra.reshape(-1)[:8]]})

write_sub("functions", func_cases)
write_sub("large", large, {"size": N})

write("vision_ops", cases)
write_sub("boxes", boxes_cases)
