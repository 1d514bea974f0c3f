"""What ember's own PyTorch peer scripts share: environment (2 threads, OpenBLAS at its best,
passive OpenMP waits), the timing loop and the JSON that bench/compare.py reads.
OpenMP workers wait passively: torch's OpenMP pool and OpenBLAS's pthread pool share the same
cores, and with GNU OpenMP's default spin-wait an idle OpenMP worker keeps a core from OpenBLAS's
worker, so linear-with-bias and relu took 8-12 ms instead of 0.6 ms and 0.01 ms here."""
import os
os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import json, statistics, time

import torch

torch.set_num_threads(int(os.environ.get("THREADS", "2")))
torch.manual_seed(0)
res = {}


def bench(name, fn, warm=3, iters=10):
    """Median milliseconds of fn() over iters calls after warm ones; printed and recorded."""
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    res[name] = statistics.median(ts)
    print(f"{name:36s} {res[name]:10.3f} ms", flush=True)


def write():
    """Writes the rows to $OUT/torch_cpu.json (or /tmp), where compare.py looks."""
    out = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out, "torch_cpu.json"), "w") as f:
        json.dump(res, f, indent=1)
