"""Golden cases for ember::fft (fft, ifft, rfft, irfft, hfft, ihfft): lengths of every kind (powers
of two, mixed radices, primes above the direct-DFT size that take Bluestein's path, lengths past
the six-step threshold in tests/ops/fft_test.cpp), trimming and zero-padding to n, dims, the three norms, and gradients;
the n-D transforms with s and dims, fftfreq/rfftfreq, fftshift/ifftshift, the windows, and
stft/istft.

Run with /usr/bin/python3 (torch 1.13). Writes tests/data/fft/fft.json, read by
tests/ops/fft_test.cpp (complex data as interleaved (real, imaginary) pairs).
"""
import json
import os

import torch

import common
from common import DATA, grad_case, tensor_spec

C64, C128 = torch.complex64, torch.complex128


def rnd(shape, dtype):
    return common.rnd(shape, dtype, -1.0, 1.0)


cases = []


def out_spec(t):
    return tensor_spec(t.resolve_conj() if t.is_complex() else t)


def add(fn, x, n=None, dim=-1, norm="backward"):
    f = getattr(torch.fft, fn)
    y = f(x, n=n, dim=dim, norm=norm)
    cases.append({"fn": fn, "input": tensor_spec(x), "n": n, "dim": dim, "norm": norm,
                  "output": out_spec(y)})


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
for m, n in [(5, None), (5, 9), (9, 16), (34, 67)]:
    add("hfft", rnd([m], C128), n=n)
add("hfft", rnd([3, 4], C128), dim=0, norm="ortho")
for length in [1, 8, 15, 97]:
    add("ihfft", rnd([length], torch.float64))
add("ihfft", rnd([4, 6], torch.float32), dim=0, norm="forward")

nd = []


def add_nd(fn, x, s=None, dim=None, norm="backward"):
    kw = {"norm": norm}
    if s is not None:
        kw["s"] = s
    if dim is not None:
        kw["dim"] = dim
    y = getattr(torch.fft, fn)(x, **kw)
    nd.append({"fn": fn, "input": tensor_spec(x), "s": s, "dim": dim, "norm": norm,
               "output": out_spec(y)})


add_nd("fft2", rnd([3, 4, 5], C128))
add_nd("ifft2", rnd([4, 6], C128), s=[5, 3], norm="ortho")
add_nd("fftn", rnd([2, 3, 4], C128))
add_nd("fftn", rnd([2, 3, 4], C128), s=[6, -1], dim=[0, 2], norm="forward")
add_nd("ifftn", rnd([3, 5], C128), s=[4])
add_nd("rfft2", rnd([4, 6], torch.float64))
add_nd("rfftn", rnd([2, 5, 6], torch.float64), dim=[0, 1])
add_nd("rfftn", rnd([3, 4], torch.float32), s=[5, 7], norm="ortho")
add_nd("irfft2", rnd([4, 4], C128))
add_nd("irfftn", rnd([3, 4, 5], C128), s=[3, 6], dim=[0, 2])
add_nd("irfftn", rnd([2, 3], C64), norm="forward")
add_nd("hfft2", rnd([3, 4], C128))
add_nd("hfft2", rnd([4, 5], C128), s=[3, 6], norm="ortho")
add_nd("hfftn", rnd([2, 3, 4], C128), dim=[0, 2], norm="forward")
add_nd("hfftn", rnd([3, 5], C64), s=[7])
add_nd("ihfft2", rnd([4, 6], torch.float64))
add_nd("ihfft2", rnd([3, 5], torch.float64), s=[4, 4], norm="forward")
add_nd("ihfftn", rnd([2, 3, 5], torch.float64), norm="ortho")
add_nd("ihfftn", rnd([6, 4], torch.float32), dim=[0])

misc = []


def add_misc(name, y, **args):
    misc.append({"fn": name, "args": args, "output": out_spec(y)})


for n, d in [(1, 1.0), (5, 1.0), (8, 0.1)]:
    add_misc("fftfreq", torch.fft.fftfreq(n, d, dtype=torch.float64), n=n, d=d)
    add_misc("rfftfreq", torch.fft.rfftfreq(n, d, dtype=torch.float64), n=n, d=d)
add_misc("fftfreq_f32", torch.fft.fftfreq(7), n=7, d=1.0)
sx = rnd([3, 5], torch.float64)
misc.append({"fn": "fftshift", "input": tensor_spec(sx), "dim": None,
             "output": tensor_spec(torch.fft.fftshift(sx))})
misc.append({"fn": "fftshift", "input": tensor_spec(sx), "dim": [1],
             "output": tensor_spec(torch.fft.fftshift(sx, dim=1))})
misc.append({"fn": "ifftshift", "input": tensor_spec(sx), "dim": None,
             "output": tensor_spec(torch.fft.ifftshift(sx))})
for length in [0, 1, 2, 7, 16]:
    for periodic in [True, False]:
        kw = dict(dtype=torch.float64)
        add_misc("hann_window", torch.hann_window(length, periodic, **kw), n=length, periodic=periodic)
        add_misc("hamming_window", torch.hamming_window(length, periodic, **kw), n=length,
                 periodic=periodic)
        add_misc("blackman_window", torch.blackman_window(length, periodic, **kw), n=length,
                 periodic=periodic)
        add_misc("kaiser_window", torch.kaiser_window(length, periodic, 12.0, **kw), n=length,
                 periodic=periodic)
add_misc("kaiser_window_beta", torch.kaiser_window(9, False, 5.0, dtype=torch.float64), n=9,
         periodic=False)
add_misc("hamming_window_ab", torch.hamming_window(8, True, 0.5, 0.3, dtype=torch.float64), n=8,
         periodic=True)

stfts = []


def add_stft(x, n_fft, hop=None, win=None, window=None, center=True, normalized=False,
             onesided=None, length=None):
    kw = dict(hop_length=hop, win_length=win, window=window, center=center, normalized=normalized,
              onesided=onesided, return_complex=True)
    y = torch.stft(x, n_fft, **kw)
    kw["return_complex"] = False
    y_real = torch.stft(x, n_fft, **kw)  # torch 1.13's real form: view_as_real
    inv = torch.istft(y, n_fft, hop_length=hop, win_length=win, window=window, center=center,
                      normalized=normalized, onesided=onesided, length=length)
    stfts.append({"input": tensor_spec(x), "n_fft": n_fft, "hop": hop, "win": win,
                  "window": None if window is None else tensor_spec(window), "center": center,
                  "normalized": normalized, "onesided": onesided, "length": length,
                  "output": out_spec(y), "output_real": out_spec(y_real), "inverse": out_spec(inv)})


add_stft(rnd([40], torch.float64), 8, window=torch.hann_window(8, dtype=torch.float64))
add_stft(rnd([2, 33], torch.float64), 10, hop=3, win=6,
         window=torch.hamming_window(6, dtype=torch.float64), normalized=True, length=30)
add_stft(rnd([30], torch.float64), 6, hop=2, window=torch.hann_window(6, False, dtype=torch.float64) + 0.1,
         center=False, onesided=False)
add_stft(rnd([25], torch.float32), 8, hop=2, window=torch.hann_window(8))


F = torch.fft
grads = [
    grad_case("fft_abs", lambda z: F.fft(z).abs().sum() + F.ifft(z, norm="ortho").real.sum(),
              [rnd([12], C128)]),
    grad_case("fft_bluestein", lambda z: (F.fft(z, n=70).abs() ** 2).sum(), [rnd([67], C128)]),
    grad_case("rfft_abs", lambda x: F.rfft(x).abs().sum(), [rnd([10], torch.float64)]),
    grad_case("irfft_square", lambda z: (F.irfft(z, n=9) ** 2).sum() + F.irfft(z).sum(),
              [rnd([5], C128)]),
    grad_case("hfft_ihfft", lambda z: (F.hfft(z, n=8) ** 2).sum() + F.ihfft(z.real).abs().sum(),
              [rnd([5], C128)]),
    grad_case("fft2_rfftn", lambda x: F.fft2(x).abs().sum() + F.rfftn(x, s=[4, 6]).abs().sum(),
              [rnd([3, 5], torch.float64)]),
    grad_case("hfftn_ihfftn", lambda z: (F.hfftn(z, s=[3, 6]) ** 2).sum()
              + F.ihfft2(z.real, norm="ortho").abs().sum(), [rnd([3, 4], C128)]),
    grad_case("irfftn_fftn", lambda z: (F.irfftn(z, s=[4, 5]) ** 2).sum()
              + F.fftn(z, dim=[0, 1], norm="forward").abs().sum(), [rnd([4, 3], C128)]),
    grad_case("stft_istft",
              lambda x: torch.stft(x, 8, hop_length=2, window=torch.hann_window(8, dtype=torch.float64),
                                   return_complex=True).abs().sum()
              + (torch.istft(torch.stft(x, 8, hop_length=2,
                                        window=torch.hann_window(8, dtype=torch.float64),
                                        return_complex=True), 8, hop_length=2,
                             window=torch.hann_window(8, dtype=torch.float64), length=20) ** 2).sum(),
              [rnd([20], torch.float64)]),
]

os.makedirs(os.path.join(DATA, "fft"), exist_ok=True)
path = os.path.join(DATA, "fft", "fft.json")
with open(path, "w") as f:
    json.dump({"generator": "tests/gen/gen_fft.py", "torch": torch.__version__, "cases": cases,
               "nd": nd, "misc": misc, "stft": stfts, "grads": grads}, f, separators=(",", ":"))
print("fft: %d cases, %d n-d, %d misc, %d stft, %d gradients -> %s"
      % (len(cases), len(nd), len(misc), len(stfts), len(grads), path))
