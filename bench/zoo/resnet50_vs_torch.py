#!/usr/bin/python3
"""ResNet-50 batch-1 inference, ember (the zoo model, bench/zoo/resnet50.cpp) beside torchvision's
resnet50, in one run with the same thread count (THREADS, default 2): medians and the ratio
torch_ms / ember_ms (above 1: ember is faster).
Run: THREADS=2 /usr/bin/python3 bench/zoo/resnet50_vs_torch.py build/bench/ember_zoo_bench [rounds]
"""
import os
import re
import statistics
import subprocess
import sys
import time

threads = os.environ.get("THREADS", "2")
for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "EMBER_NUM_THREADS"):
    os.environ[k] = threads

import torch  # noqa: E402
import torchvision  # noqa: E402


def torch_ms(rounds, warmup=3):
    torch.set_num_threads(int(threads))
    net = torchvision.models.resnet50().eval()
    x = torch.randn(1, 3, 224, 224)
    times = []
    with torch.no_grad():
        for i in range(warmup + rounds):
            t0 = time.perf_counter()
            net(x)
            if i >= warmup:
                times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    binary = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    out = subprocess.run([binary, "cpu", str(rounds)], capture_output=True, text=True, check=True)
    ember = float(re.search(r"median ([0-9.]+) ms", out.stdout).group(1))
    t = torch_ms(rounds)
    print(f"resnet50 batch 1, {threads} threads: ember cpu {ember:.2f} ms, torch {t:.2f} ms, "
          f"ratio torch/ember {t / ember:.2f}")


if __name__ == "__main__":
    main()
