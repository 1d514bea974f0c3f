"""Peer rows for bench/autodiff.cpp: an MLP's forward + backward in PyTorch (CPU, $THREADS
threads), the same graph ember records. Run with /usr/bin/python3; writes torch_cpu.json to $OUT
or /tmp, so `ember-bench autodiff --filter mlp_` runs both (docs/bench.md).
The environment (OpenBLAS at its best, passive OpenMP waits) is set by peer_common."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import bench, res, write  # noqa: E402  (sets the environment before torch loads)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def linear_params(n_in, n_out):
    # nn.Linear's default initialisation: uniform in +-1/sqrt(fan_in) for weight and bias.
    k = 1.0 / n_in ** 0.5
    w = (torch.rand(n_out, n_in) * 2 - 1) * k
    b = (torch.rand(n_out) * 2 - 1) * k
    return [w.requires_grad_(), b.requires_grad_()]


# 784-512-512-10 with relu, cross_entropy on int64 targets. fwd_bwd returns the six parameter
# gradients (autograd.grad: like ember's backward({.accumulate_grad = false}), nothing accumulates
# into .grad between steps);
# fwd_taped records the graph and drops it; fwd_nograd runs the same forward under no_grad.
def mlp(tag, batch, widths, warm, iters):
    params = []
    for n_in, n_out in zip(widths[:-1], widths[1:]):
        params += linear_params(n_in, n_out)
    x = torch.randn(batch, widths[0])
    y = torch.randint(0, widths[-1], (batch,))

    def loss():
        h = x
        for i in range(0, len(params), 2):
            h = F.linear(h, params[i], params[i + 1])
            if i + 2 < len(params):
                h = F.relu(h)
        return F.cross_entropy(h, y)

    def nograd():
        with torch.no_grad():
            loss()

    bench("mlp_fwd_bwd_" + tag, lambda: torch.autograd.grad(loss(), params), warm, iters)
    bench("mlp_fwd_taped_" + tag, loss, warm, iters)
    bench("mlp_fwd_nograd_" + tag, nograd, warm, iters)


mlp("b128", 128, [784, 512, 512, 10], 10, 50)
mlp("b16", 16, [784, 512, 512, 10], 10, 100)
mlp("tiny_b16", 16, [64, 32, 32, 10], 50, 500)

write()
