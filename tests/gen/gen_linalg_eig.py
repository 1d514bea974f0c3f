"""Golden cases for linalg.eig / linalg.eigvals (tests/data/linalg_eig.json).

Run with /usr/bin/python3 (torch 1.13). Eigenvalues come in LAPACK's order and eigenvectors are
unique up to a phase (a sign for a real one), so each case records a canonical form that ember's
runner (tests/ops/linalg_decomp_runners_test.cpp) builds the same way: the eigenvalues sorted by
re + 0.1 im, the eigenvectors in that order with each column's largest entry made real and
positive, and the residual A V - V diag(w) (zero).
"""

import torch

import common
from common import In, case, error, write

F32, F64, C64, C128 = torch.float32, torch.float64, torch.complex64, torch.complex128


def rnd(shape, dtype=F64):
    return common.rnd(shape, dtype, -2.0, 2.0)


def canonical(a, vectors=True):
    if not vectors:
        w = torch.linalg.eigvals(a)
        key = w.real + 0.1 * w.imag
        return [torch.gather(w, -1, key.argsort(-1))]
    w, v = torch.linalg.eig(a)
    key = w.real + 0.1 * w.imag
    ks = key.sort(-1).values
    assert ks.numel() < 2 or (ks[..., 1:] - ks[..., :-1]).min() > 1e-3, "eigenvalues too close"
    idx = key.argsort(-1)
    w = torch.gather(w, -1, idx)
    v = torch.gather(v, -1, idx.unsqueeze(-2).expand(v.shape))
    big = v.abs().argmax(-2, keepdim=True)
    p = torch.gather(v, -2, big)
    v = v * (p.conj() / p.abs())
    ac = a.to(v.dtype)
    return [w, v, ac @ v - v * w.unsqueeze(-2)]


cases = []


def add(inputs, name, vectors=True, tol=None):
    d = inputs[0].value().dtype if isinstance(inputs[0], In) else inputs[0].dtype
    t = tol or (1e-4 if d in (F32, C64) else 1e-9)
    cases.append(case("linalg_eig", lambda a: canonical(a, vectors), inputs,
                      {} if vectors else {"eigenvalues_only": True}, name, rtol=t, atol=t))


add([rnd((4, 4))], "eig_f64")
add([rnd((3, 3), F32)], "eig_f32")
add([rnd((2, 3, 3))], "eig_batched_f64")
add([rnd((5, 5))], "eig_f64_5")
add([rnd((4, 4), C128)], "eig_c128")
add([rnd((3, 3), C64)], "eig_c64")
add([rnd((2, 3, 3), C128)], "eig_batched_c128")
add([torch.triu(rnd((4, 4))) + torch.diag(torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=F64))],
    "eig_triangular_real")
add([torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=F64)], "eig_rotation")
add([rnd((1, 1))], "eig_1x1")
add([In(rnd((4, 4)), [["transpose", 0, 1]])], "eig_transposed")
add([rnd((4, 4))], "eigvals_f64", vectors=False)
add([rnd((3, 3), C64)], "eigvals_c64", vectors=False)
add([rnd((2, 3, 3), F32)], "eigvals_batched_f32", vectors=False)
cases.append(error("linalg_eig", [rnd((3, 4))], "ShapeError", name="eig_not_square"))
cases.append(error("linalg_eig", [rnd((3,))], "ShapeError", name="eig_vector"))
cases.append(error("linalg_eig", [torch.ones(3, 3, dtype=torch.int64)], "DTypeError", name="eig_int"))

write("linalg_eig", cases)
