"""Golden cases for ember::fft (fft, ifft, rfft, irfft): lengths of every kind (powers of two,
mixed radices, primes above the direct-DFT size that take Bluestein's path), trimming and
zero-padding to n, dims, the three norms, and gradients.

Run with /usr/bin/python3 (torch 1.13). Writes tests/data/fft/fft.json, read by
tests/ops/fft_test.cpp (complex data as interleaved (real, imaginary) pairs).
"""
import json
import os
import zlib

import torch

from common import DATA, grad_case, tensor_spec

C64, C128 = torch.complex64, torch.complex128


def rnd(shape, dtype):
    g = torch.Generator().manual_seed(zlib.crc32(repr((tuple(shape), str(dtype))).encode()))
    if dtype in (C64, C128):
        part = torch.float32 if dtype == C64 else torch.float64
        re = torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1
        im = torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1
        return torch.complex(re.to(part), im.to(part))
    return (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)


cases = []


def add(fn, x, n=None, dim=-1, norm="backward"):
    f = getattr(torch.fft, fn)
    y = f(x, n=n, dim=dim, norm=norm)
    cases.append({"fn": fn, "input": tensor_spec(x), "n": n, "dim": dim, "norm": norm,
                  "output": tensor_spec(y)})


for length in [1, 2, 3, 4, 5, 7, 8, 12, 16, 30, 64, 67, 97, 128, 210, 257, 360]:
    add("fft", rnd([length], C128))
    add("ifft", rnd([length], C128))
for length in [6, 67, 256]:
    add("fft", rnd([length], C64))
    add("fft", rnd([length], torch.float32))
add("fft", rnd([3, 10], C128), dim=0)
add("fft", rnd([3, 10], C128), dim=1, norm="ortho")
add("ifft", rnd([4, 6], C128), dim=-1, norm="forward")
add("fft", rnd([2, 5, 3], C128), n=8, dim=1)      # zero-padded
add("fft", rnd([2, 9], C128), n=4)                # trimmed
add("ifft", rnd([7], C128), n=11, norm="ortho")
for length in [1, 2, 5, 8, 15, 97, 100]:
    add("rfft", rnd([length], torch.float64))
add("rfft", rnd([4, 6], torch.float32), dim=0)
add("rfft", rnd([9], torch.float64), n=12, norm="ortho")
for m, n in [(5, None), (5, 9), (1, 1), (2, 3), (9, 16), (50, None), (34, 67)]:
    add("irfft", rnd([m], C128), n=n)
add("irfft", rnd([3, 4], C128), dim=0, norm="forward")
add("irfft", rnd([6], C64), norm="ortho")


F = torch.fft
grads = [
    grad_case("fft_abs", lambda z: F.fft(z).abs().sum() + F.ifft(z, norm="ortho").real.sum(),
              [rnd([12], C128)]),
    grad_case("fft_bluestein", lambda z: (F.fft(z, n=70).abs() ** 2).sum(), [rnd([67], C128)]),
    grad_case("rfft_abs", lambda x: F.rfft(x).abs().sum(), [rnd([10], torch.float64)]),
    grad_case("irfft_square", lambda z: (F.irfft(z, n=9) ** 2).sum() + F.irfft(z).sum(),
              [rnd([5], C128)]),
]

os.makedirs(os.path.join(DATA, "fft"), exist_ok=True)
path = os.path.join(DATA, "fft", "fft.json")
with open(path, "w") as f:
    json.dump({"generator": "tests/gen/gen_fft.py", "torch": torch.__version__, "cases": cases,
               "grads": grads}, f, separators=(",", ":"))
print("fft: %d cases, %d gradients -> %s" % (len(cases), len(grads), path))
