"""Peer rows for bench/autodiff.cpp: an MLP's forward + backward in PyTorch (CPU, $THREADS
threads), the same graph ember records. Run with /usr/bin/python3; writes torch_cpu.json to $OUT
or /tmp, so `bench/compare.py --peer bench/torch_autodiff_peer.py --filter mlp_` runs both.
OpenBLAS 0.3.21 mistakes this CPU for an old one; the peer is run at its best (SkylakeX kernels),
as in shared/peers/torch_cpu.py. OpenMP workers wait passively: torch's OpenMP pool and
OpenBLAS's pthread pool share the same cores, and with GNU OpenMP's default spin-wait an idle
OpenMP worker keeps a core from OpenBLAS's worker (or a worker of the next parallel region from
being scheduled), so linear-with-bias and relu took 8-12 ms instead of 0.6 ms and 0.01 ms here."""
import os
os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import json, statistics, time

import torch
import torch.nn.functional as F

torch.set_num_threads(int(os.environ.get("THREADS", "2")))
torch.manual_seed(0)
res = {}


def bench(name, fn, warm=3, iters=10):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    res[name] = statistics.median(ts)
    print(f"{name:36s} {res[name]:10.3f} ms", flush=True)


def linear_params(n_in, n_out):
    # nn.Linear's default initialisation: uniform in +-1/sqrt(fan_in) for weight and bias.
    k = 1.0 / n_in ** 0.5
    w = (torch.rand(n_out, n_in) * 2 - 1) * k
    b = (torch.rand(n_out) * 2 - 1) * k
    return [w.requires_grad_(), b.requires_grad_()]


# 784-512-512-10 with relu, cross_entropy on int64 targets. fwd_bwd returns the six parameter
# gradients (autograd.grad: like ember's Gradients, nothing accumulates into .grad between steps);
# fwd records the graph and drops it; fwd_nograd runs the same forward under no_grad.
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
    bench("mlp_fwd_" + tag, loss, warm, iters)
    bench("mlp_fwd_nograd_" + tag, nograd, warm, iters)


mlp("b128", 128, [784, 512, 512, 10], 10, 50)
mlp("b16", 16, [784, 512, 512, 10], 10, 100)
mlp("tiny_b16", 16, [64, 32, 32, 10], 50, 500)

json.dump(res, open(os.path.join(os.environ.get("OUT", "/tmp"), "torch_cpu.json"), "w"), indent=1)
