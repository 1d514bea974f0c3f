"""Goldens for ember/optim: 20 steps of each optimizer on fixed params and gradients, and the lrs
of each scheduler. Run with Debian's /usr/bin/python3 (torch 1.13); writes tests/data/optim/."""
import json
import math
import os

import torch

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "optim")
STEPS = 20
SHAPES = [[3, 2], [4]]


class Lion(torch.optim.Optimizer):
    """torch 1.13 has no Lion: the paper's update (Chen et al. 2023)."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["exp_avg"] = torch.zeros_like(p)
                m = st["exp_avg"]
                update = (m * beta1 + p.grad * (1 - beta1)).sign()
                p.sub_(group["lr"] * (update + group["weight_decay"] * p))
                m.mul_(beta2).add_(p.grad, alpha=1 - beta2)


OPTIMIZERS = {
    "SGD": torch.optim.SGD, "Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW,
    "RMSprop": torch.optim.RMSprop, "Adagrad": torch.optim.Adagrad, "Lion": Lion,
}


def flat(t):
    return [float(v) for v in t.detach().double().reshape(-1).tolist()]


def optim_case(name, kind, groups, dtype=torch.float64, missing=(), tol=1e-12):
    """groups: list of (param indices, options). missing: (step, param) pairs without a grad."""
    gen = torch.Generator().manual_seed(len(name) * 7919 + sum(map(ord, name)))
    init = [torch.randn(s, generator=gen, dtype=torch.float64) for s in SHAPES]
    params = [t.clone().to(dtype).requires_grad_() for t in init]
    # Adagrad reads initial_accumulator_value from its constructor only (not from groups), and
    # SGD needs an lr there; every other option goes per group over torch's defaults.
    ctor = {k: v for k, v in groups[0][1].items() if k in ("lr", "initial_accumulator_value")}
    opt = OPTIMIZERS[kind]([{"params": [params[i] for i in idx], **o} for idx, o in groups],
                           **ctor)
    grads, expected = [], []
    for step in range(STEPS):
        # Gradients change scale and sign over the run so every state path is exercised.
        scale = 1.0 + 0.5 * math.sin(step)
        gs = [torch.randn(s, generator=gen, dtype=torch.float64) * scale for s in SHAPES]
        row = []
        for i, (p, g) in enumerate(zip(params, gs)):
            if (step, i) in missing:
                p.grad = None
                row.append(None)
            else:
                p.grad = g.to(dtype)
                row.append(flat(p.grad))
        opt.step()
        grads.append(row)
        expected.append([flat(p) for p in params])
    jsonable = [[list(idx), {k: list(v) if isinstance(v, tuple) else v for k, v in o.items()}]
                for idx, o in groups]
    return {"name": name, "optimizer": kind, "dtype": str(dtype).replace("torch.", ""),
            "tol": tol, "shapes": SHAPES, "groups": jsonable,
            "params": [flat(t) for t in init], "grads": grads, "expected": expected}


def optimizer_cases():
    one = lambda **o: [([0, 1], o)]  # noqa: E731
    c = []
    c.append(optim_case("sgd_plain", "SGD", one(lr=0.1)))
    c.append(optim_case("sgd_momentum", "SGD", one(lr=0.05, momentum=0.9)))
    c.append(optim_case("sgd_dampening_wd", "SGD",
                        one(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01)))
    c.append(optim_case("sgd_nesterov_maximize", "SGD",
                        one(lr=0.02, momentum=0.9, nesterov=True, maximize=True)))
    c.append(optim_case("sgd_missing_grads", "SGD", one(lr=0.05, momentum=0.9),
                        missing={(0, 1), (3, 1), (7, 0)}))
    c.append(optim_case("adam_default", "Adam", one(lr=1e-2)))
    c.append(optim_case("adam_wd_amsgrad", "Adam",
                        one(lr=2e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1,
                            amsgrad=True)))
    c.append(optim_case("adam_maximize", "Adam", one(lr=1e-2, maximize=True)))
    c.append(optim_case("adam_float32", "Adam", one(lr=1e-2, weight_decay=0.01),
                        dtype=torch.float32, tol=1e-6))
    c.append(optim_case("adamw_default", "AdamW", one(lr=1e-2)))
    c.append(optim_case("adamw_amsgrad", "AdamW",
                        one(lr=3e-2, betas=(0.85, 0.995), weight_decay=0.2, amsgrad=True)))
    c.append(optim_case("rmsprop_default", "RMSprop", one(lr=1e-2)))
    c.append(optim_case("rmsprop_centered_momentum", "RMSprop",
                        one(lr=1e-2, alpha=0.9, eps=1e-6, momentum=0.5, centered=True,
                            weight_decay=0.05)))
    c.append(optim_case("rmsprop_momentum", "RMSprop", one(lr=5e-3, momentum=0.9)))
    c.append(optim_case("adagrad_default", "Adagrad", one(lr=0.1)))
    c.append(optim_case("adagrad_options", "Adagrad",
                        one(lr=0.1, lr_decay=0.05, weight_decay=0.1,
                            initial_accumulator_value=0.5, eps=1e-8)))
    c.append(optim_case("lion_default", "Lion", one(lr=1e-2)))
    c.append(optim_case("lion_wd", "Lion", one(lr=3e-3, betas=(0.95, 0.98), weight_decay=0.5)))
    c.append(optim_case("sgd_two_groups", "SGD",
                        [([0], dict(lr=0.1, momentum=0.9)), ([1], dict(lr=0.01))]))
    c.append(optim_case("adam_two_groups", "Adam",
                        [([0], dict(lr=1e-2)), ([1], dict(lr=3e-2, amsgrad=True,
                                                          weight_decay=0.1))]))
    return c


S = torch.optim.lr_scheduler


def noam(d_model, warmup, factor):
    def f(epoch):
        s = max(epoch, 1)
        return factor * d_model ** -0.5 * min(s ** -0.5, s * warmup ** -1.5)
    return f


def build(opt, spec):
    kind, a = spec["kind"], spec["args"]
    if kind == "StepLR":
        return S.StepLR(opt, a["step_size"], a["gamma"])
    if kind == "MultiStepLR":
        return S.MultiStepLR(opt, a["milestones"], a["gamma"])
    if kind == "ExponentialLR":
        return S.ExponentialLR(opt, a["gamma"])
    if kind == "CosineAnnealingLR":
        return S.CosineAnnealingLR(opt, a["t_max"], a["eta_min"])
    if kind == "CosineAnnealingWarmRestarts":
        return S.CosineAnnealingWarmRestarts(opt, a["t_0"], a["t_mult"], a["eta_min"])
    if kind == "LinearLR":
        return S.LinearLR(opt, a["start_factor"], a["end_factor"], a["total_iters"])
    if kind == "NoamLR":
        return S.LambdaLR(opt, noam(a["d_model"], a["warmup"], a["factor"]))
    if kind == "OneCycleLR":
        return S.OneCycleLR(opt, a["max_lr"], total_steps=a["total_steps"],
                            pct_start=a["pct_start"],
                            anneal_strategy="cos" if a["cos_anneal"] else "linear",
                            div_factor=a["div_factor"], final_div_factor=a["final_div_factor"],
                            three_phase=a["three_phase"],
                            cycle_momentum=a["cycle_momentum"],
                            base_momentum=a["base_momentum"], max_momentum=a["max_momentum"])
    subs = [build(opt, s) for s in a["schedulers"]]
    if kind == "SequentialLR":
        return S.SequentialLR(opt, subs, a["milestones"])
    if kind == "ChainedScheduler":
        return S.ChainedScheduler(subs)
    raise ValueError(kind)


def momenta(opt):
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


def sched_case(name, spec, steps=25, base_lrs=(0.1, 0.02), optimizer="SGD"):
    """The groups' lrs and momenta (SGD's momentum, Adam's beta1) after each step."""
    params = [torch.zeros(1, requires_grad=True) for _ in base_lrs]
    opt = OPTIMIZERS[optimizer]([{"params": [p], "lr": lr} for p, lr in zip(params, base_lrs)],
                                lr=base_lrs[0])
    sched = build(opt, spec)
    lrs = [[g["lr"] for g in opt.param_groups]]
    last = [list(sched.get_last_lr())]
    moms = [momenta(opt)]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
        last.append(list(sched.get_last_lr()))
        moms.append(momenta(opt))
    return {"name": name, "spec": spec, "optimizer": optimizer, "base_lrs": list(base_lrs),
            "lrs": lrs, "last_lr": last, "momenta": moms}


def sp(kind, **args):
    return {"kind": kind, "args": args}


def scheduler_cases():
    one_cycle = dict(max_lr=0.5, total_steps=30, pct_start=0.3, cos_anneal=True, div_factor=25.0,
                     final_div_factor=1e4, three_phase=False, cycle_momentum=False,
                     base_momentum=0.85, max_momentum=0.95)
    return [
        sched_case("step", sp("StepLR", step_size=4, gamma=0.5)),
        sched_case("multistep", sp("MultiStepLR", milestones=[3, 8, 8, 15], gamma=0.3)),
        sched_case("exponential", sp("ExponentialLR", gamma=0.9)),
        sched_case("cosine", sp("CosineAnnealingLR", t_max=10, eta_min=0.001), steps=35),
        sched_case("cosine_warm_restarts",
                   sp("CosineAnnealingWarmRestarts", t_0=3, t_mult=2, eta_min=0.005), steps=30),
        sched_case("cosine_warm_restarts_t1",
                   sp("CosineAnnealingWarmRestarts", t_0=5, t_mult=1, eta_min=0.0)),
        sched_case("linear_warmup",
                   sp("LinearLR", start_factor=0.1, end_factor=1.0, total_iters=8)),
        sched_case("linear_decay", sp("LinearLR", start_factor=1.0, end_factor=0.2,
                                      total_iters=10)),
        sched_case("noam", sp("NoamLR", d_model=512, warmup=8, factor=2.0), base_lrs=(1.0, 0.5)),
        sched_case("one_cycle_cos", sp("OneCycleLR", **one_cycle), steps=29),
        sched_case("one_cycle_linear_three_phase",
                   sp("OneCycleLR", **{**one_cycle, "cos_anneal": False, "three_phase": True,
                                       "total_steps": 25, "pct_start": 0.4}), steps=24),
        sched_case("one_cycle_momentum_sgd",
                   sp("OneCycleLR", **{**one_cycle, "cycle_momentum": True}), steps=29),
        sched_case("one_cycle_momentum_adam_three_phase",
                   sp("OneCycleLR", **{**one_cycle, "cycle_momentum": True, "three_phase": True,
                                       "base_momentum": 0.8, "max_momentum": 0.9}),
                   steps=29, optimizer="Adam"),
        sched_case("sequential_warmup_cosine",
                   sp("SequentialLR", milestones=[5],
                      schedulers=[sp("LinearLR", start_factor=0.2, end_factor=1.0,
                                     total_iters=5),
                                  sp("CosineAnnealingLR", t_max=15, eta_min=0.0)])),
        sched_case("sequential_three",
                   sp("SequentialLR", milestones=[4, 10],
                      schedulers=[sp("ExponentialLR", gamma=0.8),
                                  sp("StepLR", step_size=3, gamma=0.5),
                                  sp("MultiStepLR", milestones=[2, 6], gamma=0.1)])),
        sched_case("chained_exp_step",
                   sp("ChainedScheduler",
                      schedulers=[sp("ExponentialLR", gamma=0.95),
                                  sp("StepLR", step_size=5, gamma=0.5)])),
        sched_case("chained_warmup_cosine",
                   sp("ChainedScheduler",
                      schedulers=[sp("LinearLR", start_factor=0.25, end_factor=1.0,
                                     total_iters=4),
                                  sp("CosineAnnealingLR", t_max=20, eta_min=0.0)])),
    ]


def clip_cases():
    """torch.nn.utils.clip_grad_norm_ / clip_grad_value_ on three gradients."""
    gen = torch.Generator().manual_seed(1234)
    cases = []
    for norm_type, max_norm in ((2.0, 1.0), (1.0, 2.0), (3.0, 0.5), ("inf", 0.7), (2.0, 100.0)):
        grads = [torch.randn(s, generator=gen, dtype=torch.float64) for s in ([3, 2], [4], [])]
        params = [torch.zeros_like(g, requires_grad=True) for g in grads]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        nt = float("inf") if norm_type == "inf" else norm_type
        total = torch.nn.utils.clip_grad_norm_(params, max_norm, nt)
        cases.append({"kind": "norm", "norm_type": norm_type, "max": max_norm,
                      "shapes": [list(g.shape) for g in grads], "grads": [flat(g) for g in grads],
                      "total": float(total), "expected": [flat(p.grad) for p in params]})
    grads = [torch.randn(s, generator=gen, dtype=torch.float64) * 2 for s in ([3, 2], [4], [])]
    params = [torch.zeros_like(g, requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        p.grad = g.clone()
    torch.nn.utils.clip_grad_value_(params, 0.8)
    cases.append({"kind": "value", "max": 0.8, "shapes": [list(g.shape) for g in grads],
                  "grads": [flat(g) for g in grads], "expected": [flat(p.grad) for p in params]})
    return cases


def main():
    import warnings
    warnings.simplefilter("ignore")
    torch.set_default_dtype(torch.float64)
    os.makedirs(OUT, exist_ok=True)
    for fname, cases in (("optimizers.json", optimizer_cases()),
                         ("schedulers.json", scheduler_cases()),
                         ("clip.json", clip_cases())):
        with open(os.path.join(OUT, fname), "w") as f:
            json.dump({"cases": cases}, f, separators=(",", ":"))
            f.write("\n")


if __name__ == "__main__":
    main()
