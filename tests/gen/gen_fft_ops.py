"""Golden cases for the FFT's registry ops (tests/data/fft_ops.json): torch 1.13's _fft_c2c,
_fft_r2c and _fft_c2r, which every ember::fft function dispatches, with their dims, the
normalisation (0 none, 1 by 1/sqrt(n), 2 by 1/n), the direction / onesidedness / output size.
The conformance suite runs them on every device (tests/ops/fft_runners_test.cpp).

Run with /usr/bin/python3 (torch 1.13).
"""
import zlib

import torch

import common
from common import In, case, error, write

F32, F64, C64, C128 = torch.float32, torch.float64, torch.complex64, torch.complex128


def rnd(shape, dtype):  # seeded apart from gen_fft.py's inputs of the same shapes
    key = repr(("ops", tuple(shape), str(dtype))).encode()
    return common.rnd(shape, dtype, -1.0, 1.0, gen=torch.Generator().manual_seed(zlib.crc32(key)))


cases = []


def tol(x):
    d = x.value().dtype if isinstance(x, In) else x.dtype
    return 1e-4 if d in (F32, C64) else 1e-9


def c2c(x, dim, norm, forward, name):
    cases.append(case("fft_c2c", lambda t: torch._fft_c2c(t, dim, norm, forward), [x],
                      {"dim": dim, "normalization": norm, "forward": forward}, name,
                      rtol=tol(x), atol=tol(x)))


def r2c(x, dim, norm, onesided, name):
    cases.append(case("fft_r2c", lambda t: torch._fft_r2c(t, dim, norm, onesided), [x],
                      {"dim": dim, "normalization": norm, "onesided": onesided}, name,
                      rtol=tol(x), atol=tol(x)))


def c2r(x, dim, norm, n, name):
    cases.append(case("fft_c2r", lambda t: torch._fft_c2r(t, dim, norm, n), [x],
                      {"dim": dim, "normalization": norm, "last_dim_size": n}, name,
                      rtol=tol(x), atol=tol(x)))


c2c(rnd([12], C128), [0], 0, True, "c2c_forward")
c2c(rnd([3, 10], C128), [1], 2, False, "c2c_inverse_by_n")
c2c(rnd([4, 6], C64), [0, 1], 1, True, "c2c_2d_ortho_c64")
c2c(rnd([2, 67], C128), [1], 0, True, "c2c_bluestein")
c2c(rnd([3, 4, 5], C128), [2, 0], 2, True, "c2c_dims_out_of_order")
c2c(In(rnd([5, 3], C128), [["transpose", 0, 1]]), [1], 1, False, "c2c_transposed")
r2c(rnd([16], F64), [0], 0, True, "r2c_onesided")
r2c(rnd([3, 9], F64), [1], 2, True, "r2c_odd_by_n")
r2c(rnd([4, 6], F32), [0, 1], 1, True, "r2c_2d_f32")
r2c(rnd([2, 7], F64), [1], 0, False, "r2c_twosided")
r2c(rnd([3, 4, 5], F64), [0, 2], 0, True, "r2c_dims_0_2")
c2r(rnd([9], C128), [0], 2, 16, "c2r_even")
c2r(rnd([5], C128), [0], 0, 9, "c2r_odd")
c2r(rnd([4, 4], C64), [0, 1], 2, 6, "c2r_2d_c64")
c2r(rnd([3, 5, 4], C128), [1, 2], 1, 7, "c2r_dims_1_2_ortho")
cases.append(error("fft_c2c", [rnd([4], F64)], "DTypeError", {"dim": [0], "normalization": 0,
                                                              "forward": True}, "c2c_real_input"))
# (complex inputs off the host are refused before inference: those errors are checked on
# flex in tests/ops/fft_test.cpp)

write("fft_ops", cases)
