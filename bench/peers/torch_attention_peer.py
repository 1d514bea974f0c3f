"""Peer of bench/cuda.cpp's attention rows: PyTorch's scaled_dot_product_attention on an NVIDIA
GPU (its own fused kernels), causal, b8, 12 heads, T 4096, head size 64, bf16: the forward alone,
and forward plus backward for a fixed output gradient. Prints one line per row: name,
milliseconds (median of CUDA-event timings).
    python3 bench/peers/torch_attention_peer.py
"""
import torch
import torch.nn.functional as F

from gpu_peer_common import bench, row, write_json

dev = "cuda"
B, H, T, E = 8, 12, 4096, 64
torch.manual_seed(0)
q, k, v = (torch.randn(B, H, T, E, device=dev, dtype=torch.bfloat16, requires_grad=True)
           for _ in range(3))
dy = torch.randn(B, H, T, E, device=dev, dtype=torch.bfloat16)


def fwd():
    with torch.no_grad():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def fwd_bwd():
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return torch.autograd.grad(y, (q, k, v), dy)


row("attention_causal_b8h12_T4096_d64_bf16_fwd", bench(fwd, 5, 30))
row("attention_causal_b8h12_T4096_d64_bf16_fwd_bwd", bench(fwd_bwd, 5, 30))
write_json("torch_attention")
