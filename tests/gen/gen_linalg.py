"""Golden cases for the matrix products: mm, bmm, matmul, linear, outer, dot, einsum.
Run with /usr/bin/python3 (torch 1.13); writes tests/data/linalg.json.
torch 1.13 has no float16 matmul on the CPU, so float16 goldens are computed in float32 and
rounded once, which is what ember (and newer torch) does."""
import torch
import torch.nn.functional as F

from common import In, case, error, rnd, via_f32, write

cases = []
F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I64, I32 = torch.int64, torch.int32


def add(op, fn, inputs, dtype=None, **kw):
    if dtype == F16:
        fn = via_f32(fn)
    cases.append(case(op, fn, inputs, **kw))


# --- mm: every dtype torch supports (plus float16 through float32) ---
for dt in [F32, F64, F16, BF16, I64, I32, torch.int16, torch.int8, torch.uint8]:
    add("mm", torch.mm, [rnd((3, 4), dt), rnd((4, 5), dt, lo=-2, hi=2)], dtype=dt,
        name="mm_" + str(dt).split(".")[1])
add("mm", torch.mm, [In(rnd((4, 3)), [["transpose", 0, 1]]), rnd((4, 2))], name="mm_a_transposed")
add("mm", torch.mm, [rnd((3, 4)), In(rnd((5, 4)), [["transpose", 0, 1]])], name="mm_b_transposed")
add("mm", torch.mm, [In(rnd((4, 6)), [["slice", 1, 0, 6, 2]]), In(rnd((3, 5)), [["slice", 1, 1, 5, 1]])],
    name="mm_strided")
# Sizes past one register tile and one cache block (edges in every direction).
add("mm", torch.mm, [rnd((25, 19)), rnd((19, 35))], name="mm_tile_edges", rtol=1e-4, atol=1e-4)
# (Blocking past the cache-block sizes is checked against a reference loop in linalg_test.cpp.)
add("mm", torch.mm, [rnd((3, 0)), rnd((0, 4))], name="mm_k0_zeros")
add("mm", torch.mm, [rnd((0, 3)), rnd((3, 4))], name="mm_m0")
add("mm", torch.mm, [rnd((1, 5)), rnd((5, 7))], name="mm_row_vector")
add("mm", torch.mm, [rnd((6, 5)), rnd((5, 1))], name="mm_column_vector")
cases.append(error("mm", [rnd((2, 3)), rnd((2, 3))], "ShapeError", name="mm_inner_mismatch"))
cases.append(error("mm", [rnd((3,)), rnd((3, 2))], "ShapeError", name="mm_1d"))
cases.append(error("mm", [rnd((2, 2, 3)), rnd((3, 2))], "ShapeError", name="mm_3d"))
cases.append(error("mm", [rnd((2, 3)), rnd((3, 2), F64)], "DTypeError", name="mm_dtype_mismatch"))
cases.append(error("mm", [rnd((2, 3), torch.bool), rnd((3, 2), torch.bool)], "DTypeError", name="mm_bool"))

# --- bmm ---
for dt in [F32, F64, BF16, I64]:
    add("bmm", torch.bmm, [rnd((2, 3, 4), dt), rnd((2, 4, 5), dt, lo=-2, hi=2)], name="bmm_" + str(dt).split(".")[1])
add("bmm", torch.bmm, [In(rnd((3, 2, 4)), [["permute", [1, 0, 2]]]), In(rnd((2, 5, 4)), [["transpose", 1, 2]])],
    name="bmm_noncontiguous")
add("bmm", torch.bmm, [In(rnd((1, 3, 4)), [["expand", [5, 3, 4]]]), rnd((5, 4, 2))], name="bmm_expanded")
add("bmm", torch.bmm, [rnd((0, 3, 4)), rnd((0, 4, 2))], name="bmm_empty_batch")
add("bmm", torch.bmm, [rnd((2, 3, 0)), rnd((2, 0, 2))], name="bmm_k0")
cases.append(error("bmm", [rnd((3, 4)), rnd((4, 5))], "ShapeError", name="bmm_2d"))
cases.append(error("bmm", [rnd((2, 3, 4)), rnd((3, 4, 5))], "ShapeError", name="bmm_batch_mismatch"))
cases.append(error("bmm", [rnd((2, 3, 4)), rnd((2, 5, 5))], "ShapeError", name="bmm_inner_mismatch"))
cases.append(error("bmm", [rnd((2, 3, 4)), rnd((2, 4, 5), I64)], "DTypeError", name="bmm_dtype_mismatch"))

# --- matmul: every rank combination ---
shapes = [((4,), (4,)), ((4,), (4, 3)), ((3, 4), (4,)), ((3, 4), (4, 2)), ((2, 3, 4), (4,)),
          ((4,), (2, 4, 3)), ((2, 3, 4), (4, 5)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (2, 4, 5)),
          ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (2, 2, 4, 5)), ((3, 1, 2, 4), (1, 5, 4, 3))]
for sa, sb in shapes:
    add("matmul", torch.matmul, [rnd(sa), rnd(sb)], name="matmul_%dd_%dd_%s_%s" % (
        len(sa), len(sb), "x".join(map(str, sa)), "x".join(map(str, sb))))
for dt in [F64, F16, BF16, I64, I32]:
    add("matmul", torch.matmul, [rnd((2, 3, 4), dt), rnd((4, 3), dt, lo=-2, hi=2)], dtype=dt,
        name="matmul_" + str(dt).split(".")[1])
    add("matmul", torch.matmul, [rnd((5,), dt), rnd((5,), dt, lo=-2, hi=2)], dtype=dt,
        name="matmul_dot_" + str(dt).split(".")[1])
add("matmul", torch.matmul, [In(rnd((2, 4, 3)), [["transpose", 1, 2]]), rnd((4, 2))], name="matmul_folded_transposed")
add("matmul", torch.matmul, [In(rnd((4, 2, 3)), [["permute", [1, 0, 2]]]), In(rnd((2, 5, 3)), [["transpose", 1, 2]])],
    name="matmul_batched_noncontiguous")
add("matmul", torch.matmul, [In(rnd((3, 1, 4)), [["expand", [3, 2, 4]]]), rnd((4, 3))], name="matmul_expanded_rows")
add("matmul", torch.matmul, [In(rnd((8,)), [["slice", 0, 0, 8, 2]]), In(rnd((3, 4)), [["transpose", 0, 1]])],
    name="matmul_vec_strided")
add("matmul", torch.matmul, [rnd((2, 3, 0)), rnd((0, 4))], name="matmul_k0_zeros")
add("matmul", torch.matmul, [rnd((0,)), rnd((0,))], name="matmul_empty_dot")
add("matmul", torch.matmul, [rnd((0, 3, 4)), rnd((4, 2))], name="matmul_empty_batch")
add("matmul", torch.matmul, [rnd((5, 70)), In(rnd((20, 70)), [["transpose", 0, 1]])], name="matmul_b_transposed",
    rtol=1e-4, atol=1e-4)
add("matmul", torch.matmul, [rnd((70,)), rnd((70, 20))], name="matmul_vec_mat", rtol=1e-4, atol=1e-4)
add("matmul", torch.matmul, [rnd((20, 70)), In(rnd((3, 70)), [["select", 0, 1]])], name="matmul_mat_vec",
    rtol=1e-4, atol=1e-4)
add("matmul", torch.matmul, [In(rnd((70,)), [["slice", 0, 0, 70, 1]]), In(rnd((20, 70)), [["transpose", 0, 1]])],
    name="matmul_vec_mat_transposed", rtol=1e-4, atol=1e-4)
cases.append(error("matmul", [rnd(()), rnd((2, 2))], "ShapeError", name="matmul_0d"))
cases.append(error("matmul", [rnd((2, 3)), rnd((4, 2))], "ShapeError", name="matmul_inner_mismatch"))
cases.append(error("matmul", [rnd((3,)), rnd((4,))], "ShapeError", name="matmul_vec_mismatch"))
cases.append(error("matmul", [rnd((2, 3, 4)), rnd((3, 4, 2))], "ShapeError", name="matmul_batch_mismatch"))
cases.append(error("matmul", [rnd((2, 3)), rnd((3, 2), F64)], "DTypeError", name="matmul_dtype_mismatch"))
cases.append(error("matmul", [rnd((2, 3)), rnd((3, 2), I64)], "DTypeError", name="matmul_float_int"))
cases.append(error("matmul", [rnd((2, 3), torch.bool), rnd((3, 2), torch.bool)], "DTypeError", name="matmul_bool"))

# --- linear ---
for dt in [F32, F64, BF16, F16, I64]:
    add("linear", F.linear, [rnd((2, 3, 4), dt), rnd((5, 4), dt, lo=-2, hi=2), rnd((5,), dt)], dtype=dt,
        name="linear_" + str(dt).split(".")[1])
add("linear", F.linear, [rnd((3, 4)), rnd((5, 4)), None], name="linear_no_bias")
add("linear", F.linear, [rnd((4,)), rnd((5, 4)), rnd((5,))], name="linear_vector_input")
add("linear", F.linear, [rnd((3, 4)), rnd((4,)), None], name="linear_vector_weight")
add("linear", F.linear, [rnd((4,)), rnd((4,)), rnd(())], name="linear_vector_vector")
add("linear", F.linear, [In(rnd((4, 3)), [["transpose", 0, 1]]), In(rnd((4, 5)), [["transpose", 0, 1]]), rnd((5,))],
    name="linear_noncontiguous")
add("linear", F.linear, [rnd((3, 0)), rnd((5, 0)), rnd((5,))], name="linear_k0_bias_only")
add("linear", F.linear, [rnd((3, 4)), rnd((5, 4)), rnd((3, 5))], name="linear_bias_matrix")
cases.append(error("linear", [rnd((3, 4)), rnd((5, 3)), None], "ShapeError", name="linear_inner_mismatch"))
cases.append(error("linear", [rnd((3, 4)), rnd((5, 4)), rnd((4,))], "ShapeError", name="linear_bias_shape"))
cases.append(error("linear", [rnd((3, 4)), rnd((5, 4), F64), None], "DTypeError", name="linear_dtype_mismatch"))
cases.append(error("linear", [rnd((3, 4)), rnd((5, 4)), rnd((5,), F64)], "DTypeError", name="linear_bias_dtype"))

# --- outer (a broadcast product: promotes like mul) ---
add("outer", torch.outer, [rnd((3,)), rnd((4,))])
add("outer", torch.outer, [rnd((3,), I64), rnd((2,), F64)], name="outer_promotes")
add("outer", torch.outer, [rnd((3,), torch.bool), rnd((2,), torch.bool)], name="outer_bool")
add("outer", torch.outer, [In(rnd((6,)), [["slice", 0, 0, 6, 2]]), rnd((0,))], name="outer_empty")
cases.append(error("outer", [rnd((3, 2)), rnd((4,))], "ShapeError", name="outer_2d"))

# --- dot ---
for dt in [F32, F64, BF16, F16, I64, I32, torch.int8]:
    add("dot", torch.dot, [rnd((7,), dt), rnd((7,), dt, lo=-2, hi=2)], dtype=dt, name="dot_" + str(dt).split(".")[1])
add("dot", torch.dot, [rnd((150,)), rnd((150,))], name="dot_long", rtol=1e-4, atol=1e-4)
add("dot", torch.dot, [In(rnd((10,)), [["slice", 0, 0, 10, 2]]), In(rnd((3, 5)), [["select", 0, 1]])],
    name="dot_strided")
add("dot", torch.dot, [rnd((0,)), rnd((0,))], name="dot_empty")
cases.append(error("dot", [rnd((3,)), rnd((4,))], "ShapeError", name="dot_length_mismatch"))
cases.append(error("dot", [rnd((2, 3)), rnd((2, 3))], "ShapeError", name="dot_2d"))
cases.append(error("dot", [rnd((3,)), rnd((3,), F64)], "DTypeError", name="dot_dtype_mismatch"))


# --- einsum ---
def ein(eq, inputs, name, **kw):
    cases.append(case("einsum", lambda *xs: torch.einsum(eq, *xs), inputs, {"equation": eq},
                      name="einsum_" + name, **kw))


ein("ij,jk->ik", [rnd((3, 4)), rnd((4, 5))], "matrix_product")
ein("ij,jk", [rnd((3, 4)), rnd((4, 5))], "implicit_output")
ein("bij,bjk->bik", [rnd((2, 3, 4)), rnd((2, 4, 5))], "batch_matmul")
ein("ii", [rnd((4, 4))], "trace")
ein("ii->i", [rnd((4, 4))], "diagonal")
ein("i,j->ij", [rnd((3,)), rnd((4,))], "outer")
ein("ij->ji", [rnd((3, 4))], "transpose")
ein("ij->", [rnd((3, 4))], "sum_all")
ein("ij->j", [rnd((3, 4))], "sum_rows")
ein("...ij,...jk", [rnd((2, 3, 4)), rnd((4, 5))], "broadcast_ellipsis")
ein("...ij,...jk->...ik", [rnd((2, 1, 3, 4)), rnd((3, 4, 2))], "broadcast_batch")
ein("b...,b...->b", [rnd((2, 3, 4)), rnd((2, 3, 4))], "ellipsis_middle")
ein("...ij->ij", [rnd((2, 3, 4))], "ellipsis_summed")
ein("i,i->", [rnd((5,)), rnd((5,))], "dot")
ein("i,i", [rnd((5,), I64), rnd((5,), I64)], "dot_int64")
ein("ij,ij->ij", [rnd((2, 3)), rnd((1, 3))], "hadamard_broadcast")
ein("bhqd,bhkd->bhqk", [rnd((2, 2, 3, 4)), rnd((2, 2, 5, 4))], "attention_scores")
ein("iij->j", [rnd((3, 3, 2))], "partial_trace")
ein("ijk,jl,kl->il", [rnd((2, 3, 4)), rnd((3, 5)), rnd((4, 5))], "three_operands")
ein("ij,kl->", [rnd((2, 3)), rnd((4, 5))], "sum_of_products")
ein("Ab,bc->Ac", [rnd((2, 3)), rnd((3, 2))], "uppercase")
ein("ij,jk->ik", [In(rnd((4, 3)), [["transpose", 0, 1]]), In(rnd((4, 5)), [["slice", 1, 0, 5, 1]])], "noncontiguous")
ein("ij,jk->ik", [rnd((2, 3), F64), rnd((3, 2), F64)], "float64")
ein("ij,jk->ik", [rnd((3, 0)), rnd((0, 2))], "empty_contraction")
ein("ij,jk->ik", [rnd((2, 3)), rnd((3, 0))], "empty_output")
ein("bij,bjk->bik", [rnd((0, 2, 3)), rnd((1, 3, 2))], "empty_batch_broadcast")
ein(" i j , j k -> i k ", [rnd((2, 3)), rnd((3, 2))], "spaces")
cases.append(error("einsum", [rnd((2, 3))], "ValueError", {"equation": "ij,jk->ik"}, name="einsum_too_few_operands"))
cases.append(error("einsum", [rnd((2, 3))], "ValueError", {"equation": "ijk"}, name="einsum_rank_mismatch"))
cases.append(error("einsum", [rnd((2, 3))], "ValueError", {"equation": "i1"}, name="einsum_bad_char"))
cases.append(error("einsum", [rnd((2, 3))], "ValueError", {"equation": "i.j"}, name="einsum_stray_dot"))
cases.append(error("einsum", [rnd((2, 2))], "ValueError", {"equation": "ij->ii"}, name="einsum_repeated_output"))
cases.append(error("einsum", [rnd((2, 2))], "ValueError", {"equation": "ij->k"}, name="einsum_unknown_output"))
cases.append(error("einsum", [rnd((2, 2))], "ValueError", {"equation": "ij->j->i"}, name="einsum_two_arrows"))
cases.append(error("einsum", [rnd((2, 3))], "ShapeError", {"equation": "ii"}, name="einsum_diagonal_sizes"))
cases.append(error("einsum", [rnd((2, 3)), rnd((2, 4))], "ShapeError", {"equation": "ij,jk"},
                   name="einsum_size_mismatch"))
cases.append(error("einsum", [rnd((2, 3)), rnd((3, 2), F64)], "DTypeError", {"equation": "ij,jk"},
                   name="einsum_dtype_mismatch"))

write("linalg", cases)
