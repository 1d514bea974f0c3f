"""Golden cases for the complex (complex64 / complex128) matrix decompositions: det, slogdet,
cholesky, qr, svd, svdvals, eigh, eigvalsh, inv, solve, solve_triangular,
lu_factor, lu_solve, matrix_exp, and the composites trace, diag, diag_embed, cross, vector_norm,
matrix_norm, matrix_power, lstsq, pinv, matrix_rank, the reductions norm, var, std, and tril,
triu, einsum.
Run with /usr/bin/python3 (torch 1.13); writes
  tests/data/linalg_complex.json        forward cases and errors (the conformance suite runs them
                                        on every golden device with the runners of
                                        tests/ops/linalg_decomp_runners_test.cpp);
  tests/data/linalg_complex/grads.json  gauge-invariant losses and torch's gradients of them
                                        (tests/ops/linalg_complex_test.cpp).
Complex factors are unique up to phases: Q's columns as R's diagonal says (real in LAPACK), each
singular vector pair and eigenvector by the phase of its largest entry (made real and positive),
exactly as the ember runners fix them. Complete bases are checked through Q^H Q = I.
"""
import json
import os
import zlib

import torch

from common import DATA, In, case, error, grad_case, spec_of, write

C64, C128, F64 = torch.complex64, torch.complex128, torch.float64
TOL = {C64: (1e-4, 1e-4), C128: (1e-8, 1e-8)}


def crnd(shape, dt=C128, scale=1.0):
    g = torch.Generator().manual_seed(zlib.crc32(repr(("lc", tuple(shape), str(dt))).encode()))
    re = (torch.rand(shape, generator=g, dtype=F64) * 2 - 1) * scale
    im = (torch.rand(shape, generator=g, dtype=F64) * 2 - 1) * scale
    return torch.complex(re, im).to(dt)


def mH(x):
    return x.conj().transpose(-2, -1)


def well(shape, dt=C128):
    n = shape[-1]
    return (crnd(shape) + n * torch.eye(n, dtype=C128)).to(dt)


def hpd(shape, dt=C128):
    x = crnd(shape)
    return (x @ mH(x) + shape[-1] * torch.eye(shape[-1], dtype=C128)).to(dt)


def herm(shape, dt=C128):
    x = crnd(shape, scale=2.0)
    return ((x + mH(x)) / 2).to(dt)


def phase(v):
    """conj(p) / |p| for each column's largest-magnitude entry p (1 for a zero column)."""
    if v.shape[-2] == 0 or v.shape[-1] == 0:
        return torch.ones(v.shape[:-2] + v.shape[-1:], dtype=v.dtype)
    p = torch.gather(v, -2, v.abs().argmax(dim=-2, keepdim=True)).squeeze(-2)
    return torch.where(p.abs() == 0, torch.ones_like(p), p.conj() / p.abs())


def qr_fixed(mode):
    def f(a):
        q, r = torch.linalg.qr(a, mode=mode)
        k = min(a.shape[-2], a.shape[-1])
        d = torch.diagonal(r, 0, -2, -1)[..., :k]
        d = torch.where(d.abs() == 0, torch.ones_like(d), d / d.abs())
        r = r.clone()
        r[..., :k, :] = r[..., :k, :] * d.conj().unsqueeze(-1)
        if mode == "r":
            return r
        return q[..., :, :k] * d.unsqueeze(-2), r, mH(q) @ q
    return f


def svd_fixed(full):
    def f(a):
        u, s, vh = torch.linalg.svd(a, full_matrices=full)
        k = min(a.shape[-2], a.shape[-1])
        uk, vk = u[..., :, :k], vh[..., :k, :]
        p = phase(uk)
        outs = [uk * p.unsqueeze(-2), s, vk * p.conj().unsqueeze(-1)]
        if full:
            outs += [mH(u) @ u, vh @ mH(vh)]
        return tuple(outs)
    return f


def eigh_fixed(uplo):
    def f(a):
        w, v = torch.linalg.eigh(a, UPLO=uplo)
        return w, v * phase(v).unsqueeze(-2)
    return f


cases = []


def add(op, fn, inputs, dt=C128, **kw):
    r, a = TOL[dt]
    kw.setdefault("rtol", r)
    kw.setdefault("atol", a)
    cases.append(case(op, fn, inputs, **kw))


def tname(dt):
    return "c64" if dt == C64 else "c128"


for dt in [C64, C128]:
    t = tname(dt)
    add("linalg_det", torch.linalg.det, [well((3, 3), dt)], dt, name="cdet_" + t)
    add("linalg_slogdet", torch.linalg.slogdet, [crnd((2, 4, 4)).to(dt)], dt, name="cslogdet_" + t)
    add("linalg_cholesky", torch.linalg.cholesky, [hpd((4, 4), dt)], dt, name="ccholesky_" + t)
    add("linalg_qr", qr_fixed("reduced"), [crnd((2, 4, 3)).to(dt)], dt, attrs={"mode": "reduced"},
        name="cqr_batched_" + t)
    add("linalg_svd", svd_fixed(False), [crnd((5, 3)).to(dt)], dt, attrs={"full_matrices": False},
        name="csvd_" + t)
    add("linalg_svdvals", torch.linalg.svdvals, [crnd((2, 3, 5)).to(dt)], dt, name="csvdvals_" + t)
    add("linalg_eigh", eigh_fixed("L"), [herm((2, 4, 4), dt)], dt, attrs={"UPLO": "L"}, name="ceigh_" + t)
    add("linalg_eigvalsh", torch.linalg.eigvalsh, [herm((3, 3), dt)], dt, name="ceigvalsh_" + t)

# inv / solve
for dt in [C64, C128]:
    add("linalg_inv", torch.linalg.inv, [well((2, 3, 3), dt)], dt, name="cinv_batched_" + tname(dt))
    add("linalg_solve", torch.linalg.solve, [well((4, 4), dt), crnd((4, 2)).to(dt)], dt, name="csolve_" + tname(dt))
add("linalg_inv", torch.linalg.inv, [In(well((4, 4)), [["transpose", 0, 1]])], name="cinv_transposed")
add("linalg_inv", torch.linalg.inv, [crnd((0, 3, 3))], name="cinv_empty_batch")
add("linalg_solve", torch.linalg.solve, [well((2, 1, 3, 3)), crnd((4, 3, 2))], name="csolve_broadcast")
add("linalg_solve", torch.linalg.solve, [well((3, 3)), crnd((3,))], name="csolve_vector")
add("linalg_solve", lambda a, b: torch.linalg.solve(a, b, left=False).resolve_conj(), [well((3, 3)), crnd((2, 3))],
    attrs={"left": False}, name="csolve_right")
singular = torch.tensor([[1 + 1j, 2 + 2j], [1, 2]], dtype=C128)
cases.append(error("linalg_inv", [torch.stack([torch.eye(2, dtype=C128), singular])], "ValueError",
                   name="cinv_singular_batch_element"))
cases.append(error("linalg_solve", [singular, crnd((2, 1))], "ValueError", name="csolve_singular"))

# det / slogdet
add("linalg_det", torch.linalg.det, [well((2, 3, 3))], name="cdet_batched")
add("linalg_det", torch.linalg.det, [In(crnd((4, 4)), [["transpose", 0, 1]])], name="cdet_transposed")
add("linalg_det", torch.linalg.det, [torch.tensor([[1 + 1j, 2 + 2j], [1, 2]], dtype=C128)], name="cdet_singular")
add("linalg_det", torch.linalg.det, [crnd((0, 3, 3))], name="cdet_empty_batch")
add("linalg_det", torch.linalg.det, [crnd((0, 0))], name="cdet_0x0")
add("linalg_slogdet", torch.linalg.slogdet, [torch.tensor([[1 + 1j, 2 + 2j], [1, 2]], dtype=C128)],
    name="cslogdet_singular")
add("linalg_slogdet", torch.linalg.slogdet, [In(crnd((3, 2, 3)), [["permute", [1, 0, 2]]])],
    name="cslogdet_permuted")
cases.append(error("linalg_det", [crnd((2, 3))], "ShapeError", name="cdet_not_square"))
cases.append(error("linalg_slogdet", [crnd((3,))], "ShapeError", name="cslogdet_vector"))

# cholesky: only the named triangle is read (the other holds noise)
add("linalg_cholesky", lambda a: torch.linalg.cholesky(a, upper=True), [hpd((2, 3, 3))],
    attrs={"upper": True}, name="ccholesky_upper_batched")
noisy = torch.tril(hpd((4, 4))) + torch.triu(crnd((4, 4)), 1)
add("linalg_cholesky", torch.linalg.cholesky, [noisy], name="ccholesky_lower_only")
add("linalg_cholesky", torch.linalg.cholesky, [In(hpd((4, 4)), [["transpose", 0, 1]])],
    name="ccholesky_transposed")
add("linalg_cholesky", torch.linalg.cholesky, [crnd((0, 2, 2))], name="ccholesky_empty_batch")
notpd = torch.tensor([[2, 1j, 0], [-1j, 2, 3], [0, 3, 1]], dtype=C128)  # minor 3 is not PD
cases.append(error("linalg_cholesky", [notpd], "ValueError", name="ccholesky_not_pd"))
cases.append(error("linalg_cholesky", [torch.stack([hpd((3, 3)), notpd])], "ValueError",
                   name="ccholesky_not_pd_batch_element"))
cases.append(error("linalg_cholesky", [crnd((2, 3))], "ShapeError", name="ccholesky_not_square"))

# qr
for mode in ["reduced", "complete", "r"]:
    for shape in [(5, 3), (3, 5), (4, 4)]:
        add("linalg_qr", qr_fixed(mode), [crnd(shape)], attrs={"mode": mode},
            name="cqr_%s_%dx%d" % (mode, shape[0], shape[1]))
add("linalg_qr", qr_fixed("reduced"), [In(crnd((3, 4)), [["transpose", 0, 1]])], attrs={"mode": "reduced"},
    name="cqr_transposed")
add("linalg_qr", qr_fixed("reduced"), [crnd((0, 3, 2))], attrs={"mode": "reduced"}, name="cqr_empty_batch")

# svd / svdvals
for full in [False, True]:
    for shape in [(5, 3), (3, 5), (4, 4), (2, 3, 2)]:
        add("linalg_svd", svd_fixed(full), [crnd(shape)], attrs={"full_matrices": full},
            name="csvd_%s_%s" % ("full" if full else "reduced", "x".join(map(str, shape))))
add("linalg_svd", svd_fixed(False), [In(crnd((4, 6)), [["transpose", 0, 1]])], attrs={"full_matrices": False},
    name="csvd_transposed")
add("linalg_svd", svd_fixed(False), [crnd((0, 3, 3))], attrs={"full_matrices": False}, name="csvd_empty_batch")
lowrank = crnd((4, 2)) @ crnd((2, 3))
add("linalg_svdvals", torch.linalg.svdvals, [lowrank], name="csvdvals_rank_deficient")

# eigh / eigvalsh
for uplo in ["L", "U"]:
    add("linalg_eigh", eigh_fixed(uplo), [herm((4, 4))], attrs={"UPLO": uplo}, name="ceigh_" + uplo)
noisy = torch.tril(herm((4, 4))) + torch.triu(crnd((4, 4)), 1)
add("linalg_eigh", eigh_fixed("L"), [noisy], attrs={"UPLO": "L"}, name="ceigh_lower_only")
add("linalg_eigh", eigh_fixed("U"), [In(herm((3, 3)), [["transpose", 0, 1]])], attrs={"UPLO": "U"},
    name="ceigh_transposed")
add("linalg_eigh", eigh_fixed("L"), [crnd((0, 3, 3))], attrs={"UPLO": "L"}, name="ceigh_empty_batch")
add("linalg_eigvalsh", lambda a: torch.linalg.eigvalsh(a, UPLO="U"), [herm((2, 5, 5))], attrs={"UPLO": "U"},
    name="ceigvalsh_upper_batched")
cases.append(error("linalg_eigh", [crnd((3, 4))], "ShapeError", name="ceigh_not_square"))

# solve_triangular (only A's triangle is read)
for upper in [False, True]:
    for left in [True, False]:
        for unit in [False, True]:
            b = crnd((3, 2) if left else (2, 3))
            add("linalg_solve_triangular",
                lambda aa, bb, upper=upper, left=left, unit=unit: torch.linalg.solve_triangular(
                    aa, bb, upper=upper, left=left, unitriangular=unit),
                [well((3, 3)), b], attrs={"upper": upper, "left": left, "unitriangular": unit},
                name="csolve_triangular_%s_%s%s" % ("upper" if upper else "lower", "left" if left else "right",
                                                    "_unit" if unit else ""))
add("linalg_solve_triangular", lambda aa, bb: torch.linalg.solve_triangular(aa, bb, upper=False),
    [well((2, 4, 4), C64), crnd((2, 4, 3)).to(C64)], C64, attrs={"upper": False}, name="csolve_triangular_batched_c64")
cases.append(error("linalg_solve_triangular", [well((3, 3)), crnd((3, 2)).to(C64)], "DTypeError",
                   attrs={"upper": True}, name="csolve_triangular_dtype_mismatch"))
cases.append(error("linalg_svd", [crnd((3,))], "ShapeError", name="csvd_vector"))

# composites: trace, diag, diag_embed, cross, norms, matrix_power, lstsq, pinv, matrix_rank
INF = float("inf")


def ord_attr(o):
    return "inf" if o == INF else "-inf" if o == -INF else o


for dt in [C64, C128]:
    t = tname(dt)
    add("trace", torch.trace, [crnd((3, 4)).to(dt)], dt, name="ctrace_" + t)
    add("linalg_cross", torch.linalg.cross, [crnd((2, 4, 3)).to(dt), crnd((1, 4, 3)).to(dt)], dt,
        name="ccross_broadcast_" + t)
    add("linalg_vector_norm", torch.linalg.vector_norm, [crnd((3, 4)).to(dt)], dt, attrs={"ord": 2},
        name="cvector_norm_" + t)
    add("linalg_matrix_norm", torch.linalg.matrix_norm, [crnd((2, 3, 4)).to(dt)], dt, attrs={"ord": "fro"},
        name="cmatrix_norm_fro_" + t)
    add("matrix_power", lambda a: torch.linalg.matrix_power(a, -2), [well((2, 3, 3), dt) / 3], dt,
        attrs={"n": -2}, name="cmatrix_power_-2_" + t)
    add("linalg_pinv", torch.linalg.pinv, [crnd((2, 4, 3)).to(dt)], dt, name="cpinv_batched_" + t)
add("trace", torch.trace, [In(crnd((4, 3)), [["transpose", 0, 1]])], name="ctrace_transposed")
for k in [0, 1, -2]:
    add("diag", lambda x, k=k: torch.diag(x, k), [crnd((3,))], attrs={"diagonal": k}, name="cdiag_vector_%d" % k)
    add("diag", lambda x, k=k: torch.diag(x, k), [crnd((3, 4))], attrs={"diagonal": k}, name="cdiag_matrix_%d" % k)
for k, d1, d2 in [(0, -2, -1), (1, -2, -1), (-1, 0, 2)]:
    add("diag_embed", lambda x, k=k, d1=d1, d2=d2: torch.diag_embed(x, k, d1, d2), [crnd((2, 3))],
        attrs={"offset": k, "dim1": d1, "dim2": d2}, name="cdiag_embed_%d_%d_%d" % (k, d1, d2))
add("linalg_cross", lambda a, b: torch.linalg.cross(a, b, dim=0), [crnd((3, 2)), crnd((3, 1))],
    attrs={"dim": 0}, name="ccross_dim0")
for ord_ in [2, 1, 3.5, 0, INF, -INF]:
    add("linalg_vector_norm", lambda x, o=ord_: torch.linalg.vector_norm(x, ord=o), [crnd((3, 4))],
        attrs={"ord": ord_attr(ord_)}, name="cvector_norm_%s" % ord_)
add("linalg_vector_norm", lambda x: torch.linalg.vector_norm(x, dim=(0, 2), keepdim=True), [crnd((2, 3, 4))],
    attrs={"ord": 2, "dim": [0, 2], "keepdim": True}, name="cvector_norm_dims")
for ord_ in ["fro", "nuc", 1, -1, 2, -2, INF, -INF]:
    add("linalg_matrix_norm", lambda a, o=ord_: torch.linalg.matrix_norm(a, ord=o), [crnd((2, 3, 4))],
        attrs={"ord": ord_attr(ord_)}, name="cmatrix_norm_%s" % ord_)
add("linalg_matrix_norm", lambda a: torch.linalg.matrix_norm(a, ord=1, dim=(0, 2), keepdim=True), [crnd((3, 2, 4))],
    attrs={"ord": 1, "dim": [0, 2], "keepdim": True}, name="cmatrix_norm_dims_keepdim")
for n in [0, 1, 2, 3, 6, -1, -3]:
    add("matrix_power", lambda a, n=n: torch.linalg.matrix_power(a, n), [well((2, 3, 3)) / 3], attrs={"n": n},
        name="cmatrix_power_%d" % n)
cases.append(error("matrix_power", [crnd((2, 3))], "ShapeError", attrs={"n": 2}, name="cmatrix_power_not_square"))
for driver in ["gelsy", "gelsd", "gelss"]:
    add("linalg_lstsq", lambda a, b, d=driver: torch.linalg.lstsq(a, b, driver=d), [crnd((6, 3)), crnd((6, 2))],
        attrs={"driver": driver}, name="clstsq_tall_" + driver)
add("linalg_lstsq", torch.linalg.lstsq, [crnd((2, 5, 3)), crnd((2, 5, 2))], name="clstsq_batched_default")
add("linalg_lstsq", lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd"), [crnd((3, 5)), crnd((3, 2))],
    attrs={"driver": "gelsd"}, name="clstsq_wide_gelsd")
add("linalg_lstsq", torch.linalg.lstsq, [crnd((5, 3)), crnd((5,))], name="clstsq_vector")
add("linalg_lstsq", lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd"), [well((4, 4), C64), crnd((4, 1)).to(C64)],
    C64, attrs={"driver": "gelsd"}, name="clstsq_square_c64")
for shape in [(4, 3), (3, 4), (3, 3)]:
    add("linalg_pinv", torch.linalg.pinv, [crnd(shape)], name="cpinv_%dx%d" % shape)
add("linalg_pinv", lambda a: torch.linalg.pinv(a, hermitian=True), [herm((4, 4))], attrs={"hermitian": True},
    name="cpinv_hermitian")
add("linalg_pinv", torch.linalg.pinv, [lowrank], name="cpinv_rank_deficient")
add("linalg_matrix_rank", torch.linalg.matrix_rank, [lowrank], name="cmatrix_rank_deficient")
add("linalg_matrix_rank", torch.linalg.matrix_rank, [crnd((2, 3, 4))], name="cmatrix_rank_batched")
add("linalg_matrix_rank", torch.linalg.matrix_rank, [lowrank.to(C64)], C64, name="cmatrix_rank_deficient_c64")
add("linalg_matrix_rank", lambda a: torch.linalg.matrix_rank(a, atol=1.0, rtol=0.0), [crnd((4, 4))],
    attrs={"atol": 1.0, "rtol": 0.0}, name="cmatrix_rank_atol")
add("linalg_matrix_rank", lambda a: torch.linalg.matrix_rank(a, hermitian=True), [herm((4, 4))],
    attrs={"hermitian": True}, name="cmatrix_rank_hermitian")
cases.append(error("linalg_lstsq", [crnd((4, 3)), crnd((4, 2)).to(C64)], "DTypeError", name="clstsq_dtype_mismatch"))

# lu_factor / lu_solve / matrix_exp
for dt in [C64, C128]:
    add("linalg_lu_factor", torch.linalg.lu_factor, [crnd((4, 4)).to(dt)], dt, name="clu_factor_" + tname(dt))
    add("matrix_exp", torch.linalg.matrix_exp, [crnd((4, 4)).to(dt)], dt, name="cmatrix_exp_" + tname(dt))
add("linalg_lu_factor", torch.linalg.lu_factor, [crnd((2, 3, 3))], name="clu_factor_batched")
add("linalg_lu_factor", torch.linalg.lu_factor, [crnd((5, 3))], name="clu_factor_tall")
add("linalg_lu_factor", torch.linalg.lu_factor, [crnd((3, 5))], name="clu_factor_wide")
add("linalg_lu_factor", torch.linalg.lu_factor, [In(crnd((4, 4)), [["transpose", 0, 1]])], name="clu_factor_transposed")
cases.append(error("linalg_lu_factor", [singular], "ValueError", name="clu_factor_singular"))
for adjoint in [False, True]:
    for left in [True, False]:
        lu, piv = torch.linalg.lu_factor(well((2, 3, 3)))
        b = crnd((2, 3, 2) if left else (2, 2, 3))
        add("linalg_lu_solve", lambda l, p, bb, left=left, adjoint=adjoint: torch.linalg.lu_solve(
            l, p, bb, left=left, adjoint=adjoint).resolve_conj(), [lu, piv, b], attrs={"left": left, "adjoint": adjoint},
            name="clu_solve_%s%s" % ("left" if left else "right", "_adjoint" if adjoint else ""))
lu, piv = torch.linalg.lu_factor(well((3, 3), C64))
add("linalg_lu_solve", torch.linalg.lu_solve, [lu, piv, crnd((3, 2)).to(C64)], C64, name="clu_solve_c64")
add("matrix_exp", torch.linalg.matrix_exp, [crnd((2, 3, 3), scale=4.0)], name="cmatrix_exp_large_norm")
add("matrix_exp", torch.linalg.matrix_exp, [crnd((0, 2, 2))], name="cmatrix_exp_empty_batch")
cases.append(error("matrix_exp", [crnd((2, 3))], "ShapeError", name="cmatrix_exp_not_square"))

# edges: empty batches and matrices, a dtype for a complex norm, keepdim, transposed views
add("linalg_vector_norm", lambda x: torch.linalg.vector_norm(x, dim=(1,), dtype=C128), [crnd((3, 4)).to(C64)],
    attrs={"ord": 2, "dim": [1], "dtype": "complex128"}, name="cvector_norm_dtype")
add("linalg_matrix_norm", lambda a: torch.linalg.matrix_norm(a, ord="nuc", keepdim=True), [crnd((3, 4)).to(C64)], C64,
    attrs={"ord": "nuc", "keepdim": True}, name="cmatrix_norm_nuc_keepdim_c64")
add("linalg_matrix_norm", lambda a: torch.linalg.matrix_norm(a, ord=2), [In(crnd((4, 3)), [["transpose", 0, 1]])],
    attrs={"ord": 2}, name="cmatrix_norm_2_transposed")
add("linalg_pinv", torch.linalg.pinv, [crnd((0, 3, 2))], name="cpinv_empty_batch")
add("linalg_pinv", torch.linalg.pinv, [crnd((3, 0))], name="cpinv_3x0")
add("linalg_matrix_rank", torch.linalg.matrix_rank, [crnd((0, 3, 3))], name="cmatrix_rank_empty_batch")
add("linalg_lstsq", lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd"), [crnd((0, 4, 3)), crnd((0, 4, 2))],
    attrs={"driver": "gelsd"}, name="clstsq_empty_batch")
add("matrix_power", lambda a: torch.linalg.matrix_power(a, 2), [crnd((0, 3, 3))], attrs={"n": 2},
    name="cmatrix_power_empty_batch")
add("linalg_lu_factor", torch.linalg.lu_factor, [crnd((0, 3, 3))], name="clu_factor_empty_batch")
add("linalg_cross", torch.linalg.cross, [In(crnd((3, 4)), [["transpose", 0, 1]]), crnd((4, 3))],
    name="ccross_transposed")
cases.append(error("trace", [crnd((2, 2, 2))], "ShapeError", name="ctrace_3d"))
cases.append(error("linalg_cross", [crnd((2, 4)), crnd((2, 4))], "ShapeError", name="ccross_not_3"))
cases.append(error("linalg_pinv", [crnd((3,))], "ShapeError", name="cpinv_vector"))
# tril, triu, einsum: the building blocks of complex linalg code
for eq, shapes in [("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]), ("ii->", [(3, 3)]),
                   ("ij,ij->i", [(2, 3), (2, 3)]), ("i,j->ij", [(3,), (2,)]), ("...ij->...ji", [(2, 3, 4)])]:
    add("einsum", lambda *xs, eq=eq: torch.einsum(eq, *xs), [crnd(sh) for sh in shapes], attrs={"equation": eq},
        name="ceinsum_" + eq.replace(",", "_").replace("->", "_to_").replace("...", "e"))
add("einsum", lambda a, b: torch.einsum("ij,jk->ik", a, b), [crnd((2, 3)).to(C64), crnd((3, 2)).to(C64)], C64,
    attrs={"equation": "ij,jk->ik"}, name="ceinsum_mm_c64")
for k in [0, 1, -1]:
    add("tril", lambda x, k=k: torch.tril(x, k), [crnd((2, 3, 4))], attrs={"diagonal": k}, name="ctril_%d" % k)
    add("triu", lambda x, k=k: torch.triu(x, k), [crnd((4, 3))], attrs={"diagonal": k}, name="ctriu_%d" % k)
cases.append(error("einsum", [crnd((2, 3)), crnd((3, 2)).to(C64)], "DTypeError", attrs={"equation": "ij,jk->ik"},
                   name="ceinsum_dtype_mismatch"))
cases.append(error("linalg_vector_norm", [torch.rand(3, dtype=F64)], "DTypeError",
                   attrs={"ord": 2, "dtype": "complex128"}, name="cvector_norm_real_input_complex_dtype"))

# norm, var, std: the reductions under the complex norms (real results, as torch's)
for p_, dims in [(2, [1]), (1, [0, 1]), (3.0, [0])]:
    add("norm", lambda x, p_=p_, dims=dims: torch.norm(x, p=p_, dim=dims), [crnd((3, 4))],
        attrs={"p": float(p_), "dims": dims}, name="cnorm_%s_%s" % (p_, "_".join(map(str, dims))))
for op, tfn in (("var", torch.var), ("std", torch.std)):
    add(op, lambda x, tfn=tfn: tfn(x, dim=[1], correction=1), [crnd((3, 4))], attrs={"dims": [1], "correction": 1},
        name="c%s_dim1" % op)
    add(op, lambda x, tfn=tfn: tfn(x, dim=[0, 1], correction=0, keepdim=True), [crnd((2, 5)).to(C64)], C64,
        attrs={"dims": [0, 1], "correction": 0, "keepdim": True}, name="c%s_all_keepdim_c64" % op)

write("linalg_complex", cases)


# --- gradients: losses that do not depend on the factors' phases (torch documents the others
# as ill-defined). f of a complex tensor: sum(re) + sum(im^2); g of a real one: sum(x + x^2 / 2).
def f(z):
    return z.real.sum() + (z.imag ** 2).sum()


def g(x):
    return (x + x * x / 2).sum()


def from_x(x):  # a Hermitian positive-definite matrix from any X
    return x @ mH(x) + 3 * torch.eye(x.shape[-1], dtype=x.dtype)


def h_of(x):  # a Hermitian matrix from any X
    return (x + mH(x)) / 2


def ones_c(shape):
    return torch.ones(shape, dtype=C128) * (1 - 0.5j)


def lower3():  # a fixed lower-triangular complex matrix (tests/ops/linalg_complex_test.cpp builds it too)
    return torch.complex(torch.tril(torch.full((3, 3), 0.5, dtype=F64), -1) + 3 * torch.eye(3, dtype=F64),
                         torch.tril(torch.full((3, 3), 0.25, dtype=F64), -1))


def svd_loss(a):
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    return g(s) + f(u @ vh) + g(u.abs())


def eigh_loss(a, uplo="L"):
    w, v = torch.linalg.eigh(a, UPLO=uplo)
    return g(w) + g(v.abs()) + f(v @ torch.diag_embed(w.to(v.dtype)) @ mH(v) * 0.5)


# lu_solve's gradients: a packed LU (any matrix with a nonzero diagonal is one) with the identity
# pivots (they carry no gradient; tests/ops/linalg_complex_test.cpp builds them too).
LU3, LU_PIV = well((3, 3)), torch.tensor([1, 2, 3], dtype=torch.int32)

grads = [
    grad_case("inv", lambda a: f(torch.linalg.inv(a)), [well((2, 3, 3))]),
    grad_case("solve_A", lambda a: f(torch.linalg.solve(a, ones_c((3, 2)))), [well((3, 3))]),
    grad_case("solve_B_right", lambda b: f(torch.linalg.solve(lower3() + mH(lower3()), b, left=False)),
              [crnd((2, 3))]),
    grad_case("det", lambda a: f(torch.linalg.det(a)), [well((2, 3, 3))]),
    grad_case("slogdet", lambda a: f(torch.linalg.slogdet(a)[0]) + g(torch.linalg.slogdet(a)[1]),
              [crnd((2, 3, 3))]),
    grad_case("cholesky_of_x", lambda x: f(torch.linalg.cholesky(from_x(x))), [crnd((2, 3, 3))]),
    grad_case("cholesky_upper_of_x", lambda x: f(torch.linalg.cholesky(from_x(x), upper=True)),
              [crnd((3, 3))]),
    grad_case("cholesky_direct", lambda a: f(torch.linalg.cholesky(a)), [hpd((3, 3))]),
    grad_case("qr_tall", lambda a: f(torch.linalg.qr(a)[0]) + f(torch.linalg.qr(a)[1]), [crnd((4, 3))]),
    grad_case("qr_square_batched", lambda a: f(torch.linalg.qr(a)[0]) + f(torch.linalg.qr(a)[1]),
              [crnd((2, 3, 3))]),
    grad_case("qr_wide", lambda a: f(torch.linalg.qr(a)[0]) + f(torch.linalg.qr(a)[1]), [crnd((3, 5))]),
    grad_case("svd_tall", svd_loss, [crnd((4, 3))]),
    grad_case("svd_wide_batched", svd_loss, [crnd((2, 3, 4))]),
    grad_case("svd_square", svd_loss, [crnd((3, 3))]),
    grad_case("svdvals", lambda a: g(torch.linalg.svdvals(a)), [crnd((3, 4))]),
    grad_case("eigh_of_x", lambda x: eigh_loss(h_of(x)), [crnd((2, 3, 3))]),
    grad_case("eigh_upper_of_x", lambda x: eigh_loss(h_of(x), "U"), [crnd((4, 4))]),
    grad_case("solve_triangular_A", lambda a: f(torch.linalg.solve_triangular(a, ones_c((3, 2)), upper=True)),
              [well((3, 3))]),
    grad_case("solve_triangular_B_right", lambda b: f(torch.linalg.solve_triangular(lower3(), b, upper=False,
                                                                                     left=False)), [crnd((2, 2, 3))]),
    grad_case("eigvalsh_of_x", lambda x: g(torch.linalg.eigvalsh(h_of(x))), [crnd((3, 3))]),
    grad_case("trace", lambda a: f(torch.trace(a)), [crnd((3, 4))]),
    grad_case("diag_vector", lambda x: f(torch.diag(x, 1)), [crnd((3,))]),
    grad_case("diag_embed", lambda x: f(torch.diag_embed(x, -1, 0, 2)), [crnd((2, 3))]),
    grad_case("cross", lambda a: f(torch.linalg.cross(a, ones_c((4, 3)) + a.flip(0))), [crnd((4, 3))]),
    grad_case("vector_norm_2", lambda x: g(torch.linalg.vector_norm(x, dim=(1,))), [crnd((3, 4))]),
    grad_case("vector_norm_3.5", lambda x: g(torch.linalg.vector_norm(x, ord=3.5)), [crnd((2, 3))]),
    grad_case("vector_norm_inf", lambda x: g(torch.linalg.vector_norm(x, ord=float("inf"), dim=(-1,))),
              [crnd((2, 4))]),
    grad_case("matrix_norm_fro", lambda a: g(torch.linalg.matrix_norm(a)), [crnd((2, 3, 4))]),
    grad_case("matrix_norm_nuc", lambda a: g(torch.linalg.matrix_norm(a, ord="nuc")), [crnd((2, 3, 4))]),
    grad_case("matrix_norm_1", lambda a: g(torch.linalg.matrix_norm(a, ord=1)), [crnd((2, 3, 4))]),
    grad_case("matrix_norm_-inf", lambda a: g(torch.linalg.matrix_norm(a, ord=float("-inf"))), [crnd((2, 3, 4))]),
    grad_case("matrix_norm_2", lambda a: g(torch.linalg.matrix_norm(a, ord=2)), [crnd((3, 4))]),
    grad_case("matrix_norm_-2", lambda a: g(torch.linalg.matrix_norm(a, ord=-2)), [crnd((4, 3))]),
    grad_case("matrix_power_3", lambda a: f(torch.linalg.matrix_power(a, 3)), [crnd((2, 3, 3))]),
    grad_case("matrix_power_-2", lambda a: f(torch.linalg.matrix_power(a, -2)), [well((3, 3))]),
    grad_case("lstsq_A", lambda a: f(torch.linalg.lstsq(a, ones_c((5, 2)), driver="gelsd")[0]), [crnd((5, 3))]),
    grad_case("lstsq_B", lambda b: f(torch.linalg.lstsq(lower3(), b)[0]), [crnd((3, 2))]),
    grad_case("pinv_tall", lambda a: f(torch.linalg.pinv(a)), [crnd((4, 3))]),
    grad_case("pinv_wide_batched", lambda a: f(torch.linalg.pinv(a)), [crnd((2, 3, 4))]),
    grad_case("lu_solve_LU", lambda l: f(torch.linalg.lu_solve(l, LU_PIV, ones_c((3, 2)))), [LU3]),
    grad_case("lu_solve_LU_adjoint_right", lambda l: f(torch.linalg.lu_solve(l, LU_PIV, ones_c((2, 3)), left=False,
                                                                            adjoint=True)), [LU3]),
    grad_case("lu_solve_B", lambda b: f(torch.linalg.lu_solve(LU3, LU_PIV, b, adjoint=True)), [crnd((2, 3, 2))]),
    grad_case("matrix_exp", lambda a: f(torch.linalg.matrix_exp(a)), [crnd((2, 3, 3))]),
    grad_case("norm_3", lambda x: g(torch.norm(x, p=3, dim=[1])), [crnd((3, 4))]),
    grad_case("var", lambda x: g(torch.var(x, dim=[1])), [crnd((3, 4))]),
    grad_case("std", lambda x: g(torch.std(x, dim=[0])), [crnd((3, 4))]),
    grad_case("einsum", lambda a: f(torch.einsum("bij,jk->bik", a, ones_c((3, 2))) + torch.einsum("bii->b", a[:, :, :3])
                                   .unsqueeze(-1).unsqueeze(-1)), [crnd((2, 3, 3))]),
    grad_case("tril_triu", lambda a: f(torch.tril(a, -1) * 2 + torch.triu(a, 1) * (1 + 1j)), [crnd((3, 4))]),
    grad_case("pinv_hermitian_of_x", lambda x: f(torch.linalg.pinv(h_of(x) + 3 * torch.eye(3), hermitian=True)),
              [crnd((3, 3))]),
]
path = os.path.join(DATA, "linalg_complex", "grads.json")
with open(path, "w") as fh:
    json.dump({"generator": "tests/gen/gen_linalg_complex.py", "torch": torch.__version__,
               "grads": grads}, fh, separators=(",", ":"))
print("linalg_complex/grads: %d gradients -> %s" % (len(grads), path))
