"""Peer of bench/cuda.cpp's mixed-precision rows: PyTorch on an NVIDIA GPU with torch.autocast
(f32 master weights) — the MLP training step (784-512-512-10, relu, Adam, batch 128) in bf16,
eager and replayed as a CUDA graph (Adam capturable, autocast's weight-cast cache off inside the
graph, as torch requires), in f16 with GradScaler, and the conv3x3 64c 56x56 b64 forward and
backward in bf16. Prints one line per row: name, milliseconds (median of CUDA-event timings).
    python3 bench/peers/torch_amp_peer.py
"""
import torch, torch.nn as nn, torch.nn.functional as F

from gpu_peer_common import bench, graph_of, row, write_json

dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def mlp(dtype, capturable=False, scaled=False, cache=True):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).to(dev)
    opt = torch.optim.Adam(m.parameters(), 1e-3, capturable=capturable)
    scaler = torch.amp.GradScaler("cuda", enabled=scaled)
    xb = torch.randn(128, 784, device=dev); yb = torch.randint(0, 10, (128,), device=dev)
    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None, cache_enabled=cache):
            loss = F.cross_entropy(m(xb), yb)
        scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
        return loss
    return step


row("mlp_train_step_b128_f32_eager", bench(mlp(None)))
row("mlp_train_step_b128_bf16", bench(mlp(torch.bfloat16)))
row("mlp_train_step_b128_f16_scaled", bench(mlp(torch.float16, scaled=True)))
g = graph_of(mlp(torch.bfloat16, capturable=True, cache=False))
row("mlp_train_step_b128_bf16_captured", bench(g.replay, 20, 50, reps=20))

x = torch.randn(64, 64, 56, 56, device=dev, requires_grad=True)
w = (torch.randn(64, 64, 3, 3, device=dev) * 0.05).requires_grad_()
b = torch.zeros(64, device=dev, requires_grad=True)
def conv_step():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = F.conv2d(x, w, b, padding=1)
    gx, gw, gb = torch.autograd.grad(y.float().sum(), (x, w, b))
    return gw
row("conv3x3_64c_56_b64_bf16_fwd_bwd", bench(conv_step, 5, 20, reps=5))
write_json("torch_amp")
