"""Peer rows for the FFT: torch.fft.rfft of 2^20 float64 samples and of the prime length
1,000,003 (pocketfft: Bluestein there), and gradients through rfft (2^16) and a batch of
complex ffts of the prime length 4099. Run by `ember-bench fft --peer fft_peer` (docs/linalg.md,
"FFT")."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import bench, write  # noqa: E402  (sets the environment before torch loads)

import torch  # noqa: E402

for n in (1 << 20, 1000003):
    x = torch.randn(n, dtype=torch.float64)
    bench(f"rfft_f64_{n}", lambda: torch.fft.rfft(x), warm=2, iters=7)


def grad_of(x, f):
    def run():
        x.grad = None
        f(x).abs().sum().backward()
        return x.grad
    return run


xg = torch.randn(1 << 16, dtype=torch.float64, requires_grad=True)
bench("rfft_grad_f64_65536", grad_of(xg, torch.fft.rfft), warm=2, iters=7)
zg = torch.randn(64, 4099, dtype=torch.float64).to(torch.complex128).requires_grad_()
bench("fft_grad_c128_4099", grad_of(zg, torch.fft.fft), warm=2, iters=7)
write()
