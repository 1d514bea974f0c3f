"""Module goldens: state_dict keys/shapes, parameter counts, printed summaries, a forward pass
with known weights, and initialisation statistics, from PyTorch. Writes
tests/data/modules/*.json. Run with /usr/bin/python3 (Debian's python3-torch)."""
import json
import math
import os

import torch
from torch import nn

from common import tensor_spec

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "modules")


class SmallCNN(nn.Module):
    """Mirrored by SmallCNN in tests/nn/module_golden_test.cpp."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(4, 6, 3, bias=False), nn.GroupNorm(2, 6), nn.GELU(),
            nn.AdaptiveAvgPool2d(1))
        self.flatten = nn.Flatten()
        self.head = nn.ModuleDict({"fc": nn.Linear(6, 5), "ln": nn.LayerNorm(5)})
        self.blocks = nn.ModuleList([nn.Linear(5, 5), nn.Dropout(0.25), nn.SiLU()])
        self.bn1 = nn.BatchNorm1d(5, momentum=None)
        self.emb = nn.Embedding(7, 5, padding_idx=0)

    def forward(self, x, idx):
        y = self.head["ln"](self.head["fc"](self.flatten(self.features(x))))
        for b in self.blocks:
            y = b(y)
        return self.bn1(y) + self.emb(idx)


def weighted_cnn():
    """A SmallCNN with non-trivial weights, affine parameters and running statistics."""
    torch.manual_seed(0)
    net = SmallCNN()
    with torch.no_grad():
        for name, p in net.named_parameters():
            p.copy_(torch.randn(p.shape) * 0.5 + (1.0 if name.endswith("weight") else 0.0))
        net.features[1].running_mean.copy_(torch.randn(4) * 0.1)
        net.features[1].running_var.copy_(torch.rand(4) + 0.5)
        net.features[1].num_batches_tracked.fill_(3)
    return net


def small_cnn():
    net = weighted_cnn()
    values = [[k, tensor_spec(v)] for k, v in net.state_dict().items()]
    x = torch.randn(2, 1, 8, 8)
    idx = torch.tensor([0, 3])
    net.eval()
    eval_out = net(x, idx)
    # One training step: batch statistics, running statistics updated (cumulative for bn1).
    net.train()
    net.blocks[1].p = 0.0  # keep the training output deterministic
    train_out = net(x, idx)
    after = {k: tensor_spec(v) for k, v in net.state_dict().items()
             if "running" in k or "num_batches" in k}
    torch.manual_seed(0)
    fresh = SmallCNN()
    return {
        "state_dict": [[k, list(v.shape)] for k, v in fresh.state_dict().items()],
        "parameters": [k for k, _ in fresh.named_parameters()],
        "buffers": [k for k, _ in fresh.named_buffers()],
        "num_parameters": sum(p.numel() for p in fresh.parameters()),
        "repr": repr(fresh),
        "values": values,
        "x": tensor_spec(x),
        "idx": tensor_spec(idx),
        "eval_out": tensor_spec(eval_out.detach()),
        "train_out": tensor_spec(train_out.detach()),
        "after_train": after,
    }


class Extras(nn.Module):
    """Mirrored by Extras in tests/nn/module_extras_test.cpp."""

    def __init__(self):
        super().__init__()
        self.conv3 = nn.Conv3d(2, 3, (2, 3, 3), stride=(1, 2, 1), padding=1)
        self.convt1 = nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1)
        self.convt2 = nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, bias=False)
        self.pool1 = nn.MaxPool1d(2)
        self.avg1 = nn.AvgPool1d(3, stride=1, padding=1)
        self.ada1 = nn.AdaptiveAvgPool1d(3)
        self.inorm = nn.InstanceNorm2d(6, affine=True)
        self.inorm1 = nn.InstanceNorm1d(4)
        self.bil = nn.Bilinear(3, 4, 5)
        self.mha = nn.MultiheadAttention(8, 2)


def extras():
    torch.manual_seed(1)
    m = Extras()
    with torch.no_grad():
        for name, p in m.named_parameters():
            shift = 1.0 if "inorm" in name and "weight" in name else 0.0
            p.copy_(torch.randn(p.shape) * 0.5 + shift)
    m.eval()
    x3 = torch.randn(2, 2, 4, 5, 5)
    x1 = torch.randn(2, 4, 7)
    x2 = torch.randn(1, 4, 3, 3)
    a, b = torch.randn(2, 3, 3), torch.randn(2, 3, 4)
    q, kv = torch.randn(3, 2, 8), torch.randn(4, 2, 8)
    kpm = torch.tensor([[False, False, True, False], [False, False, False, True]])
    am = torch.triu(torch.full((3, 4), float("-inf")), diagonal=2)
    t2 = m.convt2(x2)
    mo, mw = m.mha(q, kv, kv, key_padding_mask=kpm, attn_mask=am)
    _, mw_heads = m.mha(q, kv, kv, attn_mask=am < 0, average_attn_weights=False)
    outs = {
        "conv3": m.conv3(x3), "convt1": m.convt1(x1), "convt2": t2, "pool1": m.pool1(x1),
        "avg1": m.avg1(x1), "ada1": m.ada1(x1), "inorm": m.inorm(t2), "inorm1": m.inorm1(x1[0]),
        "bil": m.bil(a, b), "mha_out": mo, "mha_weights": mw, "mha_weights_heads": mw_heads,
    }
    return {
        "state_dict": [[k, list(v.shape)] for k, v in m.state_dict().items()],
        # PyTorch names out_proj's class NonDynamicallyQuantizableLinear; ember's is a Linear.
        "repr": repr(m).replace("NonDynamicallyQuantizableLinear", "Linear"),
        "values": [[k, tensor_spec(v)] for k, v in m.state_dict().items()],
        "inputs": {k: tensor_spec(v) for k, v in
                   {"x3": x3, "x1": x1, "x2": x2, "a": a, "b": b, "q": q, "kv": kv, "kpm": kpm,
                    "am": am}.items()},
        "outputs": {k: tensor_spec(v.detach()) for k, v in outs.items()},
    }


def activations():
    """Each activation module's summary line and output on one input."""
    torch.manual_seed(2)
    x = torch.randn(2, 4, 6) * 3
    prelu4 = nn.PReLU(4)
    with torch.no_grad():
        prelu4.weight.copy_(torch.tensor([0.1, -0.2, 0.3, 0.5]))
    mods = {
        "relu6": nn.ReLU6(), "softsign": nn.Softsign(), "logsigmoid": nn.LogSigmoid(),
        "selu": nn.SELU(), "tanhshrink": nn.Tanhshrink(), "hardtanh": nn.Hardtanh(-0.5, 2.0),
        "celu": nn.CELU(0.7), "threshold": nn.Threshold(0.1, -2.0), "glu": nn.GLU(),
        "softmin": nn.Softmin(1), "prelu": nn.PReLU(), "prelu4": prelu4, "mish": nn.Mish(),
        "hardswish": nn.Hardswish(), "hardsigmoid": nn.Hardsigmoid(),
        "softplus": nn.Softplus(2.0, 1.0), "gelu_tanh": nn.GELU("tanh"), "elu": nn.ELU(0.5),
        "leaky_relu": nn.LeakyReLU(0.2), "silu": nn.SiLU(), "log_softmax": nn.LogSoftmax(2),
    }
    return {
        "x": tensor_spec(x),
        "repr": {k: repr(m) for k, m in mods.items()},
        "outputs": {k: tensor_spec(m(x).detach()) for k, m in mods.items()},
    }


def module_spec(m):
    """state_dict keys and shapes, the printed summary (torch's MultiheadAttention names its
    out_proj NonDynamicallyQuantizableLinear) and the values, for check_keys_and_load."""
    return {
        "state_dict": [[k, list(v.shape)] for k, v in m.state_dict().items()],
        "repr": repr(m).replace("NonDynamicallyQuantizableLinear", "Linear"),
        "values": [[k, tensor_spec(v)] for k, v in m.state_dict().items()],
    }


def rnn():
    """LSTM (2 layers, bidirectional) and GRU (batch_first): keys, summary, outputs and states."""
    torch.manual_seed(3)
    lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    gru = nn.GRU(3, 4, batch_first=True)
    x = torch.randn(5, 2, 3)
    h0, c0 = torch.randn(4, 2, 4), torch.randn(4, 2, 4)
    y, (hn, cn) = lstm(x, (h0, c0))
    xb = torch.randn(2, 6, 3)
    g0 = torch.randn(1, 2, 4)
    gy, gh = gru(xb, g0)
    out = {name: module_spec(m) for name, m in (("lstm", lstm), ("gru", gru))}
    out["lstm"]["io"] = {k: tensor_spec(v.detach()) for k, v in
                         {"x": x, "h0": h0, "c0": c0, "y": y, "hn": hn, "cn": cn}.items()}
    out["gru"]["io"] = {k: tensor_spec(v.detach()) for k, v in
                        {"x": xb, "h0": g0, "y": gy, "hn": gh}.items()}
    return out


def transformer():
    """A 2-layer post-norm encoder with a final norm and a pre-norm gelu layer (batch first)."""
    torch.manual_seed(4)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8))
    pre = nn.TransformerEncoderLayer(8, 4, dim_feedforward=12, dropout=0.0, activation="gelu",
                                     batch_first=True, norm_first=True)
    x = torch.randn(5, 2, 8)
    kpm = torch.tensor([[False] * 5, [False, False, False, True, True]])
    causal = torch.triu(torch.full((5, 5), float("-inf")), diagonal=1)
    # Training mode (dropout 0) keeps PyTorch off its fused inference path.
    enc.train()
    pre.train()
    y = enc(x, mask=causal, src_key_padding_mask=kpm)
    xb = torch.randn(2, 5, 8)
    yb = pre(xb)
    out = {name: module_spec(m) for name, m in (("encoder", enc), ("pre", pre))}
    out["io"] = {k: tensor_spec(v.detach()) for k, v in
                 {"x": x, "kpm": kpm, "causal": causal, "y": y, "xb": xb, "yb": yb}.items()}
    return out


def init_stats():
    """Sample statistics of default initialisations (large layers, so sampling noise is small)."""
    torch.manual_seed(0)
    out = {}

    def st(t, fan_in=None):
        t = t.detach().double()
        s = {"mean": t.mean().item(), "std": t.std().item(), "min": t.min().item(),
             "max": t.max().item(), "numel": t.numel()}
        if fan_in is not None:  # uniform(-b, b) with b = 1/sqrt(fan_in), from torch's own helper
            s["bound"] = 1 / math.sqrt(fan_in)
        return s

    def fan_in(w):
        return nn.init._calculate_fan_in_and_fan_out(w)[0]

    lin = nn.Linear(400, 300)
    out["linear.weight"] = st(lin.weight, fan_in(lin.weight))
    out["linear.bias"] = st(lin.bias, fan_in(lin.weight))
    conv = nn.Conv2d(16, 64, 3)
    out["conv2d.weight"] = st(conv.weight, fan_in(conv.weight))
    out["conv2d.bias"] = st(conv.bias, fan_in(conv.weight))
    conv1 = nn.Conv1d(8, 32, 5, groups=2)
    out["conv1d.weight"] = st(conv1.weight, fan_in(conv1.weight))
    out["conv1d.bias"] = st(conv1.bias, fan_in(conv1.weight))
    emb = nn.Embedding(300, 200)
    out["embedding.weight"] = st(emb.weight)
    return out


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "small_cnn.json"), "w") as f:
        json.dump(small_cnn(), f, indent=1)
    with open(os.path.join(OUT, "extras.json"), "w") as f:
        json.dump(extras(), f, indent=1)
    with open(os.path.join(OUT, "activations.json"), "w") as f:
        json.dump(activations(), f, indent=1)
    with open(os.path.join(OUT, "rnn.json"), "w") as f:
        json.dump(rnn(), f, indent=1)
    with open(os.path.join(OUT, "transformer.json"), "w") as f:
        json.dump(transformer(), f, indent=1)
    with open(os.path.join(OUT, "init_stats.json"), "w") as f:
        json.dump(init_stats(), f, indent=1)
