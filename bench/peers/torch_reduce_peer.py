"""Peer rows for bench/reduce.cpp: the same reductions, scans and sorts in PyTorch (CPU,
$THREADS threads) on the same sizes, 16M floats unless named otherwise. Run with /usr/bin/python3
(ember-bench runs it for the reduce suite); writes torch_cpu.json to $OUT or /tmp."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import bench, wanted, write  # noqa: E402  (sets the environment before torch loads)

import torch  # noqa: E402

v = torch.randn(1 << 24) if any(wanted(r) for r in ("amax_16M", "var_16M", "norm_16M", "argmax_16M")) else None
m = torch.randn(4096, 4096)
s1m = torch.randn(1 << 20)
rows = torch.randn(4096, 256)
with torch.no_grad():
    if v is not None:
        bench("amax_16M", lambda: torch.amax(v))
        bench("var_16M", lambda: torch.var(v))
        bench("norm_16M", lambda: torch.linalg.vector_norm(v))
        bench("argmax_16M", lambda: torch.argmax(v))
    bench("sum_rows_4096x4096", lambda: m.sum(1))
    bench("sum_cols_4096x4096", lambda: m.sum(0))
    bench("var_rows_4096x4096", lambda: m.var(1))
    bench("logsumexp_rows_4096x4096", lambda: torch.logsumexp(m, 1))
    bench("max_dim1_4096x4096", lambda: torch.max(m, 1))
    bench("max_dim0_4096x4096", lambda: torch.max(m, 0))
    bench("cumsum_dim1_4096x4096", lambda: torch.cumsum(m, 1))
    bench("cumsum_dim0_4096x4096", lambda: torch.cumsum(m, 0))
    bench("sort_1M", lambda: torch.sort(s1m), warm=1, iters=5)
    bench("sort_rows_4096x256", lambda: torch.sort(rows, 1), warm=1, iters=5)
    bench("topk10_1M", lambda: torch.topk(s1m, 10))
    bench("median_1M", lambda: torch.median(s1m))
write()
