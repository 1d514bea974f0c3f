"""Peer rows for ember's op suites (elementwise, reduce, matmul, conv, nn) and the whole-model rows
of the shared ../shared/peers/torch_cpu.py: the same workloads in PyTorch (CPU, $THREADS threads)
on the same sizes, written with peer_common, so that a run times only the rows it asks for
($BENCH_ROWS, $BENCH_FILTER) and OpenMP waits passively. The rows torch_cpu.py also has are
built as it builds them (its figures and these agree within the machine's noise). Run with
/usr/bin/python3 (ember-bench runs it for those suites); writes torch_cpu.json to $OUT or /tmp."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import bench, wanted, write  # noqa: E402  (sets the environment before torch loads)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def needs(*rows):
    """Whether any of `rows` is wanted: inputs are built only for rows that run."""
    return any(wanted(r) for r in rows)


with torch.no_grad():
    for n in (1024, 2048):
        if needs(f"matmul_f32_{n}"):
            a, b = torch.randn(n, n), torch.randn(n, n)
            bench(f"matmul_f32_{n}", lambda: a @ b)
    if needs("add_16M", "exp_16M", "sum_16M", "chain_16M", "gelu_chain_16M", "amax_16M", "var_16M",
             "norm_16M", "argmax_16M"):
        x, w = torch.randn(1 << 24), torch.randn(1 << 24)
        bench("add_16M", lambda: x + w)
        bench("exp_16M", lambda: torch.exp(x))
        bench("sum_16M", lambda: x.sum())
        bench("chain_16M", lambda: ((x * 2 + 1).relu() * x).sum())
        bench("gelu_chain_16M", lambda: (F.gelu(x * w + 1.0) * torch.sigmoid(x) - 0.5 * w).relu())
        bench("amax_16M", lambda: torch.amax(x))
        bench("var_16M", lambda: torch.var(x))
        bench("norm_16M", lambda: torch.linalg.vector_norm(x))
        bench("argmax_16M", lambda: torch.argmax(x))
    if needs("softmax_4096x4096", "layernorm_4096x4096", "sum_rows_4096x4096", "sum_cols_4096x4096",
             "var_rows_4096x4096", "logsumexp_rows_4096x4096", "max_dim1_4096x4096",
             "max_dim0_4096x4096", "cumsum_dim1_4096x4096", "cumsum_dim0_4096x4096"):
        m = torch.randn(4096, 4096)
        bench("softmax_4096x4096", lambda: torch.softmax(m, -1))
        ln = nn.LayerNorm(4096)
        bench("layernorm_4096x4096", lambda: ln(m))
        bench("sum_rows_4096x4096", lambda: m.sum(1))
        bench("sum_cols_4096x4096", lambda: m.sum(0))
        bench("var_rows_4096x4096", lambda: m.var(1))
        bench("logsumexp_rows_4096x4096", lambda: torch.logsumexp(m, 1))
        bench("max_dim1_4096x4096", lambda: torch.max(m, 1))
        bench("max_dim0_4096x4096", lambda: torch.max(m, 0))
        bench("cumsum_dim1_4096x4096", lambda: torch.cumsum(m, 1))
        bench("cumsum_dim0_4096x4096", lambda: torch.cumsum(m, 0))
    if needs("sort_1M", "topk10_1M", "median_1M", "sort_rows_4096x256"):
        s1m, rows = torch.randn(1 << 20), torch.randn(4096, 256)
        bench("sort_1M", lambda: torch.sort(s1m), warm=1, iters=5)
        bench("sort_rows_4096x256", lambda: torch.sort(rows, 1), warm=1, iters=5)
        bench("topk10_1M", lambda: torch.topk(s1m, 10))
        bench("median_1M", lambda: torch.median(s1m))
    if needs("conv3x3_64c_56_b32_fwd"):
        conv, xi = nn.Conv2d(64, 64, 3, padding=1), torch.randn(32, 64, 56, 56)
        bench("conv3x3_64c_56_b32_fwd", lambda: conv(xi), 2, 5)
    if needs("resnet18_infer_b1"):
        try:
            import torchvision
            r18, x1 = torchvision.models.resnet18().eval(), torch.randn(1, 3, 224, 224)
            bench("resnet18_infer_b1", lambda: r18(x1), 3, 10)
        except ImportError as ex:
            print("torchvision not available:", ex)

if needs("cnn_fmnist_train_step_b64"):
    cnn = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.Adam(cnn.parameters(), 1e-3)
    xc, yc = torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))

    def cstep():
        opt.zero_grad()
        F.cross_entropy(cnn(xc), yc).backward()
        opt.step()
    bench("cnn_fmnist_train_step_b64", cstep, 3, 20)
write()
