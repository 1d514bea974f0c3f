"""A small reader/writer of the safetensors format (standard library + torch/numpy only).

Debian's python3-torch has no `safetensors` package; this follows the spec
(https://github.com/huggingface/safetensors#format) closely enough to cross-check ember:
8-byte little-endian header length, compact JSON header ("__metadata__" first, keys sorted, then
tensors in the given order with dtype, shape, data_offsets), spaces padding the header to a
multiple of 8 bytes, then each tensor's little-endian bytes back to back.

  /usr/bin/python3 tests/gen/safetensors_tool.py            # writes tests/data/store fixtures
  /usr/bin/python3 tests/gen/safetensors_tool.py dump FILE  # prints a file's header and tensors
"""
import json
import os
import struct
import sys

import torch

DTYPES = {
    torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8", torch.int16: "I16",
    torch.int32: "I32", torch.int64: "I64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.float32: "F32", torch.float64: "F64",
    # C64 is in the spec; C128 is ember's own name (the spec has no 128-bit complex)
    torch.complex64: "C64", torch.complex128: "C128",
}
FROM_NAME = {v: k for k, v in DTYPES.items()}


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: same bits as int16
        t = t.view(torch.int16)
    a = t.numpy()
    return a.astype(a.dtype.newbyteorder("<")).tobytes()


def save(path, tensors, metadata=None):
    """tensors: list of (name, torch.Tensor) in file order; metadata: dict str -> str."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = dict(sorted(metadata.items()))
    blobs = []
    for name, t in tensors:
        b = tensor_bytes(t)
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def load(path):
    """Returns ([(name, tensor)] in data order, metadata), validating offsets like the spec."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    metadata = header.pop("__metadata__", {})
    items = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"])
    out, at = [], 0
    for name, e in items:
        begin, end = e["data_offsets"]
        assert begin == at, f"{name}: gap or overlap at {begin}"
        dtype = FROM_NAME[e["dtype"]]
        buf = bytearray(data[begin:end])
        if e["dtype"] == "BF16":
            t = torch.frombuffer(buf, dtype=torch.int16).view(torch.bfloat16) if buf else \
                torch.empty(0, dtype=dtype)
        else:
            t = torch.frombuffer(buf, dtype=dtype) if buf else torch.empty(0, dtype=dtype)
        out.append((name, t.reshape(e["shape"]).clone()))
        at = end
    assert at == len(data), "trailing bytes"
    return out, metadata


def fixture_tensors():
    g = torch.Generator().manual_seed(7)
    return [
        ("encoder.layer.0.weight", torch.randn(3, 4, generator=g)),
        ("encoder.layer.0.bias", torch.randn(4, generator=g).double()),
        ("embed.half", torch.randn(2, 3, generator=g).half()),
        ("embed.bf16", torch.randn(5, generator=g).bfloat16()),
        ("counts.i64", torch.tensor([0, -1, 2**40 + 3, -2**62, 7])),
        ("counts.i32", torch.randint(-2**31, 2**31 - 1, (2, 2), generator=g, dtype=torch.int32)),
        ("counts.i16", torch.tensor([[-32768, 32767, 5]], dtype=torch.int16)),
        ("counts.i8", torch.tensor([-128, 127, 0], dtype=torch.int8)),
        ("counts.u8", torch.tensor([0, 255, 17], dtype=torch.uint8)),
        ("mask", torch.tensor([[True, False], [False, True]])),
        ("scalar", torch.tensor(2.5)),
        ("empty", torch.zeros(0, 3)),
    ]


def write_fixtures(out_dir):
    tensors = fixture_tensors()
    meta = {"format": "pt", "producer": "safetensors_tool.py", "note": "caf\u00e9 \u2713"}
    save(os.path.join(out_dir, "mixed.safetensors"), tensors, meta)
    values = {"metadata": meta, "tensors": [
        {"name": n, "dtype": DTYPES[t.dtype], "shape": list(t.shape),
         "values": [int(v) if isinstance(v, bool) else v for v in t.flatten().tolist()]}
        for n, t in tensors]}
    with open(os.path.join(out_dir, "mixed.json"), "w") as f:
        json.dump(values, f, indent=1)
    # The reader reads back exactly what the writer wrote.
    back, meta_back = load(os.path.join(out_dir, "mixed.safetensors"))
    assert meta_back == meta
    for (n0, t0), (n1, t1) in zip(tensors, back):
        assert n0 == n1 and t0.dtype == t1.dtype and torch.equal(t0, t1), n0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "dump":
        tensors, meta = load(sys.argv[2])
        print("metadata:", meta)
        for n, t in tensors:
            print(n, t)
    else:
        here = os.path.dirname(os.path.abspath(__file__))
        write_fixtures(os.path.join(here, "..", "data", "store"))
