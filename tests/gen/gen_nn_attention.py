"""Golden cases for the nn ops that need matmul: scaled_dot_product_attention and cdist's matmul
path (p = 2 with more than 25 rows) -> tests/data/nn_attention.json. torch 1.13 has no public
scaled_dot_product_attention, so the
reference is its definition evaluated in float64: softmax(q k^T * scale + mask) v."""
import math
import os
import sys

import torch

import common
from common import In, case, error, num, rnd, write

F32, F64, BF16 = torch.float32, torch.float64, torch.bfloat16
cases = []


def add(*cs):
    cases.extend(cs)


def sdpa(a):
    def run(q, k, v, mask):
        qd, kd, vd = q.double(), k.double(), v.double()
        scale = a["scale"] if "scale" in a else 1.0 / math.sqrt(q.size(-1))
        s = qd @ kd.transpose(-2, -1) * scale
        if a.get("is_causal"):
            keep = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril()
            s = s.masked_fill(~keep, float("-inf"))
        elif mask is not None:
            s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.double()
        return (torch.softmax(s, -1) @ vd).to(q.dtype)
    return run


OP = "scaled_dot_product_attention"
for dt in (F32, F64, BF16):
    add(case(OP, sdpa({}), [rnd([2, 3, 4, 8], dt), rnd([2, 3, 5, 8], dt), rnd([2, 3, 5, 6], dt), None], {},
             name=f"sdpa_{dt}"))
for name, a, shapes in (("causal", {"is_causal": True}, ([2, 4, 8], [2, 4, 8], [2, 4, 3])),
                        ("causal_rect", {"is_causal": True}, ([1, 3, 4], [1, 5, 4], [1, 5, 2])),
                        ("scale", {"scale": 0.3}, ([2, 4, 8], [2, 5, 8], [2, 5, 3])),
                        ("2d", {}, ([4, 8], [6, 8], [6, 5])),
                        ("bcast", {}, ([2, 3, 4, 8], [1, 5, 8], [5, 2]))):
    ins = [rnd(s, F32) for s in shapes]
    add(case(OP, sdpa(a), ins + [None], a, name=f"sdpa_{name}"))
bmask = torch.rand(4, 5, generator=torch.Generator().manual_seed(3)) > 0.3
bmask[:, 0] = True
add(case(OP, sdpa({}), [rnd([2, 4, 8], F32), rnd([2, 5, 8], F32), rnd([2, 5, 3], F32), bmask], {}, name="sdpa_bool_mask"))
fmask = rnd([2, 1, 4, 5], F32, -2, 0)
add(case(OP, sdpa({}), [rnd([2, 3, 4, 8], F32), rnd([2, 3, 5, 8], F32), rnd([2, 3, 5, 6], F32), fmask], {},
         name="sdpa_float_mask"))
rowmask = torch.ones(3, 4, dtype=torch.bool)
rowmask[1] = False
add(case(OP, sdpa({}), [rnd([3, 4], F32), rnd([4, 4], F32), rnd([4, 2], F32), rowmask], {}, name="sdpa_masked_row"))
add(case(OP, sdpa({}), [In(rnd([2, 4, 3, 8], F32), [["transpose", 1, 2]]), In(rnd([2, 5, 3, 8], F32), [["transpose", 1, 2]]),
                        In(rnd([2, 5, 3, 6], F32), [["transpose", 1, 2]]), None], {}, name="sdpa_noncontig"))
add(case(OP, sdpa({}), [rnd([0, 4, 8], F32), rnd([0, 5, 8], F32), rnd([0, 5, 3], F32), None], {}, name="sdpa_empty"))
q, k, v = rnd([2, 4, 8], F32), rnd([2, 5, 8], F32), rnd([2, 5, 3], F32)
add(error(OP, [q, rnd([2, 5, 7], F32), v, None], "ShapeError", {}, name="sdpa_embed_mismatch"))
add(error(OP, [q, k, rnd([2, 6, 3], F32), None], "ShapeError", {}, name="sdpa_seq_mismatch"))
add(error(OP, [rnd([8], F32), k, v, None], "ShapeError", {}, name="sdpa_rank"))
add(error(OP, [q, k, v, rnd([3, 5], F32)], "ShapeError", {}, name="sdpa_mask_shape"))
add(error(OP, [q.long(), k.long(), v.long(), None], "DTypeError", {}, name="sdpa_int"))
add(error(OP, [q, k.double(), v, None], "DTypeError", {}, name="sdpa_mixed_dtypes"))
add(error(OP, [q, k, v, torch.ones(4, 5, dtype=torch.int64)], "DTypeError", {}, name="sdpa_int_mask"))
add(error(OP, [q, k, v, bmask], "ValueError", {"is_causal": True}, name="sdpa_mask_and_causal"))
add(error(OP, [q, k, v, None], "ValueError", {"dropout_p": 1.0}, name="sdpa_dropout_p"))

# cdist with more than 25 rows takes the matmul expansion (like torch's default compute mode).
for name, shapes in (("rows", ([30, 5], [7, 5])), ("cols", ([4, 5], [40, 5])), ("batched", ([2, 26, 3], [2, 27, 3]))):
    x, y = rnd(shapes[0], F32), rnd(shapes[1], F32, -2, 2)
    add(case("cdist", lambda u, w: torch.cdist(u, w), [x, y], {"p": num(2.0)}, name=f"cdist_mm_{name}", atol=1e-4,
             rtol=1e-4))
add(case("cdist", lambda u, w: torch.cdist(u, w), [rnd([30, 4], F64), rnd([3, 4], F64)], {"p": 2.0}, name="cdist_mm_f64"))

write("nn_attention", cases)
