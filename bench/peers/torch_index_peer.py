"""Peer rows for bench/index.cpp: the same index/layout workloads in PyTorch (CPU, $THREADS
threads). Run with /usr/bin/python3; writes torch_cpu.json to $OUT or /tmp (ember-bench index)."""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import bench, res, write  # noqa: E402  (sets the environment before torch loads)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


x = torch.randn(100000, 128); i = torch.randint(0, 100000, (50000,))
bench("idx_index_select_50k_rows_128", lambda: torch.index_select(x, 0, i))
x = torch.randn(4096, 1024); i = torch.randint(0, 1024, (4096, 1024))
bench("idx_gather_4M", lambda: torch.gather(x, 1, i))
z = torch.zeros(4096, 1024); s = torch.randn(4096, 1024)
bench("idx_scatter_add_4M", lambda: torch.scatter_add(z, 1, i, s))
z = torch.zeros(100000, 64); s = torch.randn(200000, 64); i = torch.randint(0, 100000, (200000,))
bench("idx_index_add_200k_rows_64", lambda: torch.index_add(z, 0, i, s))
bench("idx_index_put_acc_200k_rows_64", lambda: torch.index_put(z, (i,), s, accumulate=True))
x = torch.randn(1 << 22); i = torch.randint(0, 1 << 22, (1 << 22,))
bench("idx_take_4M", lambda: torch.take(x, i))
x = torch.randn(1 << 24); m = x > 0
bench("idx_masked_fill_16M", lambda: torch.masked_fill(x, m, 1.0))
bench("idx_masked_select_16M", lambda: torch.masked_select(x, m))
b = torch.randn(2048, 2048) > 0
bench("idx_nonzero_4Mx2", lambda: torch.nonzero(b))
a = torch.randn(4096, 1024)
bench("idx_cat_3x4M_dim1", lambda: torch.cat([a, a, a], 1))
xs = [torch.randn(16, 64)] * 1000
bench("idx_cat_1000_small", lambda: torch.cat(xs, 0))
bench("idx_stack_1000_small", lambda: torch.stack(xs, 0))
a = torch.randn(1024, 1024)
bench("idx_repeat_1Mx(4,1)", lambda: a.repeat(4, 1))
a = torch.randn(4096, 4096)
bench("idx_flip_16M_last", lambda: torch.flip(a, (1,)))
bench("idx_roll_16M_2d", lambda: torch.roll(a, (3, -5), (0, 1)))
bench("idx_tril_16M", lambda: torch.tril(a))
c = torch.randn(32, 64, 56, 56)
bench("idx_pad_constant_conv_input", lambda: F.pad(c, (1, 1, 1, 1)))
bench("idx_pad_reflect_conv_input", lambda: F.pad(c, (1, 1, 1, 1), mode="reflect"))
bench("idx_transpose_contiguous_16M", lambda: a.t().contiguous())
x = torch.randn(1 << 22)
bench("idx_repeat_interleave_4Mx2", lambda: torch.repeat_interleave(x, 2))

write()
