"""Peer of bench/cuda.cpp's captured rows: PyTorch on an NVIDIA GPU, eager and replayed as a CUDA
graph (torch.cuda.graph, Adam with capturable=True): the MLP training step (784-512-512-10, relu,
Adam, batch 128) and 1000 tiny adds (milliseconds per 1000 ops = microseconds per op).
Prints one line per row: name, milliseconds (median of CUDA-event timings).
    python3 bench/peers/torch_graphs_peer.py
"""
import torch, torch.nn as nn, torch.nn.functional as F

from gpu_peer_common import bench, graph_of, row, write_json

dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False


def mlp(capturable):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).to(dev)
    opt = torch.optim.Adam(m.parameters(), 1e-3, capturable=capturable)
    xb = torch.randn(128, 784, device=dev); yb = torch.randint(0, 10, (128,), device=dev)
    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(m(xb), yb); loss.backward(); opt.step()
        return loss
    return step


row("mlp_train_step_b128_eager", bench(mlp(False)))
g = graph_of(mlp(True))
row("mlp_train_step_b128_graph", bench(g.replay, 20, 200))
row("mlp_train_step_b128_graph_reps20", bench(g.replay, 5, 50, reps=20))

x = torch.ones(4, device=dev); w = torch.ones(4, device=dev)
def adds():
    y = x
    for _ in range(1000): y = y + w
    return y
row("tiny_op_cuda_eager_x1000", bench(adds, 3, 30))
g2 = graph_of(adds, 1)
row("tiny_op_cuda_graph_x1000", bench(g2.replay, 5, 30))
write_json("torch_graphs")
