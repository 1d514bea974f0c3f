"""Peer rows for bench/models.cpp: the same small models in PyTorch (CPU, $THREADS threads), built
from torch.nn with the sizes ember's rows use. Run with /usr/bin/python3; writes torch_cpu.json
to $OUT or /tmp, so `ember-bench train models --filter NAME` runs both (docs/bench.md).
The environment (OpenBLAS at its best, passive OpenMP waits) is set by peer_common."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import bench, write  # noqa: E402  (sets the environment before torch loads)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def step_fn(net, opt, x, y):
    """One training step: the loss on one batch, backward, one optimizer step."""
    def step():
        opt.zero_grad()
        logits = net(x)
        F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).backward()
        opt.step()
    return step


class LstmLm(nn.Module):
    """Embedding 256 x 128, a 2-layer LSTM of hidden 128 over [T, B], a linear head."""
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(256, 128)
        self.lstm = nn.LSTM(128, 128, 2)
        self.head = nn.Linear(128, 256)

    def forward(self, tokens):
        return self.head(self.lstm(self.emb(tokens))[0])


class TransformerLm(nn.Module):
    """Token and position embeddings, 2 pre-norm causal encoder layers (d 128, 4 heads, FF 512,
    no dropout) with a final LayerNorm, a linear head; [B, T] batch first."""
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(256, 128)
        self.pos = nn.Embedding(64, 128)
        layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(128))
        self.head = nn.Linear(128, 256)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(64))
        self.register_buffer("positions", torch.arange(64))

    def forward(self, tokens):
        h = self.tok(tokens) + self.pos(self.positions)
        return self.head(self.enc(h, mask=self.mask))


net = mlp()
x16 = torch.randn(16, 784)


def mlp_fwd():
    with torch.no_grad():
        net(x16)


bench("mlp_fwd_b16", mlp_fwd, 20, 200)

net = mlp()
bench("mlp_train_step_b128",
      step_fn(net, torch.optim.Adam(net.parameters(), 1e-3), torch.randn(128, 784),
              torch.randint(0, 10, (128,))), 5, 50)

lm = LstmLm()
bench("lstm_lm_step",
      step_fn(lm, torch.optim.AdamW(lm.parameters(), 1e-3), torch.randint(0, 256, (64, 32)),
              torch.randint(0, 256, (64, 32))), 2, 10)

lm = TransformerLm()
bench("transformer_lm_step",
      step_fn(lm, torch.optim.AdamW(lm.parameters(), 1e-3), torch.randint(0, 256, (32, 64)),
              torch.randint(0, 256, (32, 64))), 2, 10)

a, b = torch.ones(4), torch.ones(4)


def tiny():
    for _ in range(1000):
        a + b


bench("tiny_op_eager", tiny, 3, 30)

write()
