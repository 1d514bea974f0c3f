#!/usr/bin/python3
"""Writes the vision zoo's fixtures (tests/data/models/) with Debian's torch and torchvision.

- keys.json: every full-size torchvision model's state_dict keys, shapes and dtypes, in order
  (resnet18/34/50/101, mobilenet_v2, efficientnet_b0, vit_b_16), so ember's key names are checked
  against torchvision's own list without committing their weights.
- NAME.pt (+ NAME.safetensors for some): small variants built from torchvision's own classes
  (fewer channels, fewer classes, a tiny ViT through VisionTransformer), seeded random weights and
  batch-norm statistics, in eval mode; NAME_io.pt holds {"input", "output"} for a 2x3x64x64 input
  (32x32 for the ViT). NAME.json gives the ember config of each.
- classify/: a tiny image (image.ppm, 300x200), a checkpoint folder (config.json +
  model.safetensors, and the same weights as model.pt) and the top-5 that torchvision's preprocessing plus the model give.
Run: /usr/bin/python3 tests/gen/gen_vision_models.py
"""
import json
import os
import sys

import torch
from torch import nn
import torchvision
from torchvision.models import resnet as tvr
from torchvision.models import efficientnet as tve
from torchvision.models import vision_transformer as tvv
from torchvision import transforms

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_tool import save as write_safetensors  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "models")
NAMES = {torch.float32: "float32", torch.int64: "int64"}


class SmallResNet(tvr.ResNet):
    """torchvision's ResNet with a narrower stem (`width` channels, doubled each stage): the same
    blocks, _make_layer and forward, so the same module names."""

    def __init__(self, block, layers, width, num_classes):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes, self.dilation, self.groups, self.base_width = width, 1, 1, 64
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(block, width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(block, width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * block.expansion, num_classes)


def randomize(model, g):
    """Seeded random weights and batch-norm statistics (so running_mean/var matter)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            fan = p[0].numel() if p.dim() > 1 else p.numel()
            p.copy_(torch.randn(p.shape, generator=g) / max(fan, 1) ** 0.5)
            if name.endswith(".weight") and p.dim() == 1:  # norm scales near one
                p.add_(1.0)
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
                m.num_batches_tracked.fill_(3)
    model.eval()
    return model


def keys_of(model):
    return [[k, list(v.shape), NAMES[v.dtype]] for k, v in model.state_dict().items()]


def write_model(name, model, config, shape, g, safetensors=False, legacy=False):
    torch.save(model.state_dict(), os.path.join(OUT, name + ".pt"))
    if legacy:
        torch.save(model.state_dict(), os.path.join(OUT, name + "_legacy.pt"),
                   _use_new_zipfile_serialization=False)
    if safetensors:
        write_safetensors(os.path.join(OUT, name + ".safetensors"), list(model.state_dict().items()))
    x = torch.randn(shape, generator=g)
    with torch.no_grad():
        y = model(x)
    torch.save({"input": x, "output": y}, os.path.join(OUT, name + "_io.pt"))
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(config, f, indent=1)


def full_keys():
    models = {
        "resnet18": torchvision.models.resnet18(), "resnet34": torchvision.models.resnet34(),
        "resnet50": torchvision.models.resnet50(), "resnet101": torchvision.models.resnet101(),
        "mobilenet_v2": torchvision.models.mobilenet_v2(),
        "efficientnet_b0": torchvision.models.efficientnet_b0(),
        "vit_b_16": torchvision.models.vit_b_16(),
    }
    with open(os.path.join(OUT, "keys.json"), "w") as f:
        json.dump({k: keys_of(m) for k, m in models.items()}, f, separators=(",", ":"))


def small_models(g):
    m = randomize(SmallResNet(tvr.BasicBlock, [2, 2, 2, 2], 8, 10), g)
    write_model("resnet18_small", m, {"architecture": "resnet18", "width": 8, "num_classes": 10},
                [2, 3, 64, 64], g, safetensors=True, legacy=True)
    m = randomize(SmallResNet(tvr.Bottleneck, [3, 4, 6, 3], 8, 10), g)
    write_model("resnet50_small", m, {"architecture": "resnet50", "width": 8, "num_classes": 10},
                [2, 3, 64, 64], g)
    m = randomize(torchvision.models.MobileNetV2(num_classes=10, width_mult=0.25), g)
    write_model("mobilenet_v2_small", m,
                {"architecture": "mobilenet_v2", "width_mult": 0.25, "num_classes": 10},
                [2, 3, 64, 64], g, safetensors=True)
    setting, last = tve._efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=1.0)
    m = randomize(tve.EfficientNet(setting, 0.2, num_classes=10, last_channel=last), g)
    write_model("efficientnet_b0_small", m,
                {"architecture": "efficientnet_b0", "width_mult": 0.25, "num_classes": 10},
                [2, 3, 64, 64], g)
    m = randomize(tvv.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                        hidden_dim=32, mlp_dim=64, num_classes=10), g)
    write_model("vit_small", m,
                {"architecture": "vit_b_16", "image_size": 32, "patch_size": 8, "num_layers": 2,
                 "num_heads": 4, "hidden_dim": 32, "mlp_dim": 64, "num_classes": 10},
                [2, 3, 32, 32], g, safetensors=True)


def classify_fixture(g):
    """An image, a model folder and the top-5 of torchvision's preprocessing + the model."""
    d = os.path.join(OUT, "classify")
    os.makedirs(d, exist_ok=True)
    h, w = 200, 300
    yy, xx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    img = torch.stack([(xx * 255 // w), (yy * 255 // h), ((xx + yy) * 7) % 256]).to(torch.uint8)
    img = (img.int() + torch.randint(0, 30, img.shape, generator=g)).clamp(0, 255).to(torch.uint8)
    with open(os.path.join(d, "image.ppm"), "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (w, h))
        f.write(img.permute(1, 2, 0).contiguous().numpy().tobytes())
    model = randomize(SmallResNet(tvr.BasicBlock, [2, 2, 2, 2], 8, 20), g)
    config = {"architecture": "resnet18", "width": 8, "num_classes": 20}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    write_safetensors(os.path.join(d, "model.safetensors"), list(model.state_dict().items()))
    torch.save(model.state_dict(), os.path.join(d, "model.pt"))  # the same weights, torch.save'd
    with open(os.path.join(d, "labels.txt"), "w") as f:
        f.write("".join(f"class_{i}\n" for i in range(20)))
    # torchvision's preprocessing on a tensor image (bilinear, no antialias).
    pre = transforms.Compose([
        transforms.Resize(256, interpolation=transforms.InterpolationMode.BILINEAR,
                          antialias=False),
        transforms.CenterCrop(224),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    x = pre(img.float() / 255).unsqueeze(0)
    with torch.no_grad():
        p = torch.softmax(model(x), 1)[0]
    top = torch.topk(p, 5)
    with open(os.path.join(d, "expected.txt"), "w") as f:
        for v, i in zip(top.values.tolist(), top.indices.tolist()):
            f.write(f"{i} class_{i} {v:.4f}\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    full_keys()
    small_models(g)
    classify_fixture(g)


if __name__ == "__main__":
    main()
