"""Golden cases for the matrix decompositions and functions (ember/linalg.h): inv, solve, det,
slogdet, cholesky, qr, svd, svdvals, eigh, eigvalsh, lstsq, pinv, matrix_rank, lu_factor, lu_solve,
solve_triangular, matrix_norm, vector_norm, cross, trace, diag, diag_embed, matrix_power,
matrix_exp. Run with /usr/bin/python3 (torch 1.13); writes tests/data/linalg_decomp.json.

Inputs are well conditioned (a diagonal shift, or X X^T + n I for positive-definite ones).
Decompositions whose factors are unique only up to signs (qr, svd, eigh) record them with signs
fixed the way the ember runners fix them (tests/ops/linalg_decomp_runners_test.cpp): each column
of Q (qr) scaled by the sign of R's diagonal, each singular/eigen vector by the sign of its
largest entry; the columns past min(m, n) of complete bases are checked through Q^T Q = I."""
import torch

from common import In, case, error, rnd as rnd_any, write

cases = []
F32, F64 = torch.float32, torch.float64
TOL = {F32: (1e-4, 1e-4), F64: (1e-8, 1e-8)}


def rnd(shape, dt=F64, lo=-3.0, hi=3.0):
    """Test data, float64 unless told."""
    return rnd_any(shape, dt, lo=lo, hi=hi)


def add(op, fn, inputs, dt=F64, **kw):
    r, a = TOL[dt]
    kw.setdefault("rtol", r)
    kw.setdefault("atol", a)
    cases.append(case(op, fn, inputs, **kw))


def well(shape, dt=F64):
    """A batch of well-conditioned square matrices: random plus n on the diagonal."""
    n = shape[-1]
    return (rnd(shape, F64, lo=-1, hi=1) + n * torch.eye(n, dtype=F64)).to(dt)


def spd(shape, dt=F64):
    n = shape[-1]
    x = rnd(shape, F64, lo=-1, hi=1)
    return (x @ x.transpose(-2, -1) + n * torch.eye(n, dtype=F64)).to(dt)


def sym(shape, dt=F64):
    x = rnd(shape, F64, lo=-2, hi=2)
    return ((x + x.transpose(-2, -1)) / 2).to(dt)


def tname(dt):
    return str(dt).split(".")[1]


def colsign(v):
    """The sign of each column's largest-magnitude entry (1 for a zero column)."""
    if v.shape[-2] == 0 or v.shape[-1] == 0:
        return torch.ones(v.shape[:-2] + v.shape[-1:], dtype=v.dtype)
    idx = v.abs().argmax(dim=-2, keepdim=True)
    s = torch.sign(torch.gather(v, -2, idx)).squeeze(-2)
    return torch.where(s == 0, torch.ones_like(s), s)


def qr_fixed(mode):
    def f(a):
        q, r = torch.linalg.qr(a, mode=mode)
        k = min(a.shape[-2], a.shape[-1])
        d = torch.sign(torch.diagonal(r, 0, -2, -1)[..., :k])
        d = torch.where(d == 0, torch.ones_like(d), d)
        r = r.clone()
        r[..., :k, :] = r[..., :k, :] * d.unsqueeze(-1)
        if mode == "r":
            return r
        qk = q[..., :, :k] * d.unsqueeze(-2)
        return qk, r, q.transpose(-2, -1) @ q
    return f


def svd_fixed(full):
    def f(a):
        u, s, vh = torch.linalg.svd(a, full_matrices=full)
        k = min(a.shape[-2], a.shape[-1])
        uk, vk = u[..., :, :k], vh[..., :k, :]
        sg = colsign(uk)
        outs = [uk * sg.unsqueeze(-2), s, vk * sg.unsqueeze(-1)]
        if full:
            outs += [u.transpose(-2, -1) @ u, vh @ vh.transpose(-2, -1)]
        return tuple(outs)
    return f


def eigh_fixed(uplo):
    def f(a):
        w, v = torch.linalg.eigh(a, UPLO=uplo)
        return w, v * colsign(v).unsqueeze(-2)
    return f


# --- inv / solve / det / slogdet ---
for dt in [F32, F64]:
    add("linalg_inv", torch.linalg.inv, [well((4, 4), dt)], dt, name="inv_" + tname(dt))
    add("linalg_det", torch.linalg.det, [well((3, 3), dt)], dt, name="det_" + tname(dt))
    add("linalg_solve", torch.linalg.solve, [well((4, 4), dt), rnd((4, 2), dt)], dt, name="solve_" + tname(dt))
add("linalg_inv", torch.linalg.inv, [well((2, 3, 5, 5))], name="inv_batched")
add("linalg_inv", torch.linalg.inv, [In(well((4, 4)), [["transpose", 0, 1]])], name="inv_transposed")
add("linalg_inv", torch.linalg.inv, [rnd((0, 3, 3))], name="inv_empty_batch")
add("linalg_inv", torch.linalg.inv, [rnd((0, 0))], name="inv_0x0")
add("linalg_inv", torch.linalg.inv, [well((1, 1))], name="inv_1x1")
cases.append(error("linalg_inv", [torch.tensor([[1., 2.], [2., 4.]], dtype=F64)], "ValueError", name="inv_singular"))
cases.append(error("linalg_inv", [torch.stack([torch.eye(2, dtype=F64), torch.tensor([[1., 2.], [2., 4.]], dtype=F64)])],
                   "ValueError", name="inv_singular_batch_element"))
cases.append(error("linalg_inv", [rnd((3, 4), F64)], "ShapeError", name="inv_not_square"))
cases.append(error("linalg_inv", [rnd((4,), F64)], "ShapeError", name="inv_1d"))
cases.append(error("linalg_inv", [rnd((3, 3), torch.int64)], "DTypeError", name="inv_int"))

add("linalg_solve", torch.linalg.solve, [well((2, 4, 4)), rnd((2, 4, 3))], name="solve_batched")
add("linalg_solve", torch.linalg.solve, [well((2, 1, 3, 3)), rnd((4, 3, 2))], name="solve_broadcast")
add("linalg_solve", torch.linalg.solve, [well((3, 3)), rnd((3,))], name="solve_vector")
add("linalg_solve", torch.linalg.solve, [well((2, 3, 3)), rnd((2, 3))], name="solve_batched_vectors")
add("linalg_solve", lambda a, b: torch.linalg.solve(a, b, left=False), [well((3, 3)), rnd((2, 3))],
    attrs={"left": False}, name="solve_right")
add("linalg_solve", torch.linalg.solve, [In(well((4, 4)), [["transpose", 0, 1]]), In(rnd((3, 4)), [["transpose", 0, 1]])],
    name="solve_noncontiguous")
add("linalg_solve", torch.linalg.solve, [rnd((0, 3, 3)), rnd((0, 3, 2))], name="solve_empty_batch")
add("linalg_solve", torch.linalg.solve, [rnd((0, 0)), rnd((0, 2))], name="solve_0x0")
cases.append(error("linalg_solve", [torch.tensor([[1., 2.], [2., 4.]], dtype=F64), rnd((2, 1), F64)], "ValueError",
                   name="solve_singular"))
cases.append(error("linalg_solve", [well((3, 3)), rnd((4, 2), F64)], "ShapeError", name="solve_shape_mismatch"))
cases.append(error("linalg_solve", [rnd((3, 2), F64), rnd((3, 2), F64)], "ShapeError", name="solve_not_square"))
cases.append(error("linalg_solve", [well((3, 3)), rnd((3, 2), F32)], "DTypeError", name="solve_dtype_mismatch"))

add("linalg_det", torch.linalg.det, [well((2, 3, 3))], name="det_batched")
add("linalg_det", torch.linalg.det, [rnd((4, 4), F64)], name="det_random")
add("linalg_det", torch.linalg.det, [torch.tensor([[1., 2.], [2., 4.]], dtype=F64)], name="det_singular")
add("linalg_det", torch.linalg.det, [rnd((0, 0))], name="det_0x0")
add("linalg_det", torch.linalg.det, [In(rnd((3, 3), F64), [["transpose", 0, 1]])], name="det_transposed")
for dt in [F32, F64]:
    add("linalg_slogdet", torch.linalg.slogdet, [rnd((2, 4, 4), dt)], dt, name="slogdet_" + tname(dt))
add("linalg_slogdet", torch.linalg.slogdet, [rnd((0, 0))], name="slogdet_0x0")
cases.append(error("linalg_det", [rnd((2, 3), F64)], "ShapeError", name="det_not_square"))

# --- cholesky ---
for dt in [F32, F64]:
    add("linalg_cholesky", torch.linalg.cholesky, [spd((4, 4), dt)], dt, name="cholesky_" + tname(dt))
add("linalg_cholesky", lambda a: torch.linalg.cholesky(a, upper=True), [spd((2, 3, 3))], attrs={"upper": True},
    name="cholesky_upper_batched")
add("linalg_cholesky", torch.linalg.cholesky, [rnd((0, 0))], name="cholesky_0x0")
add("linalg_cholesky", torch.linalg.cholesky, [rnd((0, 2, 2))], name="cholesky_empty_batch")
cases.append(error("linalg_cholesky", [-torch.eye(3, dtype=F64)], "ValueError", name="cholesky_not_pd"))
cases.append(error("linalg_cholesky", [rnd((2, 3), F64)], "ShapeError", name="cholesky_not_square"))

# --- qr ---
for mode in ["reduced", "complete", "r"]:
    for shape in [(5, 3), (3, 5), (4, 4)]:
        add("linalg_qr", qr_fixed(mode), [rnd(shape, F64)], attrs={"mode": mode},
            name="qr_%s_%dx%d" % (mode, shape[0], shape[1]))
add("linalg_qr", qr_fixed("reduced"), [rnd((2, 4, 3), F32)], F32, attrs={"mode": "reduced"}, name="qr_batched_f32")
add("linalg_qr", qr_fixed("reduced"), [In(rnd((3, 4), F64), [["transpose", 0, 1]])], attrs={"mode": "reduced"},
    name="qr_transposed")
add("linalg_qr", qr_fixed("reduced"), [rnd((0, 3, 2), F64)], attrs={"mode": "reduced"}, name="qr_empty_batch")
cases.append(error("linalg_qr", [rnd((3,), F64)], "ShapeError", name="qr_1d"))

# --- svd / svdvals ---
for full in [False, True]:
    for shape in [(5, 3), (3, 5), (4, 4), (2, 3, 2)]:
        add("linalg_svd", svd_fixed(full), [rnd(shape, F64)], attrs={"full_matrices": full},
            name="svd_%s_%s" % ("full" if full else "reduced", "x".join(map(str, shape))))
add("linalg_svd", svd_fixed(False), [rnd((6, 4), F32)], F32, attrs={"full_matrices": False}, name="svd_f32")
add("linalg_svd", svd_fixed(False), [In(rnd((4, 6), F64), [["transpose", 0, 1]])], attrs={"full_matrices": False},
    name="svd_transposed")
add("linalg_svd", svd_fixed(False), [rnd((0, 3, 3), F64)], attrs={"full_matrices": False}, name="svd_empty_batch")
add("linalg_svdvals", torch.linalg.svdvals, [rnd((2, 5, 3), F64)], name="svdvals_batched")
add("linalg_svdvals", torch.linalg.svdvals, [rnd((3, 6), F32)], F32, name="svdvals_f32")
add("linalg_svdvals", torch.linalg.svdvals, [torch.zeros(3, 3, dtype=F64)], name="svdvals_zero")

# --- eigh / eigvalsh ---
for uplo in ["L", "U"]:
    add("linalg_eigh", eigh_fixed(uplo), [sym((4, 4))], attrs={"UPLO": uplo}, name="eigh_" + uplo)
# Only the named triangle is read: the other one holds noise.
add("linalg_eigh", eigh_fixed("L"), [torch.tril(sym((4, 4))) + torch.triu(rnd((4, 4), F64), 1)], attrs={"UPLO": "L"},
    name="eigh_lower_only")
add("linalg_eigh", eigh_fixed("L"), [sym((2, 3, 3), F32)], F32, attrs={"UPLO": "L"}, name="eigh_batched_f32")
add("linalg_eigh", eigh_fixed("L"), [rnd((0, 0), F64)], attrs={"UPLO": "L"}, name="eigh_0x0")
add("linalg_eigvalsh", torch.linalg.eigvalsh, [sym((2, 5, 5))], name="eigvalsh_batched")
add("linalg_eigvalsh", lambda a: torch.linalg.eigvalsh(a, UPLO="U"), [sym((3, 3))], attrs={"UPLO": "U"},
    name="eigvalsh_upper")
cases.append(error("linalg_eigh", [rnd((3, 4), F64)], "ShapeError", name="eigh_not_square"))
cases.append(error("linalg_eigh", [sym((3, 3))], "ValueError", attrs={"UPLO": "X"}, name="eigh_bad_uplo"))

# --- lu_factor / lu_solve ---
for dt in [F32, F64]:
    add("linalg_lu_factor", torch.linalg.lu_factor, [rnd((4, 4), dt)], dt, name="lu_factor_" + tname(dt))
add("linalg_lu_factor", torch.linalg.lu_factor, [rnd((2, 3, 3), F64)], name="lu_factor_batched")
add("linalg_lu_factor", torch.linalg.lu_factor, [rnd((5, 3), F64)], name="lu_factor_tall")
add("linalg_lu_factor", torch.linalg.lu_factor, [rnd((3, 5), F64)], name="lu_factor_wide")
cases.append(error("linalg_lu_factor", [torch.tensor([[1., 2.], [2., 4.]], dtype=F64)], "ValueError",
                   name="lu_factor_singular"))
for adjoint in [False, True]:
    for left in [True, False]:
        a = well((2, 3, 3))
        lu, piv = torch.linalg.lu_factor(a)
        b = rnd((2, 3, 2) if left else (2, 2, 3), F64)
        add("linalg_lu_solve", lambda l, p, bb, left=left, adjoint=adjoint: torch.linalg.lu_solve(l, p, bb, left=left, adjoint=adjoint),
            [lu, piv, b], attrs={"left": left, "adjoint": adjoint},
            name="lu_solve_%s%s" % ("left" if left else "right", "_adjoint" if adjoint else ""))

# --- solve_triangular ---
for upper in [False, True]:
    for left in [True, False]:
        for unit in [False, True]:
            a = well((3, 3))
            b = rnd((3, 2) if left else (2, 3), F64)
            add("linalg_solve_triangular",
                lambda aa, bb, upper=upper, left=left, unit=unit: torch.linalg.solve_triangular(
                    aa, bb, upper=upper, left=left, unitriangular=unit),
                [a, b], attrs={"upper": upper, "left": left, "unitriangular": unit},
                name="solve_triangular_%s_%s%s" % ("upper" if upper else "lower", "left" if left else "right",
                                                   "_unit" if unit else ""))
add("linalg_solve_triangular", lambda aa, bb: torch.linalg.solve_triangular(aa, bb, upper=False),
    [well((2, 4, 4), F32), rnd((2, 4, 3), F32)], F32, attrs={"upper": False}, name="solve_triangular_batched_f32")

# --- lstsq / pinv / matrix_rank ---
for driver in ["gelsy", "gels", "gelsd", "gelss"]:
    add("linalg_lstsq", lambda a, b, d=driver: torch.linalg.lstsq(a, b, driver=d), [rnd((6, 3), F64), rnd((6, 2), F64)],
        attrs={"driver": driver}, name="lstsq_tall_" + driver)
add("linalg_lstsq", torch.linalg.lstsq, [rnd((2, 5, 3), F64), rnd((2, 5, 2), F64)], name="lstsq_batched_default")
add("linalg_lstsq", lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd"), [rnd((3, 5), F64), rnd((3, 2), F64)],
    attrs={"driver": "gelsd"}, name="lstsq_wide_gelsd")
add("linalg_lstsq", lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd"), [well((4, 4), F32), rnd((4, 1), F32)], F32,
    attrs={"driver": "gelsd"}, name="lstsq_square_f32")
add("linalg_lstsq", torch.linalg.lstsq, [rnd((5, 3), F64), rnd((5,), F64)], name="lstsq_vector")
add("linalg_lstsq", lambda a, b: torch.linalg.lstsq(a, b, driver="gelsd"), [rnd((2, 5, 3), F64), rnd((2, 5), F64)],
    attrs={"driver": "gelsd"}, name="lstsq_vectors_gelsd")
for shape in [(5, 3), (3, 5), (4, 4)]:
    add("linalg_pinv", torch.linalg.pinv, [rnd(shape, F64)], name="pinv_%dx%d" % shape)
add("linalg_pinv", lambda a: torch.linalg.pinv(a, hermitian=True), [sym((4, 4))], attrs={"hermitian": True},
    name="pinv_hermitian")
add("linalg_pinv", torch.linalg.pinv, [rnd((2, 3, 2), F32)], F32, name="pinv_batched_f32")
lowrank = rnd((5, 2), F64) @ rnd((2, 4), F64)
add("linalg_pinv", torch.linalg.pinv, [lowrank], name="pinv_rank_deficient")
add("linalg_matrix_rank", torch.linalg.matrix_rank, [lowrank], name="matrix_rank_deficient")
add("linalg_matrix_rank", torch.linalg.matrix_rank, [rnd((2, 3, 4), F64)], name="matrix_rank_batched")
add("linalg_matrix_rank", lambda a: torch.linalg.matrix_rank(a, atol=1.0, rtol=0.0), [rnd((4, 4), F64)],
    attrs={"atol": 1.0, "rtol": 0.0}, name="matrix_rank_atol")
add("linalg_matrix_rank", lambda a: torch.linalg.matrix_rank(a, hermitian=True), [sym((4, 4))],
    attrs={"hermitian": True}, name="matrix_rank_hermitian")

# --- norms ---
for ord_ in ["fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf")]:
    add("linalg_matrix_norm", lambda a, o=ord_: torch.linalg.matrix_norm(a, ord=o), [rnd((2, 3, 4), F64)],
        attrs={"ord": ord_ if isinstance(ord_, str) else ("inf" if ord_ == float("inf") else "-inf" if ord_ == float("-inf") else ord_)},
        name="matrix_norm_%s" % ord_)
add("linalg_matrix_norm", lambda a: torch.linalg.matrix_norm(a, ord=1, dim=(0, 2), keepdim=True), [rnd((3, 2, 4), F64)],
    attrs={"ord": 1, "dim": [0, 2], "keepdim": True}, name="matrix_norm_dims_keepdim")
add("linalg_matrix_norm", lambda a: torch.linalg.matrix_norm(a, ord="nuc", keepdim=True), [rnd((3, 4), F32)], F32,
    attrs={"ord": "nuc", "keepdim": True}, name="matrix_norm_nuc_keepdim_f32")
for ord_ in [2, 1, 3.5, 0, float("inf"), float("-inf")]:
    add("linalg_vector_norm", lambda x, o=ord_: torch.linalg.vector_norm(x, ord=o), [rnd((3, 4), F64)],
        attrs={"ord": "inf" if ord_ == float("inf") else "-inf" if ord_ == float("-inf") else ord_},
        name="vector_norm_%s" % ord_)
add("linalg_vector_norm", lambda x: torch.linalg.vector_norm(x, dim=(0, 2), keepdim=True), [rnd((2, 3, 4), F64)],
    attrs={"ord": 2, "dim": [0, 2], "keepdim": True}, name="vector_norm_dims")
add("linalg_vector_norm", lambda x: torch.linalg.vector_norm(x, dim=(1,), dtype=F64), [rnd((3, 4), F32)], F64,
    attrs={"ord": 2, "dim": [1], "dtype": "float64"}, name="vector_norm_dtype")

# --- cross / trace / diag / diag_embed / matrix_power / matrix_exp ---
add("linalg_cross", torch.linalg.cross, [rnd((4, 3), F64), rnd((4, 3), F64)], name="cross")
add("linalg_cross", lambda a, b: torch.linalg.cross(a, b, dim=0), [rnd((3, 2), F64), rnd((3, 1), F64)],
    attrs={"dim": 0}, name="cross_dim0_broadcast")
add("linalg_cross", torch.linalg.cross, [rnd((2, 3), torch.int64), rnd((2, 3), torch.int64)], name="cross_int64")
cases.append(error("linalg_cross", [rnd((2, 4), F64), rnd((2, 4), F64)], "ShapeError", name="cross_not_3"))
add("trace", torch.trace, [rnd((3, 4), F64)], name="trace")
add("trace", torch.trace, [rnd((3, 3), torch.int32)], name="trace_int32")
add("trace", torch.trace, [In(rnd((4, 3), F64), [["transpose", 0, 1]])], name="trace_transposed")
cases.append(error("trace", [rnd((2, 2, 2), F64)], "ShapeError", name="trace_3d"))
for k in [0, 1, -2]:
    add("diag", lambda x, k=k: torch.diag(x, k), [rnd((3,), F64)], attrs={"diagonal": k}, name="diag_vector_%d" % k)
    add("diag", lambda x, k=k: torch.diag(x, k), [rnd((3, 4), F64)], attrs={"diagonal": k}, name="diag_matrix_%d" % k)
for k, d1, d2 in [(0, -2, -1), (1, -2, -1), (-1, 0, 2), (0, 2, 0)]:
    add("diag_embed", lambda x, k=k, d1=d1, d2=d2: torch.diag_embed(x, k, d1, d2), [rnd((2, 3), F64)],
        attrs={"offset": k, "dim1": d1, "dim2": d2}, name="diag_embed_%d_%d_%d" % (k, d1, d2))
for n in [0, 1, 2, 3, 6, -1, -2]:
    add("matrix_power", lambda a, n=n: torch.linalg.matrix_power(a, n), [well((2, 3, 3)) / 3], attrs={"n": n},
        name="matrix_power_%d" % n)
add("matrix_power", lambda a: torch.linalg.matrix_power(a, 3), [rnd((3, 3), torch.int64, lo=-1, hi=1)],
    attrs={"n": 3}, name="matrix_power_int64")
cases.append(error("matrix_power", [rnd((2, 3), F64)], "ShapeError", attrs={"n": 2}, name="matrix_power_not_square"))
for dt in [F32, F64]:
    add("matrix_exp", torch.linalg.matrix_exp, [rnd((4, 4), dt)], dt, name="matrix_exp_" + tname(dt))
add("matrix_exp", torch.linalg.matrix_exp, [rnd((2, 3, 3), F64, lo=-4, hi=4)], name="matrix_exp_large_norm")
add("matrix_exp", torch.linalg.matrix_exp, [torch.zeros(2, 2, dtype=F64)], name="matrix_exp_zero")
add("matrix_exp", torch.linalg.matrix_exp, [rnd((0, 0), F64)], name="matrix_exp_0x0")

write("linalg_decomp", cases)
