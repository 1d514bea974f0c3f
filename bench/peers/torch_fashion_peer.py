"""Peer row for bench/fashion_mnist.cpp: one training epoch of examples/fashion_mnist/reference.py
(same CNN, Adam 1e-3, batch 64, shuffled, the real data) in PyTorch on $THREADS threads. Run by
`ember-bench train --filter fashion_mnist_epoch --peer torch_fashion`."""
import os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "fashion_mnist"))
from peer_common import bench, write  # noqa: E402  (sets the environment before torch loads)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import reference  # noqa: E402

xtr, ytr = reference.load("train")
net = reference.Net()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)


def epoch(batch=64):
    net.train()
    perm = torch.randperm(len(xtr))
    for i in range(0, len(xtr) - batch + 1, batch):
        idx = perm[i:i + batch]
        opt.zero_grad()
        F.cross_entropy(net(xtr[idx]), ytr[idx]).backward()
        opt.step()


bench("fashion_mnist_epoch", epoch, warm=0, iters=1)
write()
