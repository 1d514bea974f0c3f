"""Peer rows for the FFT: torch.fft.rfft of 2^20 float64 samples and of the prime length
1,000,003 (pocketfft: Bluestein there). Run by `ember-bench fft --peer fft_peer` (docs/linalg.md,
"FFT")."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import bench, write  # noqa: E402  (sets the environment before torch loads)

import torch  # noqa: E402

for n in (1 << 20, 1000003):
    x = torch.randn(n, dtype=torch.float64)
    bench(f"rfft_f64_{n}", lambda: torch.fft.rfft(x), warm=2, iters=7)
write()
