"""Positional encoding goldens: the sinusoidal table of "Attention is all you need" (torch's
tutorial formula), a learned table (nn.Embedding weights), and rotary embeddings from two
independent torch implementations: Meta Llama's complex multiply (interleaved pairs) and HF
transformers' rotate_half (half-split pairs), with gradients of sum(out * w) from autograd.
Writes tests/data/modules/positional.json. Run with /usr/bin/python3 (python3-torch 1.13)."""
import json
import math
import os

import torch

from common import tensor_spec

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "modules")


def sinusoidal_table(max_len, d_model, timescale=10000.0):
    # torch's "Language modeling with nn.Transformer" tutorial, in float64.
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) *
                         (-math.log(timescale) / d_model))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def rope_freqs(dim, end, offset, theta):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    t = torch.arange(offset, end, dtype=torch.float64)
    return torch.outer(t, freqs)  # [S, D/2]


def rope_interleaved(x, offset, theta):
    # Meta's llama/model.py apply_rotary_emb: pairs (2i, 2i+1) as complex numbers.
    s, d = x.shape[-2], x.shape[-1]
    angles = rope_freqs(d, offset + s, offset, theta)
    freqs_cis = torch.polar(torch.ones_like(angles), angles)
    xc = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2))
    return torch.view_as_real(xc * freqs_cis).flatten(-2).float()


def rope_half(x, offset, theta):
    # HF transformers' Llama: cat(freqs, freqs) and rotate_half(x) = cat(-x2, x1).
    s, d = x.shape[-2], x.shape[-1]
    emb = torch.cat([rope_freqs(d, offset + s, offset, theta)] * 2, dim=-1)
    xd = x.double()
    x1, x2 = xd[..., : d // 2], xd[..., d // 2:]
    rotated = torch.cat([-x2, x1], dim=-1)
    return (xd * emb.cos() + rotated * emb.sin()).float()


def main():
    torch.manual_seed(6)
    out = {}
    # Sinusoidal: d_model 6, max_len 10; seq-first with offset 3, batch first without.
    pe = sinusoidal_table(10, 6)
    x = torch.randn(4, 2, 6)
    xb = torch.randn(2, 5, 6)
    out["sinusoidal"] = {
        "pe": tensor_spec(pe.float()), "x": tensor_spec(x), "xb": tensor_spec(xb),
        "y_offset3": tensor_spec((x.double() + pe[3:7].unsqueeze(1)).float()),
        "yb": tensor_spec((xb.double() + pe[:5]).float()),
        "pe_timescale100": tensor_spec(sinusoidal_table(4, 6, 100.0).float()),
    }
    # Learned: an Embedding's weights, added by position (seq-first, offset 2).
    emb = torch.nn.Embedding(8, 4)
    xl = torch.randn(3, 2, 4)
    pos = torch.arange(2, 5)
    out["learned"] = {"weight": tensor_spec(emb.weight), "x": tensor_spec(xl),
                      "y_offset2": tensor_spec(xl + emb(pos).unsqueeze(1))}
    # Rotary: x [N, H, S, D] = [2, 2, 5, 8], max length 16, theta 10000 and 500.
    xr = torch.randn(2, 2, 5, 8, requires_grad=True)
    w = torch.randn(2, 2, 5, 8)
    rot = {"x": tensor_spec(xr), "w": tensor_spec(w)}
    for name, fn in (("interleaved", rope_interleaved), ("half", rope_half)):
        y = fn(xr, 0, 10000.0)
        (g,) = torch.autograd.grad((y * w).sum(), xr)
        rot[name] = {"y": tensor_spec(y), "grad": tensor_spec(g),
                     "y_offset7": tensor_spec(fn(xr, 7, 10000.0)),
                     "y_theta500": tensor_spec(fn(xr, 0, 500.0))}
    out["rotary"] = rot
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "positional.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
