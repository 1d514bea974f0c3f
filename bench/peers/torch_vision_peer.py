"""Peer row for bench/vision.cpp: torchvision's input pipeline over the same 256 JPEG files
(datasets.ImageFolder with PIL decoding, RandomResizedCrop(224), RandomHorizontalFlip, ToTensor,
Normalize) from a DataLoader with 2 worker processes (persistent, so their start-up is not
timed), batch 64, shuffled. One call is one pass over the files. The files are those
bench/vision.cpp wrote into $EMBER_BENCH_IMAGES (default /tmp/ember_bench_images); absent, they
are written here with PIL. Run with /usr/bin/python3; writes torch_cpu.json to $OUT or /tmp."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import bench, wanted, write  # noqa: E402  (sets the environment before torch loads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402
from torchvision import datasets, transforms as T  # noqa: E402

ROOT = os.environ.get("EMBER_BENCH_IMAGES") or "/tmp/ember_bench_images"


def ensure_files(n=256):
    g = np.random.RandomState(2026)
    for i in range(n):
        path = os.path.join(ROOT, "b" if i % 2 else "a", "img%d.jpg" % i)
        if os.path.exists(path):
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        w, h = g.randint(300, 501), g.randint(250, 451)
        y, x = np.mgrid[0:h, 0:w].astype(np.float32)
        ph, fr = g.rand(3) * 6, g.rand(3) * 0.08 + 0.01
        img = np.stack([127.5 + 90 * np.sin(x * fr[c] + ph[c]) * np.cos(y * fr[c] * 0.7 - ph[c])
                        for c in range(3)], -1) + g.randn(h, w, 3) * 12
        Image.fromarray(img.clip(0, 255).astype(np.uint8)).save(path, quality=90)


if wanted("image_loader_b64_224"):
    ensure_files()
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    loader = torch.utils.data.DataLoader(datasets.ImageFolder(ROOT, tf), batch_size=64,
                                         shuffle=True, num_workers=2, persistent_workers=True)

    def epoch():
        for x, y in loader:
            pass

    bench("image_loader_b64_224", epoch, warm=1, iters=5)
write()
