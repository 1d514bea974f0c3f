"""The formula-built test images of the vision goldens (tests/gen/gen_vision_ops.py), rebuilt bit
for bit by tests/vision/large_test.cpp: square spirals, checkerboards and hashed noise."""
import numpy as np


def spiral(n, step=2):
    """A square spiral of 1-pixel arms `step` apart, drawn from the centre outwards."""
    img = np.zeros((n, n), np.uint8)
    x = y = n // 2
    d, length = 0, 1
    dirs = ((1, 0), (0, 1), (-1, 0), (0, -1))
    while length * step <= 2 * n + 4:
        for _ in range(2):
            dx, dy = dirs[d % 4]
            for _ in range(length * step):
                if 0 <= x < n and 0 <= y < n:
                    img[y, x] = 1
                x += dx
                y += dy
            d += 1
        length += 1
    return img


def hashed(h, w, seed, num=1, den=2):
    """Per-pixel hash noise that tests/vision rebuilds bit for bit: 1 where hash % den < num."""
    return (hash_u32(h, w, seed) % den < num).astype(np.uint8)


def hash_u32(h, w, seed):
    i = np.arange(h * w, dtype=np.uint64)
    v = (i * np.uint64(2654435761) + np.uint64(seed) * np.uint64(40503)) & np.uint64(0xffffffff)
    v ^= v >> np.uint64(15)
    v = (v * np.uint64(2246822519)) & np.uint64(0xffffffff)
    v ^= v >> np.uint64(13)
    return v.reshape(h, w)


def checker(h, w, block):
    y, x = np.mgrid[0:h, 0:w]
    return (((y // block) + (x // block)) % 2 == 0).astype(np.uint8)


def large_images(n):
    """The images of tests/data/vision/large.json, by name."""
    images = {"spiral": spiral(n), "spiral4": spiral(n, 4), "checker1": checker(n, n, 1),
              "checker3": checker(n, n, 3), "noise50": hashed(n, n, 1), "noise40": hashed(n, n, 2, 2, 5)}
    images["spiral_noise"] = images["spiral"] ^ hashed(n, n, 3, 1, 64)
    images["gray"] = (hash_u32(n, n, 4) & np.uint64(255)).astype(np.uint8)
    return images


def hashed_boxes(n, seed):
    """n xyxy float32 boxes with integer corners in [0, 1128) and scores in 1/4096 steps (ties are
    common), from the same hash: tests/vision/large_test.cpp builds the same ones."""
    def col(k):
        return hash_u32(1, n, seed + k).reshape(-1)
    x1, y1 = col(0) % 1000, col(1) % 1000
    w, h = 8 + col(2) % 120, 8 + col(3) % 120
    boxes = np.stack([x1, y1, x1 + w, y1 + h], 1).astype(np.float32)
    scores = ((col(4) % 4096).astype(np.float32) / 4096).astype(np.float32)
    classes = (col(5) % 10).astype(np.int64)
    return boxes, scores, classes


def hashed_features(shape, seed):
    """A float32 feature map of values k / 1024, k in [0, 1024), from the same hash."""
    n = int(np.prod(shape))
    return ((hash_u32(1, n, seed).reshape(-1) % 1024).astype(np.float32) / 1024).reshape(shape)
