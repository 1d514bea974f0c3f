"""Golden cases for the losses -> tests/data/loss.json. Run with /usr/bin/python3 (torch 1.13)."""
import torch
import torch.nn.functional as F

from common import In, case, error, rnd, write

F32, F64, BF16, F16 = torch.float32, torch.float64, torch.bfloat16, torch.float16
I64 = torch.int64
REDS = ("mean", "sum", "none")
cases = []


def add(*cs):
    cases.extend(cs)


def targets(shape, classes, seed, ignore=None):
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(0, classes, shape, generator=g)
    if ignore is not None:
        t.view(-1)[::3] = ignore
    return t


def probs(shape, dim=1, dtype=F32):
    return torch.softmax(rnd(shape, F64), dim).to(dtype)


def ce(a):
    def run(x, t, w):
        return F.cross_entropy(x, t, weight=w, ignore_index=a.get("ignore_index", -100),
                               reduction=a.get("reduction", "mean"), label_smoothing=a.get("label_smoothing", 0.0))
    return run


def nll(a):
    def run(x, t, w):
        return F.nll_loss(x, t, weight=w, ignore_index=a.get("ignore_index", -100), reduction=a.get("reduction", "mean"))
    return run


# --- cross_entropy / nll_loss ---
for op, fn in (("cross_entropy", ce), ("nll_loss", nll)):
    for dt in (F32, F64, BF16):
        for red in REDS:
            a = {"reduction": red}
            add(case(op, fn(a), [rnd([4, 5], dt), targets([4], 5, 1), None], a, name=f"{op}_{red}_{dt}"))
    w = rnd([5], F32, 0.2, 2.0)
    for red in REDS:
        a = {"reduction": red}
        add(case(op, fn(a), [rnd([6, 5], F32), targets([6], 5, 2), w], a, name=f"{op}_weight_{red}"))
        a = {"reduction": red, "ignore_index": -100}
        add(case(op, fn(a), [rnd([6, 5], F32), targets([6], 5, 3, -100), w], a, name=f"{op}_ignore_{red}"))
        a = {"reduction": red, "ignore_index": 2}
        add(case(op, fn(a), [rnd([2, 5, 3, 2], F32), targets([2, 3, 2], 5, 4), w], a, name=f"{op}_spatial_{red}"))
    a = {"reduction": "mean"}
    add(case(op, fn(a), [rnd([5], F32), torch.tensor(3), None], a, name=f"{op}_unbatched"))
    add(case(op, fn(a), [rnd([1, 5], F32), torch.tensor([2]), w], a, name=f"{op}_batch1"))
    add(case(op, fn(a), [rnd([0, 5], F32), torch.zeros(0, dtype=I64), None], a, name=f"{op}_empty_mean"))
    add(case(op, fn({"reduction": "sum"}), [rnd([0, 5], F32), torch.zeros(0, dtype=I64), None], {"reduction": "sum"},
             name=f"{op}_empty_sum"))
    add(case(op, fn(a), [rnd([3, 5], F32), torch.full([3], -100), None], a, name=f"{op}_all_ignored"))
    add(case(op, fn(a), [In(rnd([5, 4], F32), [["transpose", 0, 1]]), In(targets([8], 5, 5), [["slice", 0, 0, 8, 2]]),
                         In(rnd([10], F32, 0.5, 1.5), [["slice", 0, 0, 10, 2]])], a, name=f"{op}_noncontig"))
    add(error(op, [rnd([2, 5], F32), torch.tensor([1, 5]), None], "IndexError", a, name=f"{op}_target_range"))
    add(error(op, [rnd([2, 5], F32), torch.tensor([1, -2]), None], "IndexError", a, name=f"{op}_target_negative"))
    add(error(op, [rnd([2, 5], F32), torch.tensor([1, 2, 3]), None], "ShapeError", a, name=f"{op}_target_shape"))
    add(error(op, [rnd([2, 5], F32), torch.tensor([1, 2]), None], "ValueError", {"reduction": "avg"},
              name=f"{op}_reduction"))
    add(error(op, [rnd([2, 5], torch.int64), torch.tensor([1, 2]), None], "DTypeError", a, name=f"{op}_int_input"))
    add(error(op, [rnd([2, 5], F32), torch.tensor([True, False]), None], "DTypeError", a, name=f"{op}_bool_target"))
    add(error(op, [rnd([2, 5], F32), torch.tensor([1, 2]), rnd([4], F32)], "ShapeError", a, name=f"{op}_weight_shape"))
    add(error(op, [torch.tensor(1.0), torch.tensor(0), None], "ShapeError", a, name=f"{op}_0d_input"))
add(error("nll_loss", [rnd([2, 5], F32), rnd([2, 5], F32), None], "DTypeError", {"reduction": "mean"},
          name="nll_loss_float_target"))

# label smoothing (class indices) and class-probability targets
for red in REDS:
    for ls, w, ign in ((0.1, None, None), (0.25, rnd([5], F32, 0.2, 2.0), None), (0.2, rnd([5], F32, 0.2, 2.0), -100),
                       (0.3, None, 1)):
        a = {"reduction": red, "label_smoothing": ls}
        if ign is not None:
            a["ignore_index"] = ign
        t = targets([6], 5, 7, -100 if ign == -100 else None)
        if ign == 1:
            t[0] = 1
        add(case("cross_entropy", ce(a), [rnd([6, 5], F32), t, w], a,
                 name=f"cross_entropy_smooth{ls}_{'w' if w is not None else ''}{ign}_{red}"))
    a = {"reduction": red, "label_smoothing": 0.1, "ignore_index": 0}
    add(case("cross_entropy", ce(a), [rnd([2, 4, 3], F32), targets([2, 3], 4, 8), rnd([4], F32, 0.5, 1.5)], a,
             name=f"cross_entropy_smooth_spatial_{red}"))
    for dt in (F32, F64, BF16):
        a = {"reduction": red}
        add(case("cross_entropy", ce(a), [rnd([4, 5], dt), probs([4, 5], dtype=dt), None], a,
                 name=f"cross_entropy_probs_{red}_{dt}"))
    a = {"reduction": red, "label_smoothing": 0.2}
    add(case("cross_entropy", ce(a), [rnd([3, 4, 2], F32), probs([3, 4, 2]), rnd([4], F32, 0.5, 1.5)], a,
             name=f"cross_entropy_probs_smooth_weight_{red}"))
a = {"reduction": "mean"}
add(case("cross_entropy", ce(a), [rnd([5], F32), probs([5], 0), None], a, name="cross_entropy_probs_unbatched"))
add(case("cross_entropy", ce(a), [rnd([0, 5], F32), rnd([0, 5], F32), None], a, name="cross_entropy_probs_empty"))
add(error("cross_entropy", [rnd([2, 5], F32), rnd([2, 4], F32), None], "ShapeError", a, name="cross_entropy_probs_shape"))
add(error("cross_entropy", [rnd([2, 5], F32), torch.tensor([1, 2]), None], "ValueError",
          {"reduction": "mean", "label_smoothing": 1.5}, name="cross_entropy_smoothing_range"))


# --- elementwise losses ---
def pointwise(op, **kw):
    fn = getattr(F, op)
    return lambda a: (lambda x, t: fn(x, t, reduction=a["reduction"], **{k: a[k] for k in kw if k in a}))


pw = {"mse_loss": (pointwise("mse_loss"), (F32, F64, F16)),
      "l1_loss": (pointwise("l1_loss"), (F32, F64, F16, BF16)),
      "smooth_l1_loss": (pointwise("smooth_l1_loss", beta=1), (F32, F64, F16, BF16)),
      "huber_loss": (pointwise("huber_loss", delta=1), (F32, F64, F16, BF16))}
for op, (fn, dts) in pw.items():
    for dt in dts:
        for red in REDS:
            a = {"reduction": red}
            add(case(op, fn(a), [rnd([3, 4], dt), rnd([3, 4], dt, -2, 2)], a, name=f"{op}_{red}_{dt}"))
    a = {"reduction": "mean"}
    add(case(op, fn(a), [In(rnd([4, 3], F32), [["transpose", 0, 1]]), rnd([3, 4], F32)], a, name=f"{op}_noncontig"))
    add(case(op, fn(a), [rnd([0, 3], F32), rnd([0, 3], F32)], a, name=f"{op}_empty"))
    add(case(op, fn({"reduction": "none"}), [rnd([2, 3], F64), rnd([3], F64)], {"reduction": "none"},
             name=f"{op}_broadcast"))
    add(case(op, fn(a), [torch.tensor(1.5), torch.tensor(-0.5)], a, name=f"{op}_0d"))
    add(error(op, [rnd([3, 4], F32), rnd([3, 4], F32)], "ValueError", {"reduction": "elementwise"}, name=f"{op}_reduction"))
    add(error(op, [rnd([3, 4], F32), rnd([2, 4], F32)], "ShapeError", a, name=f"{op}_shape"))
    add(error(op, [rnd([3, 4], I64), rnd([3, 4], I64)], "DTypeError", a, name=f"{op}_int"))
for beta in (0.0, 0.5, 2.0):
    for red in ("none", "mean"):
        a = {"reduction": red, "beta": beta}
        add(case("smooth_l1_loss", pw["smooth_l1_loss"][0](a), [rnd([3, 4], F32), rnd([3, 4], F32, -2, 2)], a,
                 name=f"smooth_l1_loss_beta{beta}_{red}"))
for delta in (0.5, 2.0):
    for red in ("none", "sum"):
        a = {"reduction": red, "delta": delta}
        add(case("huber_loss", pw["huber_loss"][0](a), [rnd([3, 4], F32), rnd([3, 4], F32, -2, 2)], a,
                 name=f"huber_loss_delta{delta}_{red}"))
add(error("smooth_l1_loss", [rnd([3], F32), rnd([3], F32)], "ValueError", {"reduction": "mean", "beta": -1.0},
          name="smooth_l1_loss_beta"))
add(error("huber_loss", [rnd([3], F32), rnd([3], F32)], "ValueError", {"reduction": "mean", "delta": 0.0},
          name="huber_loss_delta"))


# --- binary cross entropy ---
def bce(a):
    return lambda x, t, w: F.binary_cross_entropy(x, t, weight=w, reduction=a["reduction"])


def bcel(a):
    return lambda x, t, w, pw: F.binary_cross_entropy_with_logits(x, t, weight=w, reduction=a["reduction"],
                                                                  pos_weight=pw)


for dt in (F32, F64):
    for red in REDS:
        a = {"reduction": red}
        add(case("binary_cross_entropy", bce(a), [rnd([3, 4], dt, 0.01, 0.99), rnd([3, 4], dt, 0, 1), None], a,
                 name=f"binary_cross_entropy_{red}_{dt}"))
for red in REDS:
    a = {"reduction": red}
    x = rnd([3, 4], F32, 0.01, 0.99)
    x[0, 0], x[1, 1] = 0.0, 1.0
    add(case("binary_cross_entropy", bce(a), [x, rnd([3, 4], F32, 0, 1), rnd([4], F32, 0.5, 2)], a,
             name=f"binary_cross_entropy_weight_edges_{red}"))
a = {"reduction": "mean"}
add(case("binary_cross_entropy", bce(a), [In(rnd([4, 3], F32, 0.1, 0.9), [["transpose", 0, 1]]),
                                          rnd([3, 4], F32, 0, 1), None], a, name="binary_cross_entropy_noncontig"))
add(case("binary_cross_entropy", bce(a), [rnd([0], F32, 0.1, 0.9), rnd([0], F32, 0, 1), None], a,
         name="binary_cross_entropy_empty"))
add(error("binary_cross_entropy", [torch.tensor([0.5, 1.5]), torch.tensor([1.0, 0.0]), None], "ValueError", a,
          name="binary_cross_entropy_range"))
add(error("binary_cross_entropy", [rnd([2, 1], F32, 0, 1), rnd([2], F32, 0, 1), None], "ShapeError", a,
          name="binary_cross_entropy_shape"))
add(error("binary_cross_entropy", [rnd([2], F32, 0, 1), rnd([2], F32, 0, 1), rnd([3], F32)], "ShapeError", a,
          name="binary_cross_entropy_weight"))
add(error("binary_cross_entropy", [rnd([2], F32, 0, 1), rnd([2], F32, 0, 1), None], "ValueError",
          {"reduction": "max"}, name="binary_cross_entropy_reduction"))
add(error("binary_cross_entropy", [torch.tensor([0, 1]), torch.tensor([0.0, 1.0]), None], "DTypeError", a,
          name="binary_cross_entropy_int"))

for dt in (F32, F64, BF16):
    for red in REDS:
        a = {"reduction": red}
        add(case("binary_cross_entropy_with_logits", bcel(a), [rnd([3, 4], dt), rnd([3, 4], dt, 0, 1), None, None], a,
                 name=f"binary_cross_entropy_with_logits_{red}_{dt}"))
for red in REDS:
    a = {"reduction": red}
    x = rnd([3, 4], F32)
    x[0, 0], x[1, 1], x[2, 2] = 100.0, -100.0, 30.0
    add(case("binary_cross_entropy_with_logits", bcel(a),
             [x, rnd([3, 4], F32, 0, 1), rnd([3, 1], F32, 0.5, 2), rnd([4], F32, 0.5, 3)], a,
             name=f"binary_cross_entropy_with_logits_weights_{red}"))
a = {"reduction": "mean"}
add(case("binary_cross_entropy_with_logits", bcel(a),
         [In(rnd([4, 3], F32), [["transpose", 0, 1]]), rnd([3, 4], F32, 0, 1), None, rnd([4], F32, 0.5, 3)], a,
         name="binary_cross_entropy_with_logits_noncontig"))
add(error("binary_cross_entropy_with_logits", [rnd([2, 1], F32), rnd([2], F32, 0, 1), None, None], "ShapeError", a,
          name="binary_cross_entropy_with_logits_shape"))
add(error("binary_cross_entropy_with_logits", [rnd([2, 3], F32), rnd([2, 3], F32, 0, 1), None, rnd([2], F32)],
          "ShapeError", a, name="binary_cross_entropy_with_logits_pos_weight"))
add(error("binary_cross_entropy_with_logits", [rnd([2, 3], I64), rnd([2, 3], F32, 0, 1), None, None],
          "DTypeError", a, name="binary_cross_entropy_with_logits_int"))


# --- kl_div ---
def kl(a):
    return lambda x, t: F.kl_div(x, t, reduction=a["reduction"], log_target=a.get("log_target", False))


for dt in (F32, F64, BF16, F16):
    for red in REDS + ("batchmean",):
        a = {"reduction": red}
        add(case("kl_div", kl(a), [torch.log(probs([3, 4], dtype=F64)).to(dt), probs([3, 4], dtype=dt)], a,
                 name=f"kl_div_{red}_{dt}"))
for red in REDS + ("batchmean",):
    a = {"reduction": red, "log_target": True}
    add(case("kl_div", kl(a), [torch.log(probs([3, 4])), torch.log(probs([3, 4], 0))], a, name=f"kl_div_log_target_{red}"))
t0 = probs([3, 4])
t0[0, 1] = 0.0
a = {"reduction": "none"}
add(case("kl_div", kl(a), [rnd([3, 4], F32), t0], a, name="kl_div_zero_target"))
add(case("kl_div", kl(a), [rnd([2, 3, 4], F32), In(probs([4, 3]), [["transpose", 0, 1]])], a, name="kl_div_broadcast"))
add(error("kl_div", [rnd([3], F32), rnd([3], F32)], "ValueError", {"reduction": "avg"}, name="kl_div_reduction"))
add(error("kl_div", [rnd([3], F32), rnd([2], F32)], "ShapeError", {"reduction": "sum"}, name="kl_div_shape"))
add(error("kl_div", [rnd([3], I64), rnd([3], I64)], "DTypeError", {"reduction": "sum"}, name="kl_div_int"))

write("loss", cases)
