"""Small real models exported by torch.onnx, with inputs and torch's outputs, for
tests/onnx/model_test.cpp. Run with Debian's /usr/bin/python3 (python3-torch, python3-onnx);
writes tests/data/onnx_models/<model>_op<opset>/ in the layout of ONNX's node cases: model.onnx
and test_data_set_<k>/{input,output}_<i>.pb, one data set per batch size (1 and 2). The batch
dim is dynamic in every model, so one model serves both.
"""
import os
import shutil

import onnx
import onnx.numpy_helper
import torch
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "onnx_models")


class TinyCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.b1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.b1(self.c1(x)))
        x = nn.functional.max_pool2d(x, 2)
        x = torch.relu(self.c2(x))
        x = nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=2)

    def forward(self, x):
        return self.enc(x)


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 16, num_layers=1, batch_first=True)

    def forward(self, x):
        y, (h, c) = self.rnn(x)
        return y, h, c


class BiGru(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(8, 12, num_layers=2, batch_first=True, bidirectional=True)

    def forward(self, x):
        y, h = self.rnn(x)
        return y, h


# name: (module, input shape without the batch dim)
MODELS = {
    "tiny_cnn": (TinyCnn, [3, 16, 16]),
    "transformer_encoder": (Encoder, [5, 32]),
    "lstm": (Lstm, [6, 8]),
    "bigru": (BiGru, [6, 8]),
}


def save(t, path, name):
    p = onnx.numpy_helper.from_array(t.detach().numpy(), name)
    with open(path, "wb") as f:
        f.write(p.SerializeToString())


def export(name, make, shape, opset):
    torch.manual_seed(0)
    m = make().eval()
    d = os.path.join(OUT, f"{name}_op{opset}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    x = torch.randn([2] + shape)
    with torch.no_grad():
        outs = m(x)
    outs = outs if isinstance(outs, tuple) else (outs,)
    out_names = [f"out{i}" for i in range(len(outs))]
    # Hidden states of recurrent nets have the batch on dim 1; outputs elsewhere on dim 0.
    axes = {"x": {0: "batch"}}
    for i, o in enumerate(outs):
        axes[out_names[i]] = {1 if name in ("lstm", "bigru") and i > 0 else 0: "batch"}
    torch.onnx.export(m, (x,), os.path.join(d, "model.onnx"), opset_version=opset,
                      input_names=["x"], output_names=out_names, dynamic_axes=axes,
                      do_constant_folding=True)
    for k, batch in enumerate([1, 2]):
        s = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(s)
        xb = torch.randn([batch] + shape)
        with torch.no_grad():
            ob = m(xb)
        ob = ob if isinstance(ob, tuple) else (ob,)
        save(xb, os.path.join(s, "input_0.pb"), "x")
        for i, o in enumerate(ob):
            save(o, os.path.join(s, f"output_{i}.pb"), out_names[i])


def main():
    for opset in (13, 17):
        for name, (make, shape) in MODELS.items():
            export(name, make, shape, opset)
            print("wrote", name, opset)


if __name__ == "__main__":
    main()
