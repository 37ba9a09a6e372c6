"""Writes testdata/transforms.json: torchvision 0.14 reference values for
Kiln's image augmentations (data/augment.go).

Run with Debian's interpreter: /usr/bin/python3 testdata/gen_transforms.py
(torchvision from the python3-torchvision package; scripts/apt-install.sh
python3-torchvision installs it).

Every case applies one deterministic torchvision.transforms.functional call
(the random transforms are these with drawn parameters) to tensors:
rotate, adjust_brightness/contrast/saturation/hue, resize (antialias off,
the tensor default of 0.14), center_crop, crop, pad (the padding step of
RandomCrop) and normalize, on CHW and NCHW images, float32 and float64.
MixUp and CutMix are not in torchvision 0.14's library (only in its
references/classification/transforms.py), so the Go tests check them from
their formulas instead.
"""
import json
import os
import sys

import torch
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tensor/testdata"))
from fixtures import t2j  # noqa: E402

torch.manual_seed(0)
cases = {}

rgb = torch.rand(3, 7, 9)
rgb64 = torch.rand(2, 3, 6, 5, dtype=torch.float64)
gray = torch.rand(1, 5, 6)

# rotate: bilinear and nearest, scalar and per-channel fill, CHW and NCHW
cases["rotate_bilinear"] = {"x": rgb, "out": F.rotate(rgb, 33.0, InterpolationMode.BILINEAR)}
cases["rotate_bilinear_fill"] = {"x": rgb64, "out": F.rotate(rgb64, -70.0, InterpolationMode.BILINEAR,
                                                             fill=[0.2, 0.5, 1.0])}
cases["rotate_nearest"] = {"x": rgb, "out": F.rotate(rgb, 33.0, InterpolationMode.NEAREST)}
cases["rotate_nearest_fill"] = {"x": gray, "out": F.rotate(gray, 125.0, InterpolationMode.NEAREST, fill=[0.7])}

# colour
cases["brightness"] = {"x": rgb, "out": F.adjust_brightness(rgb, 1.3)}
cases["contrast"] = {"x": rgb, "out": F.adjust_contrast(rgb, 0.6)}
cases["contrast_batch64"] = {"x": rgb64, "out": F.adjust_contrast(rgb64, 1.8)}
cases["contrast_gray"] = {"x": gray, "out": F.adjust_contrast(gray, 0.4)}
cases["saturation"] = {"x": rgb, "out": F.adjust_saturation(rgb, 1.7)}
cases["saturation_batch64"] = {"x": rgb64, "out": F.adjust_saturation(rgb64, 0.3)}
# hue: include gray pixels (max == min) and each max channel
hue_in = rgb.clone()
hue_in[:, 0, 0] = 0.5
hue_in[:, 0, 1] = torch.tensor([0.9, 0.9, 0.1])
hue_in[:, 0, 2] = torch.tensor([0.2, 0.9, 0.9])
cases["hue"] = {"x": hue_in, "out": F.adjust_hue(hue_in, 0.2)}
cases["hue_negative_batch64"] = {"x": rgb64, "out": F.adjust_hue(rgb64, -0.45)}

# geometry
big = torch.rand(3, 8, 10)
cases["resize_bilinear"] = {"x": big, "out": F.resize(big, [5, 7], InterpolationMode.BILINEAR, antialias=False)}
cases["resize_shorter"] = {"x": big, "out": F.resize(big, 6, InterpolationMode.BILINEAR, antialias=False)}
cases["resize_nearest_batch64"] = {"x": rgb64, "out": F.resize(rgb64, [9, 4], InterpolationMode.NEAREST)}
cases["center_crop"] = {"x": rgb, "out": F.center_crop(rgb, [4, 5])}
cases["center_crop_even"] = {"x": big, "out": F.center_crop(big, [3, 3])}
cases["center_crop_pad"] = {"x": rgb, "out": F.center_crop(rgb, [10, 12])}
cases["crop_outside"] = {"x": rgb, "out": F.crop(rgb, -2, 3, 5, 8)}
for mode in ("constant", "edge", "reflect"):
    cases["pad_" + mode] = {"x": rgb, "out": F.pad(rgb, [2, 1, 3, 0], fill=0.25 if mode == "constant" else 0,
                                                   padding_mode=mode)}
cases["normalize"] = {"x": rgb64, "out": F.normalize(rgb64, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])}
cases["hflip"] = {"x": rgb, "out": F.hflip(rgb)}
cases["vflip"] = {"x": rgb64, "out": F.vflip(rgb64)}

# gradients: d(sum(out * w))/dx for fixed weights w, where torchvision's
# functional ops are differentiable
grad_cases = {
    "rotate_bilinear": lambda x: F.rotate(x, 33.0, InterpolationMode.BILINEAR),
    "rotate_bilinear_fill": lambda x: F.rotate(x, -70.0, InterpolationMode.BILINEAR, fill=[0.2, 0.5, 1.0]),
    "brightness": lambda x: F.adjust_brightness(x, 1.3),
    "contrast_batch64": lambda x: F.adjust_contrast(x, 1.8),
    "saturation": lambda x: F.adjust_saturation(x, 1.7),
    "hue": lambda x: F.adjust_hue(x, 0.2),
    "resize_bilinear": lambda x: F.resize(x, [5, 7], InterpolationMode.BILINEAR, antialias=False),
    "center_crop_pad": lambda x: F.center_crop(x, [10, 12]),
    "normalize": lambda x: F.normalize(x, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
}
for name, fn in grad_cases.items():
    x = cases[name]["x"].clone().requires_grad_(True)
    y = fn(x)
    w = torch.linspace(-1, 1, y.numel(), dtype=y.dtype).reshape(y.shape)
    (y * w).sum().backward()
    cases[name]["w"] = w
    cases[name]["grad_x"] = x.grad

out = {c: {k: t2j(v) for k, v in ts.items()} for c, ts in cases.items()}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "transforms.json"), "w") as f:
    json.dump(out, f, separators=(",", ":"), sort_keys=True)
    f.write("\n")
print("wrote", len(out), "cases")
