"""Goldens for ember/vision (image I/O and transforms), from PIL and torchvision 0.14 (Debian's
python3-pil, python3-torchvision). Run with /usr/bin/python3 from anywhere; writes
tests/data/vision/images/* (small image files), tests/data/vision/images.json (PIL's pixels of
each file) and tests/data/vision/transforms.json (torchvision's outputs for fixed parameters)."""
import io
import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as NF
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode as IM
from torchvision.utils import make_grid
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "vision")
IMAGES = os.path.join(OUT, "images")


def spec(t):
    t = t.contiguous()
    dt = {torch.uint8: "uint8", torch.float32: "float32", torch.int64: "int64"}[t.dtype]
    data = t.flatten().tolist()
    if t.dtype == torch.float32:
        data = [float("%.7g" % v) for v in data]
    return {"dtype": dt, "shape": list(t.shape), "data": data}


def pattern(h, w, c, seed):
    g = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)), ((x + y) * 37) % 256,
                     (x * y * 11) % 256], -1)[..., :c]
    noise = g.randint(0, 40, size=(h, w, c))
    return ((base + noise) % 256).astype(np.uint8)


def images():
    os.makedirs(IMAGES, exist_ok=True)
    cases = []

    def save(name, img, fmt, **kw):
        path = os.path.join(IMAGES, name)
        img.save(path, fmt, **kw)
        with Image.open(path) as im:
            im.seek(0)
            entry = {"file": name, "format": fmt, "width": im.width, "height": im.height,
                     "modes": {}}
            for mode, pil in (("gray", "L"), ("rgb", "RGB"), ("rgba", "RGBA")):
                arr = np.asarray(im.convert(pil))
                if arr.ndim == 2:
                    arr = arr[..., None]
                entry["modes"][mode] = spec(torch.from_numpy(arr.copy()))
        cases.append(entry)

    rgb = pattern(9, 13, 3, 1)
    rgba = pattern(7, 10, 4, 2)
    gray = pattern(8, 11, 1, 3)[..., 0]
    save("rgb.png", Image.fromarray(rgb, "RGB"), "PNG")
    save("rgba.png", Image.fromarray(rgba, "RGBA"), "PNG")
    save("gray.png", Image.fromarray(gray, "L"), "PNG")
    save("palette.png", Image.fromarray(rgb, "RGB").quantize(16), "PNG")
    save("rgb.jpg", Image.fromarray(pattern(16, 24, 3, 4), "RGB"), "JPEG", quality=92)
    save("gray.jpg", Image.fromarray(pattern(12, 16, 1, 5)[..., 0], "L"), "JPEG", quality=92)
    save("rgb.bmp", Image.fromarray(rgb, "RGB"), "BMP")
    save("progressive.jpg", Image.fromarray(pattern(20, 30, 3, 8), "RGB"), "JPEG", quality=90,
         progressive=True)
    save("gray_alpha.png", Image.fromarray(pattern(6, 7, 2, 9), "LA"), "PNG")
    # 16 bits per sample: stb_image keeps the high byte (PIL's own conversion clips instead, so
    # the expected pixels are the high bytes, written here).
    g16 = (pattern(5, 6, 1, 10)[..., 0].astype(np.uint16) * 257 + 3).astype(np.uint16)
    Image.fromarray(g16, "I;16").save(os.path.join(IMAGES, "gray16.png"), "PNG")
    hi = torch.from_numpy((g16 >> 8).astype(np.uint8)[..., None].copy())
    cases.append({"file": "gray16.png", "format": "PNG", "width": 6, "height": 5,
                  "modes": {"gray": spec(hi)}})
    frames = [Image.fromarray(pattern(6, 9, 3, s), "RGB").quantize(8) for s in (6, 7)]
    frames[0].save(os.path.join(IMAGES, "anim.gif"), "GIF", save_all=True,
                   append_images=frames[1:], duration=100, loop=0)
    with Image.open(os.path.join(IMAGES, "anim.gif")) as im:
        entry = {"file": "anim.gif", "format": "GIF", "width": im.width, "height": im.height,
                 "modes": {}}
        for mode, pil in (("gray", "L"), ("rgb", "RGB"), ("rgba", "RGBA")):
            arr = np.asarray(im.convert(pil))
            entry["modes"][mode] = spec(torch.from_numpy((arr[..., None] if arr.ndim == 2 else arr).copy()))
        cases.append(entry)
    with open(os.path.join(OUT, "images.json"), "w") as f:
        json.dump(cases, f)


def transforms():
    torch.manual_seed(0)
    xf = torch.rand(2, 3, 10, 12)
    xu = (torch.rand(2, 3, 10, 12) * 256).floor().clamp(0, 255).to(torch.uint8)
    cases = []
    inputs = {}

    def ref(x):  # inputs are stored once, by name
        for k, v in inputs.items():
            if v[0] is x:
                return k
        inputs["x%d" % len(inputs)] = (x, spec(x))
        return "x%d" % (len(inputs) - 1)

    def add(op, x, attrs, out):
        cases.append({"op": op, "attrs": attrs, "input": ref(x), "output": spec(out)})

    modes = {"nearest": IM.NEAREST, "bilinear": IM.BILINEAR, "bicubic": IM.BICUBIC}
    for x in (xf, xu):
        for size in ([7, 9], [17, 23], [5, 30]):
            for mode, im in modes.items():
                for aa in (False, True):
                    if mode == "nearest" and aa:
                        continue
                    add("resize", x, {"size": size, "mode": mode, "antialias": aa},
                        F.resize(x, size, im, antialias=aa))
        for size in ([6, 8], [7, 7], [13, 15]):
            add("center_crop", x, {"size": size}, F.center_crop(x, size))
        for box in ([1, 2, 5, 6], [-2, -1, 6, 16]):
            add("crop", x, {"box": box}, F.crop(x, *box))
        add("hflip", x, {}, F.hflip(x))
        add("vflip", x, {}, F.vflip(x))
        for mode in ("constant", "edge", "reflect", "symmetric"):
            add("pad", x, {"padding": [1, 2, 3, 4], "mode": mode, "fill": 3},
                F.pad(x, [1, 2, 3, 4], fill=3, padding_mode=mode))
        for angle, mode, expand, fill, center in ((30, "nearest", False, None, None),
                                                  (-45, "bilinear", False, None, None),
                                                  (90, "bilinear", True, None, None),
                                                  (20, "bilinear", False, [0.5, 0.2, 0.9], [3, 4]),
                                                  (70, "nearest", True, [1.0, 2.0, 3.0], None)):
            f = None if fill is None else ([v * 255 for v in fill] if x.dtype == torch.uint8 else fill)
            add("rotate", x, {"angle": angle, "mode": mode, "expand": expand, "fill": f,
                              "center": center},
                F.rotate(x, angle, modes[mode], expand=expand, center=center, fill=f))
        for angle, tr, sc, sh, mode in ((15, [2, -1], 1.2, [10.0, 5.0], "bilinear"),
                                        (-30, [0, 3], 0.8, [0.0, 0.0], "nearest"),
                                        (0, [1, 1], 1.0, [25.0, 0.0], "bilinear")):
            add("affine", x, {"angle": angle, "translate": tr, "scale": sc, "shear": sh,
                              "mode": mode},
                F.affine(x, angle, tr, sc, sh, modes[mode]))
        for f in (0.4, 1.7):
            add("brightness", x, {"factor": f}, F.adjust_brightness(x, f))
            add("contrast", x, {"factor": f}, F.adjust_contrast(x, f))
            add("saturation", x, {"factor": f}, F.adjust_saturation(x, f))
        for h in (-0.3, 0.12, 0.5):
            add("hue", x, {"factor": h}, F.adjust_hue(x, h))
        for n in (1, 3):
            add("grayscale", x, {"channels": n}, F.rgb_to_grayscale(x, n))
        for k, s in (([3, 5], [0.8, 1.5]), ([5, 5], [2.0, 2.0])):
            add("gaussian_blur", x, {"kernel": k, "sigma": s}, F.gaussian_blur(x, k, s))
        add("erase", x, {"box": [2, 3, 4, 5], "value": 7}, F.erase(x, 2, 3, 4, 5, torch.tensor(7).to(x.dtype)))
        add("grid", x, {"nrow": 1, "padding": 3, "pad_value": 2}, make_grid(x, nrow=1, padding=3, pad_value=2))
        xg = x[:, :1]
        add("grid", xg, {"nrow": 4, "padding": 1, "pad_value": 0}, make_grid(xg, nrow=4, padding=1))
    add("normalize", xf, {"mean": [0.5, 0.4, 0.3], "std": [0.2, 0.3, 0.25]},
        F.normalize(xf, [0.5, 0.4, 0.3], [0.2, 0.3, 0.25]))
    x5 = torch.rand(5, 3, 4, 6) * 3 - 1
    add("grid", x5, {"nrow": 2, "padding": 2, "pad_value": 0.5, "normalize": True},
        make_grid(x5, nrow=2, padding=2, pad_value=0.5, normalize=True))
    add("grid", x5, {"nrow": 3, "padding": 1, "pad_value": 0, "normalize": True, "scale_each": True,
                     "value_range": [-0.5, 1.5]},
        make_grid(x5, nrow=3, padding=1, normalize=True, scale_each=True, value_range=(-0.5, 1.5)))
    # grid_sample / affine_grid
    inp = torch.rand(2, 3, 5, 7)
    grid = torch.rand(2, 4, 6, 2) * 2.6 - 1.3
    for mode in ("bilinear", "nearest", "bicubic"):
        for pm in ("zeros", "border", "reflection"):
            for ac in (False, True):
                cases.append({"op": "grid_sample", "attrs": {"mode": mode, "padding_mode": pm,
                                                             "align_corners": ac},
                              "input": ref(inp), "grid": ref(grid),
                              "output": spec(NF.grid_sample(inp, grid, mode, pm, ac))})
    theta = torch.tensor([[[0.9, -0.3, 0.1], [0.2, 1.1, -0.2]], [[1.0, 0.0, 0.3], [0.0, 0.7, 0.0]]])
    for ac in (False, True):
        cases.append({"op": "affine_grid", "attrs": {"size": [2, 3, 5, 7], "align_corners": ac},
                      "input": ref(theta),
                      "output": spec(NF.affine_grid(theta, [2, 3, 5, 7], align_corners=ac))})
    # Inputs over 4096 pixels along a dim: ember gathers taps there instead of its blocked matmul.
    wide, tall = torch.rand(1, 1, 1, 4200), torch.rand(1, 1, 4200, 1)
    for x, size in ((wide, [1, 37]), (tall, [53, 1])):
        for mode in ("bilinear", "bicubic"):
            add("resize", x, {"size": size, "mode": mode, "antialias": True},
                F.resize(x, size, modes[mode], antialias=True))
    add("to_dtype", xf, {"dtype": "uint8"}, F.convert_image_dtype(xf, torch.uint8))
    add("to_dtype", xu, {"dtype": "float32"}, F.convert_image_dtype(xu, torch.float32))
    add("resize", xu, {"size": [7], "mode": "bilinear", "antialias": True, "max_size": 8},
        F.resize(xu, [7], IM.BILINEAR, max_size=8, antialias=True))
    add("affine", xf, {"angle": 25, "translate": [1, 0], "scale": 1.1, "shear": [0.0, 8.0],
                       "mode": "nearest", "fill": [0.3, 0.6, 0.9], "center": [2, 7]},
        F.affine(xf, 25, [1, 0], 1.1, [0.0, 8.0], IM.NEAREST, fill=[0.3, 0.6, 0.9], center=[2, 7]))
    with open(os.path.join(OUT, "transforms.json"), "w") as f:
        json.dump({"inputs": {k: v[1] for k, v in inputs.items()}, "cases": cases}, f)


if __name__ == "__main__":
    images()
    transforms()
