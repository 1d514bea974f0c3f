"""Peer of bench/cuda_models.cpp: whole-model training steps in PyTorch on an NVIDIA GPU, the
models of ../shared/peers/torch_gpu.py. ResNet-50 (torchvision) b64 224x224 with SGD momentum in
f32 (cuDNN's TF32 default left as PyTorch sets it) and under bf16 autocast, NCHW and channels-last;
GPT-2 small (b8, T 1024, vocabulary 50304, untied head) under bf16 autocast with fused AdamW.
Prints one line per row (name, median milliseconds of CUDA-event timings) and writes
$OUT/torch_cuda_models.json.
    python3 bench/peers/torch_cuda_models_peer.py
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from gpu_peer_common import bench, row, write_json

dev = "cuda"
torch.manual_seed(0)

try:
    import torchvision
    for label, bf16, cl in (("f32", False, False), ("bf16", True, False), ("bf16_cl", True, True)):
        m = torchvision.models.resnet50().to(dev)
        x = torch.randn(64, 3, 224, 224, device=dev)
        if cl:
            m = m.to(memory_format=torch.channels_last)
            x = x.contiguous(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (64,), device=dev)
        opt = torch.optim.SGD(m.parameters(), 0.01, momentum=0.9)

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", torch.bfloat16, enabled=bf16):
                loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
        row(f"resnet50_train_b64_{label}", bench(step, 3, 10))
        del m, opt
        torch.cuda.empty_cache()
except ImportError as ex:
    print("torchvision missing:", ex)


class Block(nn.Module):
    def __init__(s, d, h):
        super().__init__(); s.ln1 = nn.LayerNorm(d); s.ln2 = nn.LayerNorm(d); s.h = h
        s.qkv = nn.Linear(d, 3 * d); s.proj = nn.Linear(d, d); s.fc = nn.Linear(d, 4 * d); s.out = nn.Linear(4 * d, d)

    def forward(s, x):
        B, T, C = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(C, 2)
        q, k, v = [t.view(B, T, s.h, C // s.h).transpose(1, 2) for t in (q, k, v)]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + s.proj(y)
        return x + s.out(F.gelu(s.fc(s.ln2(x))))


class GPT(nn.Module):
    def __init__(s, V=50304, d=768, L=12, h=12, T=1024):
        super().__init__(); s.wte = nn.Embedding(V, d); s.wpe = nn.Embedding(T, d)
        s.blocks = nn.ModuleList([Block(d, h) for _ in range(L)]); s.lnf = nn.LayerNorm(d)
        s.head = nn.Linear(d, V, bias=False)

    def forward(s, idx):
        x = s.wte(idx) + s.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in s.blocks: x = b(x)
        return s.head(s.lnf(x))


m = GPT().to(dev)
opt = torch.optim.AdamW(m.parameters(), 3e-4, fused=True)
idx = torch.randint(0, 50304, (8, 1024), device=dev)


def gpt_step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", torch.bfloat16):
        logits = m(idx)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)).float(), idx.view(-1))
    loss.backward()
    opt.step()


row("gpt2s_train_b8_t1024_bf16", bench(gpt_step, 3, 10))
write_json("torch_cuda_models")
