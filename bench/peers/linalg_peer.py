"""Peer rows for the linalg decompositions: torch.linalg.solve of a 1024 x 1024 system with 1024
right-hand sides and the SVD of a 512 x 512 matrix (full_matrices=False), both float64. Debian's
torch runs them through the system LAPACK (OpenBLAS's), the library ember's cpu backend calls.
Run by `ember-bench linalg --device cpu` (docs/bench.md)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import bench, write  # noqa: E402  (sets the environment before torch loads)

import torch  # noqa: E402

n = 1024
a = torch.randn(n, n, dtype=torch.float64) + n * torch.eye(n, dtype=torch.float64)
b = torch.randn(n, n, dtype=torch.float64)
bench("linalg_solve_f64_1024", lambda: torch.linalg.solve(a, b), warm=2, iters=7)
m = torch.randn(512, 512, dtype=torch.float64)
bench("linalg_svd_f64_512", lambda: torch.linalg.svd(m, full_matrices=False), warm=2, iters=7)
write()
