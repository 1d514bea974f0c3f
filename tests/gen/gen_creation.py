#!/usr/bin/python3
"""Golden cases for creation and random ops -> tests/data/creation.json. Random ops are checked by
shape, dtype and distribution statistics (ember's Philox streams differ from torch's mt19937)."""
import math

import torch

from common import ALL, FLOATS, NAMES, case, error, rnd, stats, write

cases = []
dn = lambda d: NAMES[d]

for dt in ALL:
    cases.append(case("zeros", lambda: torch.zeros(2, 3, dtype=dt), [], {"shape": [2, 3], "dtype": dn(dt)}, name=f"zeros_{dt}"))
    cases.append(case("ones", lambda: torch.ones(4, dtype=dt), [], {"shape": [4], "dtype": dn(dt)}, name=f"ones_{dt}"))
    cases.append(case("full", lambda: torch.full((2, 2), 3 if dt != torch.bool else True, dtype=dt), [],
                      {"shape": [2, 2], "value": 3 if dt != torch.bool else True, "dtype": dn(dt)}, name=f"full_{dt}"))
    cases.append(case("eye", lambda: torch.eye(3, 4).to(dt), [], {"n": 3, "m": 4, "dtype": dn(dt)}, name=f"eye_{dt}"))
    cases.append(stats("empty", [2, 0, 3], dt, {"shape": [2, 0, 3], "dtype": dn(dt)}))
cases.append(case("zeros", lambda: torch.zeros(()), [], {"shape": []}, name="zeros_0d"))
cases.append(case("zeros", lambda: torch.zeros(0, 4), [], {"shape": [0, 4]}, name="zeros_empty"))
cases.append(case("full", lambda: torch.full((3,), 2.5), [], {"shape": [3], "value": 2.5}, name="full_default_float"))
cases.append(case("full", lambda: torch.full((3,), 7), [], {"shape": [3], "value": 7}, name="full_default_int"))
cases.append(case("full", lambda: torch.full((2,), True), [], {"shape": [2], "value": True}, name="full_default_bool"))
cases.append(error("zeros", [], "ValueError", {"shape": [2, -1]}, name="zeros_negative"))
cases.append(error("full", [], "ValueError", {"shape": [-3], "value": 1}, name="full_negative"))
cases.append(case("eye", lambda: torch.eye(3), [], {"n": 3}, name="eye_square"))
cases.append(case("eye", lambda: torch.eye(0), [], {"n": 0}, name="eye_empty"))
cases.append(error("eye", [], "ValueError", {"n": -1}, name="eye_negative"))

for args, name in (((5,), "end"), ((2, 9, 3), "step"), ((10, 0, -3), "neg_step"), ((0.0, 1.0, 0.25), "float"),
                   ((-1, 1.5, 0.5), "mixed"), ((3, 3), "empty")):
    cases.append(case("arange", lambda a=args: torch.arange(*a), [], {"args": list(args)}, name="arange_" + name))
for dt in (torch.int32, torch.int16, torch.float64, torch.float16, torch.bfloat16, torch.uint8):
    cases.append(case("arange", lambda d=dt: torch.arange(0, 10, 2).to(d), [], {"args": [0, 10, 2], "dtype": dn(dt)}, name=f"arange_{dt}"))
cases.append(error("arange", [], "ValueError", {"args": [0, 10, 0]}, name="arange_zero_step"))
cases.append(error("arange", [], "ValueError", {"args": [10, 0, 1]}, name="arange_wrong_sign"))

for (s, e, n) in ((0, 1, 5), (-2, 2, 7), (3, -3, 4), (1, 1, 1), (0, 1, 0), (0, 10, 2)):
    cases.append(case("linspace", lambda s=s, e=e, n=n: torch.linspace(s, e, n), [], {"start": s, "end": e, "steps": n}, name=f"linspace_{s}_{e}_{n}"))
for dt in (torch.float64, torch.int64, torch.float16):
    cases.append(case("linspace", lambda d=dt: torch.linspace(-1, 7, 9, dtype=d) if d != torch.float16 else torch.linspace(-1, 7, 9).to(d), [], {"start": -1, "end": 7, "steps": 9, "dtype": dn(dt)}, name=f"linspace_{dt}"))
cases.append(error("linspace", [], "ValueError", {"start": 0, "end": 1, "steps": -1}, name="linspace_negative"))

for op, fn in (("zeros_like", torch.zeros_like), ("ones_like", torch.ones_like)):
    for dt in (torch.float32, torch.int32, torch.bool, torch.bfloat16):
        cases.append(case(op, fn, [rnd([2, 3], dt)], {}, name=f"{op}_{dt}"))
    cases.append(case(op, lambda t, f=fn: f(t, dtype=torch.float64), [rnd([2, 3], torch.int64)], {"dtype": "float64"}, name=op + "_dtype"))
cases.append(case("full_like", lambda t: torch.full_like(t, 4), [rnd([3], torch.int16)], {"value": 4}, name="full_like_int16"))
cases.append(case("full_like", lambda t: torch.full_like(t, 1.5, dtype=torch.float64), [rnd([3], torch.int16)], {"value": 1.5, "dtype": "float64"}, name="full_like_dtype"))
cases.append(stats("empty_like", [2, 3], torch.int32, {}, inputs=[rnd([2, 3], torch.int32)]))

N = 20000
U = 1 / math.sqrt(12)
for dt in FLOATS:
    cases.append(stats("rand", [N], dt, {"shape": [N], "dtype": dn(dt)}, mean=0.5, std=U, lo=0.0, hi=1.0, tol=0.02))
    cases.append(stats("randn", [N], dt, {"shape": [N], "dtype": dn(dt)}, mean=0.0, std=1.0, tol=0.05))
cases.append(stats("uniform", [N], torch.float64, {"shape": [N], "low": -2.0, "high": 4.0, "dtype": "float64"}, mean=1.0, std=6 * U, lo=-2.0, hi=4.0, tol=0.1))
cases.append(stats("normal", [N], torch.float32, {"shape": [N], "mean": 3.0, "std": 0.5}, mean=3.0, std=0.5, tol=0.05))
cases.append(error("normal", [], "ValueError", {"shape": [2], "mean": 0.0, "std": -1.0}, name="normal_negative_std"))
cases.append(error("rand", [], "DTypeError", {"shape": [2], "dtype": "int64"}, name="rand_int_dtype"))
for dt in (torch.int64, torch.int32, torch.uint8, torch.float32):
    cases.append(stats("randint", [N], dt, {"shape": [N], "low": 2, "high": 8, "dtype": dn(dt)}, mean=4.5, std=math.sqrt((36 - 1) / 12), lo=2, hi=7, tol=0.06))
cases.append(error("randint", [], "ValueError", {"shape": [2], "low": 5, "high": 5}, name="randint_empty_range"))
cases.append(stats("bernoulli", [N], torch.float32, {}, mean=0.3, std=math.sqrt(0.21), lo=0, hi=1, tol=0.02, inputs=[torch.full((N,), 0.3)]))
cases.append(stats("bernoulli", [N], torch.float64, {"p": 0.8}, mean=0.8, lo=0, hi=1, tol=0.02, inputs=[torch.zeros(N, dtype=torch.float64)]))
cases.append(error("bernoulli", [torch.zeros(3)], "ValueError", {"p": 1.5}, name="bernoulli_bad_p"))
cases.append(error("bernoulli", [torch.zeros(3, dtype=torch.int64)], "DTypeError", {}, name="bernoulli_int"))
cases.append(stats("rand_like", [N], torch.float64, {}, mean=0.5, std=U, lo=0, hi=1, tol=0.02, inputs=[torch.zeros(N, dtype=torch.float64)]))
cases.append(stats("randn_like", [N], torch.float32, {}, mean=0, std=1, tol=0.05, inputs=[torch.zeros(N)]))
cases.append(error("randn_like", [torch.zeros(3, dtype=torch.int64)], "DTypeError", {}, name="randn_like_int"))

write("creation", cases)
