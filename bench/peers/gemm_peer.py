"""Peer rows for the cpu backend's heavy ops: sgemm 2048 through OpenBLAS (torch's matmul on
Debian's torch is the system OpenBLAS) and through oneDNN directly (dnnl_sgemm from the system
libdnnl, called with ctypes: the library the cpu backend uses, without ember around it), and
PyTorch's conv3x3 64->64 on 32x56x56 (oneDNN inside torch, with its reorders). Rows carry the
library in brackets; ember-bench compares ember's `matmul_f32_2048` (and `matmul_f32_2048@cpu`) with
each and with the best: `ember-bench matmul conv --device cpu --filter @cpu --peer gemm`."""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import bench, write  # noqa: E402  (sets the environment before torch loads)

import torch  # noqa: E402

if "openblas" not in open("/proc/self/maps").read():
    torch.randn(64, 64) @ torch.randn(64, 64)  # loads the BLAS
    if "openblas" not in open("/proc/self/maps").read():
        raise SystemExit("gemm_peer.py: torch is not using OpenBLAS (apt-get install libopenblas0-pthread)")

for n in (1024, 2048):
    a, b = torch.randn(n, n), torch.randn(n, n)
    bench(f"matmul_f32_{n}[openblas]", lambda: a @ b)

# oneDNN's own sgemm (row-major C = A B). torch.set_num_threads (in peer_common) set the OpenMP
# team size of this thread, which oneDNN's GNU OpenMP runtime reads too.
dnnl = ctypes.CDLL("libdnnl.so.2")
dnnl.dnnl_sgemm.restype = ctypes.c_int
dnnl.dnnl_sgemm.argtypes = [ctypes.c_char, ctypes.c_char] + [ctypes.c_int64] * 3 + [
    ctypes.c_float, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
    ctypes.c_float, ctypes.c_void_p, ctypes.c_int64]
for n in (1024, 2048):
    a, b, c = torch.randn(n, n), torch.randn(n, n), torch.empty(n, n)

    def sgemm():
        st = dnnl.dnnl_sgemm(b"N", b"N", n, n, n, 1.0, a.data_ptr(), n, b.data_ptr(), n, 0.0,
                             c.data_ptr(), n)
        assert st == 0, st

    sgemm()
    assert torch.allclose(c, a @ b, rtol=1e-3, atol=1e-2)
    bench(f"matmul_f32_{n}[onednn]", sgemm)

conv = torch.nn.Conv2d(64, 64, 3, padding=1)
xi = torch.randn(32, 64, 56, 56)
with torch.no_grad():
    bench("conv3x3_64c_56_b32_fwd[torch]", lambda: conv(xi), 2, 5)
write()
