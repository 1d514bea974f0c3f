"""TransformerDecoderLayer, TransformerDecoder and Transformer goldens from PyTorch: state_dict
keys/shapes, printed summaries, parameter values, forward outputs with masks, and gradients of
sum(out * w) with respect to tgt and memory. Writes tests/data/modules/transformer_decoder.json.
Run with /usr/bin/python3 (Debian's python3-torch 1.13)."""
import json
import os

import torch
from torch import nn

from common import tensor_spec
from gen_modules import module_spec

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "modules")


def main():
    torch.manual_seed(5)
    layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
    dec = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(8))
    pre = nn.TransformerDecoderLayer(8, 4, dim_feedforward=12, dropout=0.0, activation="gelu",
                                     batch_first=True, norm_first=True)
    full = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                          dim_feedforward=12, dropout=0.0, batch_first=True)
    # Training mode (dropout 0) keeps PyTorch off its fused inference paths.
    for m in (dec, pre, full):
        m.train()

    tgt, memory = torch.randn(4, 2, 8), torch.randn(5, 2, 8)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(4)
    memory_mask = torch.zeros(4, 5, dtype=torch.bool)
    memory_mask[0, 4] = memory_mask[2, 1] = True
    tgt_kpm = torch.tensor([[False] * 4, [False, False, False, True]])
    mem_kpm = torch.tensor([[False] * 5, [False, False, True, False, True]])
    y = dec(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_kpm, memory_key_padding_mask=mem_kpm)

    tgtb = torch.randn(2, 4, 8, requires_grad=True)
    memb = torch.randn(2, 6, 8, requires_grad=True)
    yb = pre(tgtb, memb)
    w = torch.randn(yb.shape)
    g_tgt, g_mem = torch.autograd.grad((yb * w).sum(), (tgtb, memb))

    src, tgt2 = torch.randn(2, 5, 8), torch.randn(2, 3, 8)
    src_kpm = torch.tensor([[False] * 5, [False, False, False, False, True]])
    yt = full(src, tgt2, tgt_mask=nn.Transformer.generate_square_subsequent_mask(3),
              src_key_padding_mask=src_kpm, memory_key_padding_mask=src_kpm)

    out = {"decoder": module_spec(dec), "pre": module_spec(pre), "transformer": module_spec(full)}
    io = {"tgt": tgt, "memory": memory, "tgt_mask": tgt_mask, "memory_mask": memory_mask,
          "tgt_kpm": tgt_kpm, "mem_kpm": mem_kpm, "y": y, "tgtb": tgtb, "memb": memb, "yb": yb,
          "w": w, "g_tgt": g_tgt, "g_mem": g_mem, "src": src, "tgt2": tgt2, "src_kpm": src_kpm,
          "yt": yt}
    out["io"] = {k: tensor_spec(v.detach()) for k, v in io.items()}
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "transformer_decoder.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
