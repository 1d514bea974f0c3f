"""Peer of bench/cuda.cpp's captured rows: PyTorch on an NVIDIA GPU, eager and replayed as a CUDA
graph (torch.cuda.graph, Adam with capturable=True): the MLP training step (784-512-512-10, relu,
Adam, batch 128) and 1000 tiny adds (milliseconds per 1000 ops = microseconds per op).
Prints one line per row: name, milliseconds (median of CUDA-event timings), and writes the rows
to $OUT/torch_graphs.json (or /tmp) for ember-bench.
    python3 bench/peers/torch_graphs_peer.py
"""
import torch, torch.nn as nn, torch.nn.functional as F

dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False


def bench(fn, warm=10, iters=100, reps=1):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(reps): fn()
        e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / reps)
    ts.sort(); return ts[len(ts) // 2]


res = {}


def row(name, ms):
    res[name] = ms
    print(f"{name:40s} {ms:10.4f} ms", flush=True)


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
step = mlp(True)
side = torch.cuda.Stream(); side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    for _ in range(3): step()
torch.cuda.current_stream().wait_stream(side)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    step()
row("mlp_train_step_b128_graph", bench(g.replay, 20, 200))
row("mlp_train_step_b128_graph_reps20", bench(g.replay, 5, 50, reps=20))

x = torch.ones(4, device=dev); w = torch.ones(4, device=dev)
def adds():
    y = x
    for _ in range(1000): y = y + w
    return y
row("tiny_op_cuda_eager_x1000", bench(adds, 3, 30))
side = torch.cuda.Stream(); side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    adds()
torch.cuda.current_stream().wait_stream(side)
g2 = torch.cuda.CUDAGraph()
with torch.cuda.graph(g2):
    adds()
row("tiny_op_cuda_graph_x1000", bench(g2.replay, 5, 30))
import json, os  # noqa: E402
with open(os.path.join(os.environ.get("OUT", "/tmp"), "torch_graphs.json"), "w") as f:
    json.dump(res, f, indent=1)
