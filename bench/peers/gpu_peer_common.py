"""What ember's GPU peer scripts (bench/peers/torch_graphs_peer.py, torch_amp_peer.py) share: the
timing loop (medians of CUDA-event timings, `reps` calls per sample), the printed row, and the
JSON file of every row that ember-bench reads ($OUT/<name>.json; docs/bench.md, "Peers")."""
import json
import os

import torch

results = {}


def bench(fn, warm=10, iters=100, reps=1):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps): fn()
        e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / reps)
    ts.sort(); return ts[len(ts) // 2]


def row(name, ms):
    results[name] = ms
    print(f"{name:40s} {ms:10.4f} ms", flush=True)


def write_json(name):
    """Writes every row so far to $OUT/<name>.json (default folder /tmp)."""
    with open(os.path.join(os.environ.get("OUT", "/tmp"), name + ".json"), "w") as f:
        json.dump(results, f, indent=1)


def graph_of(fn, warm=3):
    """fn captured as a CUDA graph after `warm` calls on a side stream (what torch.cuda.graph
    asks: allocations and lazy initialisation happen before the capture)."""
    side = torch.cuda.Stream(); side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warm): fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g
