"""Gradient goldens for realistic compositions -> tests/data/grad/*.json (a subfolder: the op
golden loader reads only tests/data/*.json). Run with /usr/bin/python3 (torch 1.13).

A case: {"model", "name", "dtype", "attrs", "tensors": {name: spec}, "params": [names that
require grad], "loss": spec, "grads": {name: spec}, "buffers": {name: spec after the forward},
"hvp": {"v": {name: spec}, "out": {name: spec}}, "rtol", "atol"}. Tensors are stored as float64
(4 decimals, for short JSON, except probability targets) and cast to the case's dtype by the test
and here, identically.
tests/autodiff/grad_golden_test.cpp builds each model with ember's API; every model below has a
twin there with the same name and attrs.
"""
import json
import math
import os

import torch
import torch.nn.functional as F

from common import DATA, NAMES

GRAD = os.path.join(DATA, "grad")
F32, F64 = torch.float32, torch.float64


def num(x, digits):
    if math.isnan(x) or math.isinf(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return float("%.*g" % (digits, x)) if digits else x


def spec(t, result=False):
    """Inputs keep every digit; results keep 9 (all of a float32) or 13 (float64: far below the
    tolerances, and a quarter less JSON)."""
    t = t.detach().contiguous()
    data = t.reshape(-1).tolist()
    if t.dtype.is_floating_point:
        digits = 9 if t.dtype == F32 else (13 if result else None)
        data = [num(x, digits) for x in data]
    return {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data": data}


def vals(shape, seed, lo=-1.0, hi=1.0):
    """Deterministic float64 values with 4 decimals."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, generator=g, dtype=F64) * (hi - lo) + lo
    return (x * 1e4).round() / 1e4


def ints(shape, hi, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, hi, shape, generator=g)


def init(shape, seed):
    """Weights scaled like a fan-in init so activations stay O(1)."""
    fan_in = 1
    for s in shape[1:]:
        fan_in *= s
    b = 1.0 / math.sqrt(fan_in) if len(shape) > 1 else 0.5
    return vals(shape, seed, -2 * b, 2 * b)


# --- models: fn(v, attrs) -> loss; v maps names to tensors (already in the case's dtype) ---
def act(name, x):
    if name == "relu":
        return F.relu(x)
    if name == "gelu":
        return F.gelu(x)
    if name == "gelu_tanh":
        return F.gelu(x, approximate="tanh")
    if name == "tanh":
        return torch.tanh(x)
    raise ValueError(name)


def mlp(v, a):
    h = act(a["act1"], F.linear(v["x"], v["w1"], v["b1"]))
    h = act(a["act2"], F.linear(h, v["w2"], v["b2"]))
    return F.cross_entropy(F.linear(h, v["w3"], v["b3"]), v["target"])


def convnet(v, a):
    h = F.conv2d(v["x"], v["c1w"], v["c1b"], stride=1, padding=1)
    h = F.batch_norm(h, v["running_mean"], v["running_var"], v["bnw"], v["bnb"], training=True,
                     momentum=a["momentum"], eps=1e-5)
    h = F.max_pool2d(F.relu(h), 2)
    h = F.relu(F.conv2d(h, v["c2w"], v["c2b"], stride=2, padding=a["pad2"]))
    return F.cross_entropy(F.linear(h.flatten(1), v["fw"], v["fb"]), v["target"])


def attention_math(q, k, v, causal, mask, scale):
    """softmax(q k^T * scale + mask) v: ember's scaled_dot_product_attention (torch 1.13 has
    none). A bool mask keeps where true."""
    s = q @ k.transpose(-2, -1) * scale
    L, S = s.shape[-2], s.shape[-1]
    if causal:
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return torch.softmax(s, -1) @ v


def attention(v, a):
    x = v["x"]
    mem = v["mem"] if "mem" in v else x
    B, L, E = x.shape
    S, H = mem.shape[1], a["heads"]
    heads = lambda t, n: t.reshape(B, n, H, E // H).transpose(1, 2)
    q = heads(F.linear(x, v["wq"], v["bq"]), L)
    k = heads(F.linear(mem, v["wk"], v["bk"]), S)
    val = heads(F.linear(mem, v["wv"], v["bv"]), S)
    scale = a.get("scale") or 1.0 / math.sqrt(E // H)
    o = attention_math(q, k, val, a["causal"], v.get("mask"), scale)
    o = F.linear(o.transpose(1, 2).reshape(B, L, E), v["wo"], v["bo"])
    return F.mse_loss(o, v["target"])


def resblock(v, a):
    x = v["x"]
    ns = a["normalized_shape"]
    h = F.layer_norm(x, ns, v["ln1w"], v["ln1b"], eps=1e-5)
    h = x + F.linear(act(a["act"], F.linear(h, v["w1"], v["b1"])), v["w2"], v["b2"])
    y = F.layer_norm(h, ns, v["ln2w"], v["ln2b"], eps=1e-5)
    return F.mse_loss(y, v["target"])


def xent(v, a):
    logits = F.linear(v["x"], v["w"], v["b"])
    if a.get("kdim"):  # [N, C, d]: classes on dim 1
        logits = logits.transpose(1, 2)
    loss = F.cross_entropy(logits, v["target"], weight=v.get("cw"), ignore_index=a["ignore_index"],
                           reduction=a["reduction"], label_smoothing=a["label_smoothing"])
    if a["reduction"] == "none":
        loss = (loss * v["coef"]).sum()
    return loss


def mix_index(v, a):
    # gather and index_select (repeated indices accumulate), cat, pad, softmax, logsumexp, cumsum
    x = v["x"]
    p = torch.softmax(x * v["s"], 1)
    g = torch.gather(p, 1, v["gidx"])                       # [4, 3]
    r = torch.index_select(x, 0, v["ridx"])                 # [5, 6]
    c = torch.cat([g, r[:4, :2] * 2.0, x[:, 1:2]], 1)       # [4, 6]
    c = F.pad(c, (1, 2, 0, 1), value=0.5)                   # [5, 9]
    lse = torch.logsumexp(c, 1)                             # [5]
    cs = torch.cumsum(c * v["coef"], 1)                     # [5, 9]
    return lse.sum() + (cs ** 2).mean() + (r.sum(0) * v["s"]).sum()


def mix_sort(v, a):
    # sort and topk values route gradients through their indices; pad reflect/replicate
    x = v["x"] * v["w"]
    s = torch.sort(x, dim=1, descending=True).values
    t = torch.topk(x, 3, dim=1).values
    lo = torch.topk(x, 2, dim=0, largest=False).values
    y = F.pad(s.unsqueeze(0), (2, 1), mode=a["pad_mode"]).squeeze(0)
    return (y * v["coef"]).sum() + (torch.cumsum(t, 1) ** 2).sum() + torch.tanh(lo).sum()


def mix_embed(v, a):
    # embedding with repeated indices and a padding row (torch gives it no gradient)
    e = F.embedding(v["idx"], v["emb"], padding_idx=a["padding_idx"])  # [3, 4, D]
    h = torch.tanh(F.linear(e, v["w"], v["b"]))
    h = torch.softmax(h, -1) * torch.logsumexp(h, -1, keepdim=True)
    return (h.sum(1) * v["coef"]).sum()


def grad_penalty(v, a):
    # WGAN-GP style: the norm of d(critic)/d(input) is part of the loss (double backward)
    x = v["x"]
    d = F.linear(torch.tanh(F.linear(x, v["w1"], v["b1"])), v["w2"], v["b2"])  # [N, 1]
    gx, = torch.autograd.grad(d.sum(), x, create_graph=True)
    pen = ((gx.norm(2, dim=1) - 1) ** 2).mean()
    return d.mean() + a["lam"] * pen


def unet(v, a):
    # grouped/dilated conv, group_norm, silu, avg/adaptive pooling, bilinear upsampling,
    # conv_transpose2d, a skip concatenation, 1x1 conv, BCE with logits and pos_weight
    h1 = F.silu(F.group_norm(F.conv2d(v["x"], v["w1"], v["b1"], padding=1), 2, v["gnw"], v["gnb"]))
    h2 = F.avg_pool2d(h1, 2)
    h2 = F.silu(F.conv2d(h2, v["w2"], v["b2"], padding=2, dilation=2, groups=2))
    u = F.interpolate(h2, scale_factor=2.0, mode="bilinear", align_corners=a["align_corners"])
    u2 = F.conv_transpose2d(h2, v["wt"], v["bt"], stride=2, padding=1, output_padding=1)
    c = torch.cat([h1, u[:, :4], u2], 1)
    out = F.conv2d(c, v["w3"], v["b3"])
    loss = F.binary_cross_entropy_with_logits(out, v["target"], pos_weight=v["pw"])
    return loss + 0.1 * F.adaptive_avg_pool2d(h2, (3, 3)).pow(2).mean()


def rms(x, g, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def llama_block(v, a):
    # embedding tied to the output projection, pre-RMSNorm causal attention, SwiGLU MLP
    x = F.embedding(v["idx"], v["emb"])
    B, L, E = x.shape
    H = a["heads"]
    heads = lambda t: t.reshape(B, L, H, E // H).transpose(1, 2)
    h = rms(x, v["g1"])
    q, k, val = (heads(F.linear(h, v[n])) for n in ("wq", "wk", "wv"))
    o = attention_math(q, k, val, True, None, 1.0 / math.sqrt(E // H))
    x = x + F.linear(o.transpose(1, 2).reshape(B, L, E), v["wo"])
    h = rms(x, v["g2"])
    x = x + F.linear(F.silu(F.linear(h, v["wg"])) * F.linear(h, v["wu"]), v["wd"])
    logits = F.linear(rms(x, v["g3"]), v["emb"])
    return F.cross_entropy(logits.reshape(B * L, -1), v["target"].reshape(-1))


def losses(v, a):
    p = F.linear(v["x"], v["w"], v["b"])  # [6, 4]
    t = v["t"]
    lp = F.log_softmax(p, 1)
    loss = F.smooth_l1_loss(p, t, beta=0.5) + 0.1 * F.huber_loss(p, t, reduction="sum", delta=0.7)
    loss = loss + F.kl_div(lp, F.log_softmax(v["t2"], 1), reduction="batchmean", log_target=True)
    loss = loss + F.kl_div(lp, torch.softmax(v["t2"], 1), reduction="sum")
    loss = loss + F.cosine_similarity(p, t, dim=1).mean() + F.l1_loss(p, t)
    loss = loss + F.nll_loss(lp, v["cls"], weight=v["cw"], ignore_index=1)
    loss = loss + F.binary_cross_entropy(torch.sigmoid(p), v["t3"], weight=v["bw"])
    return loss + F.binary_cross_entropy_with_logits(p, v["t3"], reduction="sum") * 0.05


def mix_where(v, a):
    # where/clamp/masked_fill, activations, and reductions that route to selected elements
    x, y = v["x"], v["y"]
    z = torch.where(x > y, x * y, x - y).clamp(-1.0, 1.5).masked_fill(v["mask"], 0.3)
    act_sum = F.softplus(x, beta=2.0) + F.elu(y) + F.leaky_relu(x, 0.1) + F.hardswish(y) + F.mish(x)
    loss = (z * v["coef"]).sum() + act_sum.mean() + torch.amax(x * y, 1).sum()
    loss = loss + torch.max(x, 0).values.sum() + torch.var(y, 1).sum() + torch.std(x, 0).sum()
    loss = loss + torch.prod(y[:, :3] + 2, 1).sum() + torch.norm(x - y) + x.abs().pow(1.5).mean()
    return loss + torch.sigmoid(y).mul(torch.log1p(x.exp())).sum() / torch.rsqrt(y.pow(2).sum() + 1)



def mix_shape(v, a):
    # einsum/bmm/matmul with broadcast and transposed operands, stack/chunk/cat/split/unbind,
    # flip/roll/tril/diagonal/movedim/narrow/repeat/tile/repeat_interleave
    x, y, z = v["x"], v["y"], v["z"]
    e1 = torch.einsum("bij,jk->bik", x, y)                        # [2, 3, 5]
    e2 = torch.bmm(x, y.expand(2, 4, 5))
    c = torch.matmul(x.transpose(1, 2), z)                        # [2, 4, 4]
    d = torch.stack([e1, e2.flip(2), torch.roll(e1, 1, 1)], 0)    # [3, 2, 3, 5]
    e = torch.cat(list(torch.chunk(d, 3, 0))[::-1], 3)            # [1, 2, 3, 15]
    s1, s2 = torch.split(c, [1, 3], dim=2)
    u0, u1 = torch.unbind(s2, 0)                                  # [4, 3] each
    t = torch.tril(u0 @ u1.t(), -1) + torch.diagonal(c, 0, 1, 2).sum()
    r = torch.narrow(x.repeat(1, 2, 1).movedim(2, 0), 2, 1, 4)    # [4, 2, 4]
    loss = (e ** 2).mean() + 0.1 * t.sum() + (r.tanh() * v["coef"]).sum() + s1.exp().mean()
    return loss + z.repeat_interleave(2, dim=0).sin().sum() + torch.tile(z, (2, 1)).cos().mean()


def mix_scatter(v, a):
    # scatter family, index_add/index_put (accumulating duplicates), masked_select, take, and
    # order statistics and scans that route gradients through indices
    x, src = v["x"], v["src"]
    loss = (torch.scatter_add(x, 0, v["sidx"], src) * v["c1"]).sum()
    loss = loss + torch.index_add(x, 0, v["ridx"], src, alpha=0.5).pow(2).sum()
    loss = loss + torch.index_put(x, (v["pr"], v["pc"]), v["pv"], accumulate=True).sin().sum()
    loss = loss + (torch.scatter(x, 1, v["cidx"], v["csrc"]) * v["c1"]).sum()
    loss = loss + torch.scatter_reduce(x, 0, v["sidx"], src, "mean").pow(2).sum()
    loss = loss + torch.scatter_reduce(x, 0, v["sidx"], src, "amax").exp().sum()
    loss = loss + torch.masked_select(x, v["mask"]).pow(2).sum() + torch.take(x, v["tidx"]).sum()
    loss = loss + torch.kthvalue(x, 2, dim=1).values.exp().sum()
    loss = loss + torch.median(x, dim=0).values.pow(3).sum()
    return loss + torch.cummax(x, 1).values.sum() + torch.cumprod(x, 1).tanh().sum()

MODELS = {"mlp": mlp, "convnet": convnet, "attention": attention, "resblock": resblock,
          "xent": xent, "mix_index": mix_index, "mix_sort": mix_sort, "mix_embed": mix_embed,
          "grad_penalty": grad_penalty, "unet": unet, "llama_block": llama_block,
          "losses": losses, "mix_where": mix_where, "mix_shape": mix_shape,
          "mix_scatter": mix_scatter}


def run_case(model, name, tensors, params, attrs=None, dtype=F64, buffers=(), hvp=None,
             rtol=None, atol=None):
    """Computes the loss and gradients in torch; hvp: names of the parameters for a
    Hessian-vector product (random v)."""
    attrs = attrs or {}
    v = {}
    for k, t in tensors.items():
        # a copy: batch_norm updates its running statistics in place
        v[k] = t.to(dtype, copy=True) if t.dtype.is_floating_point else t.clone()
        if k in params:
            v[k].requires_grad_(True)
    loss = MODELS[model](v, attrs)
    ps = [v[k] for k in params]
    gs = torch.autograd.grad(loss, ps, create_graph=hvp is not None)
    c = {"model": model, "name": name, "dtype": NAMES[dtype], "attrs": attrs,
         "tensors": {k: spec(t) for k, t in tensors.items()}, "params": list(params),
         "loss": spec(loss, True), "grads": {k: spec(g, True) for k, g in zip(params, gs)}}
    if buffers:
        c["buffers"] = {k: spec(v[k], True) for k in buffers}
    if hvp:
        vs = {k: vals(v[k].shape, 900 + i) for i, k in enumerate(hvp)}
        dot = sum((gs[params.index(k)] * vs[k].to(dtype)).sum() for k in hvp)
        hs = torch.autograd.grad(dot, [v[k] for k in hvp])
        c["hvp"] = {"v": {k: spec(t) for k, t in vs.items()},
                    "out": {k: spec(h, True) for k, h in zip(hvp, hs)}}
    c["rtol"] = rtol if rtol is not None else (1e-10 if dtype == F64 else 1e-4)
    c["atol"] = atol if atol is not None else (1e-12 if dtype == F64 else 1e-5)
    return c


def mlp_cases():
    t = {"x": vals([8, 20], 1, -2, 2), "w1": init([16, 20], 2), "b1": init([16], 3),
         "w2": init([16, 16], 4), "b2": init([16], 5), "w3": init([5, 16], 6),
         "b3": init([5], 7), "target": ints([8], 5, 8)}
    ps = ["w1", "b1", "w2", "b2", "w3", "b3", "x"]
    weights = ps[:-1]
    return [
        run_case("mlp", "mlp_relu_tanh", t, ps, {"act1": "relu", "act2": "tanh"}),
        run_case("mlp", "mlp_gelu_gelu_tanh", t, ps, {"act1": "gelu", "act2": "gelu_tanh"},
                 hvp=weights),
        run_case("mlp", "mlp_tanh_relu_hvp", t, ps, {"act1": "tanh", "act2": "relu"}, hvp=weights),
        run_case("mlp", "mlp_relu_gelu_f32", t, ps, {"act1": "relu", "act2": "gelu"}, dtype=F32),
        run_case("mlp", "mlp_gelu_tanh_hvp_f32", t, ps, {"act1": "gelu", "act2": "tanh"},
                 dtype=F32, hvp=weights),
    ]


def convnet_cases():
    out = []
    for name, pad2, dtype in [("convnet", 1, F64), ("convnet_pad0", 0, F64),
                              ("convnet_f32", 1, F32)]:
        fin = 6 * (2 if pad2 == 1 else 1) ** 2
        t = {"x": vals([4, 3, 8, 8], 11, -2, 2), "c1w": init([4, 3, 3, 3], 12),
             "c1b": init([4], 13), "bnw": vals([4], 14, 0.5, 1.5), "bnb": vals([4], 15, -0.5, 0.5),
             "running_mean": vals([4], 16, -0.2, 0.2), "running_var": vals([4], 17, 0.5, 1.5),
             "c2w": init([6, 4, 3, 3], 18), "c2b": init([6], 19), "fw": init([3, fin], 20),
             "fb": init([3], 21), "target": ints([4], 3, 22)}
        ps = ["c1w", "c1b", "bnw", "bnb", "c2w", "c2b", "fw", "fb", "x"]
        out.append(run_case("convnet", name, t, ps, {"momentum": 0.1, "pad2": pad2}, dtype=dtype,
                            buffers=["running_mean", "running_var"],
                            hvp=ps[:-1] if name == "convnet" else None))
    return out


def attention_cases():
    E = 8

    def params(seed, cross):
        t = {"x": vals([2, 5, E], seed)}
        if cross:
            t["mem"] = vals([2, 6, E], seed + 1)
        for i, n in enumerate(["q", "k", "v", "o"]):
            t["w" + n] = init([E, E], seed + 2 + 2 * i)
            t["b" + n] = init([E], seed + 3 + 2 * i)
        t["target"] = vals([2, 5, E], seed + 20)
        return t

    names = lambda t: [k for k in t if k not in ("target", "mask")]
    out = []
    t = params(30, False)
    out.append(run_case("attention", "attn_causal", t, names(t), {"heads": 2, "causal": True},
                        hvp=[n for n in names(t) if n != "x"]))
    out.append(run_case("attention", "attn_causal_f32", t, names(t), {"heads": 2, "causal": True},
                        dtype=F32))
    t = params(60, True)  # cross-attention with a bool mask [L, S] (no fully masked row)
    m = torch.rand(5, 6, generator=torch.Generator().manual_seed(61)) > 0.4
    m[:, 0] = True
    t["mask"] = m
    out.append(run_case("attention", "attn_cross_bool_mask", t, names(t),
                        {"heads": 2, "causal": False}))
    t = params(90, False)  # additive float mask per head [H, L, L], custom scale
    t["mask"] = vals([2, 5, 5], 91, -2, 0)
    out.append(run_case("attention", "attn_float_mask_scale", t, names(t),
                        {"heads": 2, "causal": False, "scale": 0.3}))
    return out


def resblock_cases():
    def params(d, ns, seed):
        return {"x": vals([3, 4, d], seed, -2, 2), "ln1w": vals(ns, seed + 1, 0.5, 1.5),
                "ln1b": vals(ns, seed + 2, -0.3, 0.3), "w1": init([12, d], seed + 3),
                "b1": init([12], seed + 4), "w2": init([d, 12], seed + 5),
                "b2": init([d], seed + 6),
                "ln2w": vals(ns, seed + 7, 0.5, 1.5), "ln2b": vals(ns, seed + 8, -0.3, 0.3),
                "target": vals([3, 4, d], seed + 9)}
    ps = ["x", "ln1w", "ln1b", "w1", "b1", "w2", "b2", "ln2w", "ln2b"]
    return [
        run_case("resblock", "resblock_ln", params(10, [10], 40), ps,
                 {"normalized_shape": [10], "act": "gelu"}, hvp=ps[1:]),
        run_case("resblock", "resblock_ln_2d", params(10, [4, 10], 50), ps,
                 {"normalized_shape": [4, 10], "act": "tanh"}),
        run_case("resblock", "resblock_ln_f32", params(10, [10], 40), ps,
                 {"normalized_shape": [10], "act": "gelu"}, dtype=F32),
    ]


def xent_cases():
    def params(seed, n, k=None):
        shape = [n, 7] if k is None else [n, k, 7]
        return {"x": vals(shape, seed, -2, 2), "w": init([5, 7], seed + 1),
                "b": init([5], seed + 2)}
    ps = ["x", "w", "b"]
    base = {"ignore_index": -100, "reduction": "mean", "label_smoothing": 0.0}
    out = []
    t = params(70, 6)
    t["target"] = torch.tensor([0, 3, 2, 4, 2, 1])
    t["cw"] = vals([5], 71, 0.2, 2.0)
    out.append(run_case("xent", "xent_smooth_weight_ignore", t, ps,
                        dict(base, ignore_index=2, label_smoothing=0.15)))
    out.append(run_case("xent", "xent_smooth_weight_sum", t, ps,
                        dict(base, reduction="sum", label_smoothing=0.1)))
    t2 = dict(t, coef=vals([6], 72))
    out.append(run_case("xent", "xent_none_ignore_weight", t2, ps,
                        dict(base, reduction="none", ignore_index=3, label_smoothing=0.2)))
    t3 = params(75, 6)
    t3["target"] = torch.softmax(vals([6, 5], 76, -2, 2) * 2, 1)
    t3["cw"] = vals([5], 77, 0.2, 2.0)
    out.append(run_case("xent", "xent_probs_smooth_weight", t3, ps,
                        dict(base, label_smoothing=0.25)))
    t3n = dict(t3, coef=vals([6], 78))
    del t3n["cw"]
    out.append(run_case("xent", "xent_probs_none", t3n, ps, dict(base, reduction="none")))
    t4 = params(80, 3, 4)  # [N, C, d] with classes on dim 1
    t4["target"] = torch.tensor([[0, 1, 4, 4], [2, 2, 3, 0], [1, 4, 0, 3]])
    t4["cw"] = vals([5], 81, 0.2, 2.0)
    out.append(run_case("xent", "xent_kdim_smooth_weight_ignore", t4, ps,
                        dict(base, kdim=True, ignore_index=4, label_smoothing=0.1)))
    out.append(run_case("xent", "xent_smooth_weight_ignore_f32", t, ps,
                        dict(base, ignore_index=2, label_smoothing=0.15), dtype=F32))
    return out


def mix_cases():
    out = []
    t = {"x": vals([4, 6], 100, -2, 2), "s": vals([6], 101, 0.5, 1.5),
         "gidx": torch.tensor([[0, 5, 5], [2, 1, 0], [3, 3, 3], [4, 0, 1]]),
         "ridx": torch.tensor([3, 0, 3, 1, 3]), "coef": vals([5, 9], 102)}
    out.append(run_case("mix_index", "mix_index", t, ["x", "s"]))
    t = {"x": vals([3, 7], 110, -2, 2), "w": vals([7], 111, 0.5, 1.5), "coef": vals([1, 10], 112)}
    out.append(run_case("mix_sort", "mix_sort_reflect", t, ["x", "w"], {"pad_mode": "reflect"}))
    out.append(run_case("mix_sort", "mix_sort_replicate", t, ["x", "w"], {"pad_mode": "replicate"}))
    t = {"idx": torch.tensor([[1, 2, 1, 0], [4, 0, 0, 2], [3, 1, 5, 1]]), "emb": vals([6, 5], 120),
         "w": init([4, 5], 121), "b": init([4], 122), "coef": vals([3, 4], 123)}
    out.append(run_case("mix_embed", "mix_embed_padding", t, ["emb", "w", "b"],
                        {"padding_idx": 0}))
    t = {"x": vals([5, 4], 130, -2, 2), "w1": init([6, 4], 131), "b1": init([6], 132),
         "w2": init([1, 6], 133), "b2": init([1], 134)}
    out.append(run_case("grad_penalty", "grad_penalty", t, ["w1", "b1", "w2", "b2", "x"],
                        {"lam": 10.0}))
    return out


def block_cases():
    out = []
    t = {"x": vals([2, 3, 8, 8], 140, -2, 2), "w1": init([4, 3, 3, 3], 141), "b1": init([4], 142),
         "gnw": vals([4], 143, 0.5, 1.5), "gnb": vals([4], 144, -0.3, 0.3),
         "w2": init([8, 2, 3, 3], 145), "b2": init([8], 146), "wt": init([8, 4, 3, 3], 147),
         "bt": init([4], 148), "w3": init([1, 12, 1, 1], 149), "b3": init([1], 150),
         "target": vals([2, 1, 8, 8], 151, 0, 1), "pw": vals([8], 152, 0.5, 2.0)}
    ps = ["x", "w1", "b1", "gnw", "gnb", "w2", "b2", "wt", "bt", "w3", "b3"]
    out.append(run_case("unet", "unet", t, ps, {"align_corners": False}))
    out.append(run_case("unet", "unet_align_corners_f32", t, ps, {"align_corners": True},
                        dtype=F32))
    E, V = 8, 11
    t = {"idx": ints([2, 6], V, 160), "emb": vals([V, E], 161), "g1": vals([E], 162, 0.5, 1.5),
         "wq": init([E, E], 163), "wk": init([E, E], 164), "wv": init([E, E], 165),
         "wo": init([E, E], 166), "g2": vals([E], 167, 0.5, 1.5), "wg": init([16, E], 168),
         "wu": init([16, E], 169), "wd": init([E, 16], 170), "g3": vals([E], 171, 0.5, 1.5),
         "target": ints([2, 6], V, 172)}
    ps = ["emb", "g1", "wq", "wk", "wv", "wo", "g2", "wg", "wu", "wd", "g3"]
    out.append(run_case("llama_block", "llama_block", t, ps, {"heads": 2}, hvp=ps))
    out.append(run_case("llama_block", "llama_block_f32", t, ps, {"heads": 2}, dtype=F32))
    return out


def loss_mix_cases():
    t = {"x": vals([6, 5], 180, -2, 2), "w": init([4, 5], 181), "b": init([4], 182),
         "t": vals([6, 4], 183, -1.5, 1.5), "t2": vals([6, 4], 184, -2, 2),
         "cls": torch.tensor([0, 1, 3, 2, 1, 3]), "cw": vals([4], 185, 0.2, 2.0),
         "t3": vals([6, 4], 186, 0, 1), "bw": vals([6, 4], 187, 0.5, 1.5)}
    out = [run_case("losses", "losses", t, ["x", "w", "b"])]
    m = torch.rand(5, 6, generator=torch.Generator().manual_seed(191)) > 0.7
    t = {"x": vals([5, 6], 190, -2, 2), "y": vals([5, 6], 192, -2, 2), "mask": m,
         "coef": vals([6], 193)}
    out.append(run_case("mix_where", "mix_where", t, ["x", "y"]))
    out.append(run_case("mix_where", "mix_where_hvp", t, ["x", "y"], hvp=["x", "y"]))
    t = {"x": vals([2, 3, 4], 200), "y": vals([4, 5], 201), "z": vals([3, 4], 202),
         "coef": vals([2, 4], 203)}
    out.append(run_case("mix_shape", "mix_shape", t, ["x", "y", "z"]))
    g = torch.Generator().manual_seed(211)
    t = {"x": vals([5, 4], 210, -1.5, 1.5), "src": vals([3, 4], 212, -1.5, 1.5),
         "sidx": torch.tensor([[0, 4, 2, 2], [4, 4, 0, 1], [0, 3, 2, 2]]),
         "ridx": torch.tensor([4, 0, 4]), "pr": torch.tensor([0, 2, 2, 4]),
         "pc": torch.tensor([1, 3, 3, 0]), "pv": vals([4], 213),
         "cidx": torch.tensor([[0, 3], [2, 1], [1, 0], [3, 2], [0, 1]]), "csrc": vals([5, 2], 214),
         "mask": torch.rand(5, 4, generator=g) > 0.5, "tidx": torch.tensor([0, 7, 7, 19]),
         "c1": vals([4], 215)}
    out.append(run_case("mix_scatter", "mix_scatter", t, ["x", "src", "pv", "csrc"]))
    return out


def write(family, cases):
    os.makedirs(GRAD, exist_ok=True)
    path = os.path.join(GRAD, family + ".json")
    with open(path, "w") as f:
        json.dump({"generator": "tests/gen/gen_grad.py", "torch": torch.__version__,
                   "cases": cases}, f, separators=(",", ":"))
    print("%s: %d cases, %d bytes" % (path, len(cases), os.path.getsize(path)))


if __name__ == "__main__":
    torch.use_deterministic_algorithms(True)
    write("mlp", mlp_cases())
    write("convnet", convnet_cases())
    write("attention", attention_cases())
    write("resblock", resblock_cases())
    write("xent", xent_cases())
    write("mix", mix_cases() + loss_mix_cases())
    write("blocks", block_cases())
