"""Peer rows for bench/store.cpp: loading the same 500 MiB checkpoint in PyTorch. The files are
those ember_bench wrote into $OUT in the same round (written here with torch.save and a
safetensors writer when absent). torch.load reads every byte; PyTorch 1.13 has no mmap option
for .pt files, so its mapped peer is the safetensors row, which maps the file the way the
safetensors library does (torch.ByteStorage.from_file, shared=False: private, copy-on-write)
and views each tensor in it. Run with /usr/bin/python3; writes torch_cpu.json to $OUT or /tmp."""
import json, os, struct, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import bench, res, wanted, write  # noqa: E402  (sets the environment before torch loads)

import torch  # noqa: E402

OUT = os.environ.get("OUT", "/tmp")
PT, ST = os.path.join(OUT, "store_500MB.pt"), os.path.join(OUT, "store_500MB.safetensors")
DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
          "U8": torch.uint8, "BOOL": torch.bool}


def weights():
    return {f"layers.{i}.weight": torch.full((1024, 1024), float(i)) for i in range(125)}


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    os.fdatasync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def load_safetensors(path):
    """Every tensor as a view of a private mapping of the file (what safetensors' safe_open gives)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    data = torch.empty(0, dtype=torch.uint8).set_(
        torch.ByteStorage.from_file(path, shared=False, size=os.path.getsize(path)))
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        out[name] = data[8 + n + b:8 + n + end].view(DTYPES[e["dtype"]]).reshape(e["shape"])
    return out


def into(load, path, cold):
    targets = {k: torch.zeros(1024, 1024) for k in weights()}

    def run():
        if cold:
            drop_cache(path)
        sd = load(path)
        with torch.no_grad():
            for k, v in sd.items():
                targets[k].copy_(v)
    return run


ROWS = ["store_load_pt_500MB", "store_load_into_pt_500MB", "store_load_into_pt_500MB_cold",
        "store_load_safetensors_500MB", "store_load_into_safetensors_500MB"]
if any(wanted(r) for r in ROWS):  # else no files
    if not os.path.exists(PT):
        torch.save(weights(), PT)
    if not os.path.exists(ST):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "gen"))
        import safetensors_tool  # noqa: E402
        safetensors_tool.save(ST, list(weights().items()))
    bench("store_load_pt_500MB", lambda: torch.load(PT), warm=1, iters=5)
    bench("store_load_into_pt_500MB", into(torch.load, PT, False), warm=1, iters=5)
    bench("store_load_into_pt_500MB_cold", into(torch.load, PT, True), warm=1, iters=5)
    bench("store_load_safetensors_500MB", lambda: load_safetensors(ST), warm=1, iters=5)
    bench("store_load_into_safetensors_500MB", into(load_safetensors, ST, False), warm=1, iters=5)

write()
