"""OpenCV's (and torchvision's nms's) time for the 2048x2048 cases of tests/data/vision/large.json (the images that
tests/gen/gen_vision_ops.py and tests/vision/large_test.cpp build from one formula), for the speed
table of docs/vision_ops.md. Run with /usr/bin/python3 (Debian python3-opencv); prints the median
of 5 runs per case, on one thread (cv2.setNumThreads(1)) and on all."""
import os
import statistics
import sys
import time

import cv2

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "gen"))
from vision_images import hashed_boxes, large_images  # noqa: E402

N = 2048
IMAGES = large_images(N)
SHAPES = {"rect": cv2.MORPH_RECT, "cross": cv2.MORPH_CROSS, "ellipse": cv2.MORPH_ELLIPSE}
BORDERS = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE,
           "reflect_101": cv2.BORDER_REFLECT_101}


def median_ms(fn, reps=5):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


for threads in (1, 0):
    cv2.setNumThreads(threads if threads else os.cpu_count())
    tag = "1 thread" if threads else "%d threads" % os.cpu_count()
    for name in ("spiral", "checker1", "noise50"):
        img = IMAGES[name]
        for conn in (4, 8):
            algo = cv2.CCL_WU if conn == 8 else cv2.CCL_SAUF
            ms = median_ms(lambda: cv2.connectedComponentsWithStatsWithAlgorithm(img, conn, cv2.CV_32S, algo))
            print("opencv %s: connected_components %d on %s: %.1f ms" % (tag, conn, name, ms))
    for op, shape, (h, w), border in (("erode", "ellipse", (7, 7), "constant"),
                                      ("dilate", "cross", (5, 5), "reflect_101"),
                                      ("dilate", "rect", (9, 9), "replicate")):
        f = cv2.erode if op == "erode" else cv2.dilate
        k = cv2.getStructuringElement(SHAPES[shape], (w, h))
        ms = median_ms(lambda: f(IMAGES["gray"], k, borderType=BORDERS[border]))
        print("opencv %s: %s %s %dx%d %s: %.1f ms" % (tag, op, shape, h, w, border, ms))

import torch  # noqa: E402
import torchvision.ops  # noqa: E402

torch.set_num_threads(1)
b, s, c = (torch.from_numpy(a) for a in hashed_boxes(20000, 9))
print("torchvision 1 thread: nms of 20000 boxes: %.1f ms" % median_ms(lambda: torchvision.ops.nms(b, s, 0.5), 3))
print("torchvision 1 thread: batched_nms of 20000 boxes: %.1f ms" %
      median_ms(lambda: torchvision.ops.batched_nms(b, s, c, 0.5), 3))

from vision_images import hashed_features  # noqa: E402

feat = torch.from_numpy(hashed_features((2, 64, 64, 64), 12))
rois = torch.cat([(torch.arange(512) % 2).float().unsqueeze(1), torch.from_numpy(hashed_boxes(512, 13)[0])], 1)
print("torchvision 1 thread: roi_align of 512 rois on [2, 64, 64, 64]: %.1f ms" %
      median_ms(lambda: torchvision.ops.roi_align(feat, rois, (7, 7), 1 / 16, 2, True)))
