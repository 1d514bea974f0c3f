"""Peer of bench/cuda.cpp: the same rows in PyTorch on the same GPU (CUDA-event medians).
Usage: python3 bench/torch_cuda_peer.py (prints one line per row; writes $OUT/torch_cuda.json)."""
import json, os
import torch, torch.nn.functional as F

dev = "cuda"
res = {}

def bench(fn, warm=5, iters=30):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort(); return ts[len(ts) // 2]

def row(name, ms):
    res[name] = ms
    print(f"{name:36s} torch  {ms:10.4f} ms", flush=True)

x = torch.randn(1 << 26, device=dev); w = torch.randn(1 << 26, device=dev)
row("cuda_gelu_chain_64M", bench(lambda: (F.gelu(x * w + 1.0) * torch.sigmoid(x) - 0.5 * w).relu()))
del x, w
x = torch.randn(8192, 4096, device=dev)
row("cuda_softmax_8192x4096", bench(lambda: torch.softmax(x, -1)))
ln = torch.nn.LayerNorm(4096, device=dev)
with torch.no_grad():
    row("cuda_layer_norm_8192x4096", bench(lambda: ln(x)))
a = torch.ones(4, device=dev); b = torch.ones(4, device=dev)
def tiny():
    for _ in range(1000): a + b
row("cuda_tiny_op", bench(tiny) / 1000)
with open(os.path.join(os.environ.get("OUT", "/tmp"), "torch_cuda.json"), "w") as f:
    json.dump(res, f)
