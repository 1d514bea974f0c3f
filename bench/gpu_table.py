#!/usr/bin/python3
"""Prints ember's GPU rows beside PyTorch's (torch_gpu.py) from one scripts/gpu-check.sh run, with
the targets of the CUDA issue. Usage: gpu_table.py DIR (holding ember_cuda.json, ember_cuda_eager.json
and torch_gpu.json). Ratios are ember/peer times (lower is better); `target` is what the row must meet:
a time in ms, or a ratio to the peer's eager time."""
import json, os, sys

d = sys.argv[1]
def load(name):
    p = os.path.join(d, name)
    try:
        return json.load(open(p))
    except (OSError, ValueError):  # missing, or cut short by a crash
        return {}
def peer_rows():
    """torch_gpu.json, or, when the peer was cut short before writing it (it writes the JSON only at
    its end), the rows it printed to peer.log: "name  1.2345 ms  ..."."""
    got = load("torch_gpu.json")
    if got:
        return got
    try:
        for line in open(os.path.join(d, "peer.log")):
            f = line.split()
            if len(f) >= 3 and f[2] == "ms":
                try:
                    got[f[0]] = float(f[1])
                except ValueError:
                    pass
    except OSError:
        pass
    return got
ours, eager, peer = load("ember_cuda.json"), load("ember_cuda_eager.json"), peer_rows()
peer.update(load("torch_attention.json"))
peer.update(load("torch_cuda_models.json"))  # overrides torch_gpu.py's rows of the same name
# row: (peer eager row, peer compiled row, target kind, target value)
rows = {
    "gemm_float32_4096": ("gemm_float32_4096", None, "ratio", 1 / 0.97),
    "gemm_bfloat16_8192": ("gemm_bfloat16_8192", None, "ratio", 1 / 0.97),
    "gemm_float16_8192": ("gemm_float16_8192", None, "ratio", 1 / 0.97),
    "copy_1GiB": ("copy_1GiB", None, "ratio", 1.05),
    "elementwise_chain_64M": ("elementwise_chain_64M_eager", "elementwise_chain_64M_compiled", "ms", 0.22),
    "softmax_8192x4096": ("softmax_8192x4096", None, "ms", 0.10),
    "layernorm_8192x4096": ("layernorm_8192x4096", None, "ms", 0.10),
    "sum_rows_8192x4096": ("sum_rows_8192x4096", None, "ratio", 1.0),
    "conv3x3_64c_56_b64_f32": ("conv3x3_64c_56_b64_f32", None, "ratio", 1.0),
    "mlp_train_step_b128": ("mlp_train_step_b128_eager", None, "ms", 0.20),
    "tiny_add_dispatch": (None, None, "ms", 5.0),  # 1000 tiny adds: <= 5 us each
    # bench/peers/torch_attention_peer.py's rows (torch_attention.json)
    "attention_causal_b8h12_T4096_d64_bf16_fwd": ("attention_causal_b8h12_T4096_d64_bf16_fwd", None, "ratio", 1.0),
    "attention_causal_b8h12_T4096_d64_bf16_fwd_bwd": ("attention_causal_b8h12_T4096_d64_bf16_fwd_bwd", None, "ms", 2.0),
    # bench/cuda_models.cpp beside torch_cuda_models_peer.py (targets: the CUDA issue's figures)
    "resnet50_train_b64_f32": ("resnet50_train_b64_f32", None, "ms", 77.0),
    "resnet50_train_b64_bf16": ("resnet50_train_b64_bf16_cl", None, "ms", 25.0),
    "gpt2s_train_b8_t1024_bf16": ("gpt2s_train_b8_t1024_bf16", "gpt2s_train_b8_t1024_bf16_compiled", "ms", 20.0),
}
print("%-28s %10s %10s %10s %8s %10s %5s" % ("workload (cuda)", "ember ms", "torch ms", "compiled", "ratio", "target", "met"))
for name, (pe, pc, kind, tv) in rows.items():
    for label, src in (("", ours), (" eager", eager)):
        if name not in src:
            continue
        o = src[name]
        p = peer.get(pe) if pe else None
        c = peer.get(pc) if pc else None
        ratio = o / p if p else None
        if kind == "ms":
            met, tgt = o <= tv, "%.3g ms" % tv
        else:
            met, tgt = (ratio is not None and ratio <= tv), "x%.3g" % tv
        print("%-28s %10.4f %10s %10s %8s %10s %5s" % (
            name + label, o, "%.4f" % p if p else "-", "%.4f" % c if c else "-",
            "%.2f" % ratio if ratio else "-", tgt, "yes" if met else "NO"))
