#!/usr/bin/python3
"""Writes the PyTorch files ember's reader is tested on (tests/data/store/pytorch/), with Debian's
torch: each NAME.pt (zip format), NAME_legacy.pt (_use_new_zipfile_serialization=False) and
NAME.json, the expected flat tensors (dotted keys, as PtValue::tensors() names them) and scalars.
Run: /usr/bin/python3 tests/gen/gen_pytorch_files.py
"""
import collections
import io
import json
import os
import zipfile

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "store", "pytorch")
MARKER = "/tmp/ember_pytorch_malicious_marker"
DTYPES = {torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16",
          torch.int32: "int32", torch.int64: "int64", torch.float16: "float16",
          torch.bfloat16: "bfloat16", torch.float32: "float32", torch.float64: "float64"}


def flat(obj, prefix, out):
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        vals = t.flatten().to(torch.float64 if t.is_floating_point() else torch.int64).tolist()
        out[prefix] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "values": vals}
    elif isinstance(obj, dict):
        for k, v in obj.items():
            flat(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            flat(v, f"{prefix}.{i}" if prefix else str(i), out)


def write(name, obj, scalars=None, legacy=True, protocol=2):
    torch.save(obj, os.path.join(OUT, name + ".pt"), pickle_protocol=protocol)
    if legacy:
        torch.save(obj, os.path.join(OUT, name + "_legacy.pt"), pickle_protocol=protocol,
                   _use_new_zipfile_serialization=False)
    tensors = {}
    flat(obj, "", tensors)
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump({"tensors": tensors, "order": list(tensors), "scalars": scalars or {}}, f,
                  indent=0)


class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + MARKER,))


def main():
    os.makedirs(OUT, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    dtypes = collections.OrderedDict()
    for dt in DTYPES:
        r = torch.randn(2, 3, generator=g) * 50
        dtypes[DTYPES[dt]] = (r > 0) if dt == torch.bool else r.to(dt)
    dtypes["num_batches_tracked"] = torch.tensor(7)
    dtypes["big"] = torch.tensor([2**40, -2**62, 5], dtype=torch.int64)
    dtypes["empty"] = torch.zeros(0, 3)
    write("dtypes", dtypes)

    base = torch.arange(24, dtype=torch.float32)
    views = collections.OrderedDict(
        base=base, slice=base[4:10], transposed=base.view(4, 6).t(),
        strided=base.view(4, 6)[1:, ::2], scalar=base[5])
    write("views", views)

    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    torch.manual_seed(1)
    for p in model.parameters():
        p.data.normal_(generator=g)
    sd = model.state_dict()  # an OrderedDict with _metadata (pickled with BUILD)
    nested = {"model": sd, "optimizer": {"state": {0: {"step": 3, "exp_avg": torch.ones(2, 3)}},
                                         "param_groups": [{"lr": 0.1, "params": [0, 1]}]},
              "epoch": 5, "name": "run", "flag": True, "nothing": None, "ratio": 0.5,
              "sizes": torch.Size([2, 3]), "param": torch.nn.Parameter(torch.full((2,), 3.0))}
    write("nested", nested, {"epoch": 5, "name": "run", "flag": True, "ratio": 0.5})
    write("nested_p4", nested, legacy=False, protocol=4)

    lightning = {"epoch": 3, "global_step": 100, "pytorch-lightning_version": "1.9.0",
                 "state_dict": collections.OrderedDict(
                     ("model." + k, v) for k, v in sd.items()),
                 "hyper_parameters": {"lr": 1e-3}, "callbacks": {}}
    write("lightning", lightning, {"epoch": 3, "global_step": 100})

    # The zip format with deflated entries (torch writes them stored; other tools may not).
    src = os.path.join(OUT, "views.pt")
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(os.path.join(OUT, "views_deflated.pt"),
                                                      "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            zout.writestr(item.filename, zin.read(item.filename))

    # A pickle whose loading would run os.system: every reader must refuse it and run nothing.
    torch.save({"weight": torch.ones(2), "payload": Evil()}, os.path.join(OUT, "malicious.pt"))
    torch.save({"weight": torch.ones(2), "payload": Evil()},
               os.path.join(OUT, "malicious_legacy.pt"), _use_new_zipfile_serialization=False)


if __name__ == "__main__":
    main()
