#!/usr/bin/python3
"""PyTorch reference for the Fashion-MNIST example: the same CNN (two conv blocks + two linear
layers), the same Adam settings, the same data (Debian's dataset-fashion-mnist). Prints the test
accuracy and the median epoch time, so ember's example can be compared side by side.
Usage: THREADS=2 /usr/bin/python3 examples/fashion_mnist/reference.py [--epochs N] [--seed S]"""
import argparse, gzip, os, statistics, struct, time

# OpenBLAS 0.3.21 mistakes some AVX-512 CPUs for older ones; its SkylakeX kernels die with SIGILL
# on a CPU without AVX-512, where its own choice is kept.
with open("/proc/cpuinfo") as _f:
    if "avx512f" in next((l.split(":", 1)[1].split() for l in _f if l.startswith("flags")), []):
        os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

ROOT = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(split):
    prefix = "train" if split == "train" else "t10k"
    x = read_idx(os.path.join(ROOT, f"{prefix}-images-idx3-ubyte.gz")).astype(np.float32) / 255.0
    y = read_idx(os.path.join(ROOT, f"{prefix}-labels-idx1-ubyte.gz")).astype(np.int64)
    return torch.from_numpy(x).unsqueeze(1), torch.from_numpy(y)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("THREADS", "2")))
    torch.manual_seed(args.seed)
    xtr, ytr = load("train")
    xte, yte = load("test")
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=args.lr)
    times = []
    for epoch in range(args.epochs):
        t0 = time.perf_counter()
        net.train()
        perm = torch.randperm(len(xtr))
        for i in range(0, len(xtr) - args.batch + 1, args.batch):
            idx = perm[i:i + args.batch]
            opt.zero_grad()
            F.cross_entropy(net(xtr[idx]), ytr[idx]).backward()
            opt.step()
        times.append(time.perf_counter() - t0)
        net.eval()
        with torch.no_grad():
            correct = sum((net(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item()
                          for i in range(0, len(xte), 1000))
        print(f"epoch {epoch + 1}: {times[-1]:.1f} s, test accuracy {100.0 * correct / len(xte):.2f}%",
              flush=True)
    print(f"median epoch time {statistics.median(times):.1f} s")


if __name__ == "__main__":
    main()
