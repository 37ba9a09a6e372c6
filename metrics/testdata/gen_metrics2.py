"""Writes testdata/metrics2.json: reference values for Kiln's image,
segmentation and multilabel top-k metrics (metrics/image.go, segment.go,
multilabel.go).

Run with Debian's interpreter: /usr/bin/python3 testdata/gen_metrics2.py

torchmetrics and scikit-image are not installed, so every reference is
computed here with PyTorch 1.13 and NumPy from the metrics' definitions:

- PSNR = 10·log10(data_range² / MSE), the MSE pooled over every element
  (torchmetrics' PeakSignalNoiseRatio with dim=None);
- SSIM as torchmetrics' StructuralSimilarityIndexMeasure (and
  skimage.metrics.structural_similarity with gaussian_weights=True,
  sigma=1.5, use_sample_covariance=False): an 11×11 Gaussian window of
  sigma 1.5, K1 = 0.01, K2 = 0.03, local statistics by a depthwise
  convolution over the valid positions only, the map averaged per image
  (over channels and positions) and then over images;
- Dice 2TP/(2TP+FP+FN) and IoU TP/(TP+FP+FN) per class from the pixels
  whose target is not ignore_index; macro averages are the mean over
  classes present in the target or the prediction (NaN classes skipped, as
  mmsegmentation's mIoU), micro ones pool the counts;
- multilabel top-k: the k highest scores of each row (a lower index first
  among ties) are the predicted labels; precision@k = hits / (rows·k),
  recall@k = hits / relevant labels, pooled over rows (torchmetrics'
  MultilabelPrecision/Recall with top_k and average="micro").
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../tensor/testdata"))
from fixtures import t2j  # noqa: E402

torch.manual_seed(0)
rng = np.random.default_rng(0)
cases = {}


def psnr(p, t, data_range):
    mse = ((p.double() - t.double()) ** 2).mean()
    return 10 * torch.log10(data_range ** 2 / mse)


def gaussian(size=11, sigma=1.5):
    d = torch.arange((1 - size) / 2, (1 + size) / 2, 1, dtype=torch.float64)
    g = torch.exp(-((d / sigma) ** 2) / 2)
    return g / g.sum()


def ssim(p, t, data_range, k1=0.01, k2=0.03):
    p, t = p.double(), t.double()
    c = p.shape[1]
    g = gaussian()
    kernel = (g[:, None] * g[None, :]).expand(c, 1, 11, 11)
    c1, c2 = (k1 * data_range) ** 2, (k2 * data_range) ** 2
    conv = lambda x: F.conv2d(x, kernel, groups=c)  # noqa: E731
    mp, mt = conv(p), conv(t)
    spp = conv(p * p) - mp ** 2
    stt = conv(t * t) - mt ** 2
    spt = conv(p * t) - mp * mt
    m = ((2 * mp * mt + c1) * (2 * spt + c2)) / ((mp ** 2 + mt ** 2 + c1) * (spp + stt + c2))
    return m.reshape(m.shape[0], -1).mean(-1).mean()


# PSNR: float32 and float64 images, and data range 255.
p = torch.rand(2, 3, 8, 8)
t = (p + 0.05 * torch.randn(2, 3, 8, 8)).clamp(0, 1)
cases["psnr_f32"] = {"preds": p, "target": t, "out": psnr(p, t, 1.0)}
p64 = torch.rand(4, 5, dtype=torch.float64) * 255
t64 = p64 + 3 * torch.randn(4, 5, dtype=torch.float64)
cases["psnr_f64_range255"] = {"preds": p64, "target": t64, "out": psnr(p64, t64, 255.0)}

# SSIM: noisy copies, a brightness shift, and data range 255.
p = torch.rand(2, 3, 16, 13)
t = (p + 0.1 * torch.randn(2, 3, 16, 13)).clamp(0, 1)
cases["ssim_noise"] = {"preds": p, "target": t, "out": ssim(p, t, 1.0)}
p = torch.rand(1, 1, 11, 11, dtype=torch.float64)
cases["ssim_shift_11x11"] = {"preds": p, "target": (p * 0.8 + 0.1), "out": ssim(p, p * 0.8 + 0.1, 1.0)}
p = torch.rand(3, 2, 20, 24) * 255
t = (p + 20 * torch.randn(3, 2, 20, 24)).clamp(0, 255)
cases["ssim_range255"] = {"preds": p, "target": t, "out": ssim(p, t, 255.0)}


def counts(pred, target, n, ignore):
    keep = target != ignore
    pred, target = pred[keep], target[keep]
    tp = np.array([np.sum((pred == c) & (target == c)) for c in range(n)], dtype=np.float64)
    fp = np.array([np.sum((pred == c) & (target != c)) for c in range(n)], dtype=np.float64)
    fn = np.array([np.sum((pred != c) & (target == c)) for c in range(n)], dtype=np.float64)
    return tp, fp, fn


def seg_refs(pred, target, n, ignore):
    tp, fp, fn = counts(pred, target, n, ignore)
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = tp / (tp + fp + fn)
        dice = 2 * tp / (2 * tp + fp + fn)
    return {
        "iou": iou, "miou": np.nanmean(iou), "iou_micro": tp.sum() / (tp + fp + fn).sum(),
        "dice": dice, "dice_macro": np.nanmean(dice), "dice_micro": 2 * tp.sum() / (2 * tp + fp + fn).sum(),
    }


# Segmentation from logits [N, C, H, W] with class 4 never present, and an
# ignored label 255 in the targets.
logits = torch.randn(2, 5, 6, 7)
target = torch.randint(0, 4, (2, 6, 7))
target[0, 0, :3] = 255
pred = logits.argmax(1)
refs = seg_refs(pred.numpy(), target.numpy(), 5, 255)
cases["seg_logits"] = {"outputs": logits, "target": target, **refs}
# Class-index predictions [N, L] (int64) over 3 classes, no ignore index.
pi = torch.randint(0, 3, (4, 9))
ti = torch.randint(0, 3, (4, 9))
cases["seg_indices"] = {"outputs": pi, "target": ti, **seg_refs(pi.numpy(), ti.numpy(), 3, -1)}
# Binary probabilities [N, H, W], threshold 0.5.
pb = torch.rand(3, 4, 4, dtype=torch.float64)
tb = torch.randint(0, 2, (3, 4, 4))
cases["seg_binary"] = {"outputs": pb, "target": tb,
                       **seg_refs((pb > 0.5).long().numpy(), tb.numpy(), 2, -1)}


def topk_refs(scores, target, k):
    s = scores.numpy()
    hits = 0
    for i in range(s.shape[0]):
        order = sorted(range(s.shape[1]), key=lambda j: (-s[i, j], j))[:k]
        hits += sum(int(target[i, j]) for j in order)
    return hits / (s.shape[0] * min(k, s.shape[1])), hits / float(target.sum())


for k in (1, 3):
    sc = torch.randn(6, 5)
    tg = (torch.rand(6, 5) < 0.4).long()
    tg[0, 0] = 1
    pk, rk = topk_refs(sc, tg, k)
    cases["topk_%d" % k] = {"outputs": sc, "target": tg, "precision": np.float64(pk), "recall": np.float64(rk)}
sc = torch.tensor([[0.5, 0.5, 0.2, 0.5], [0.1, 0.9, 0.9, 0.0]], dtype=torch.float64)
tg = torch.tensor([[0, 1, 0, 1], [0, 0, 1, 1]], dtype=torch.float64)
pk, rk = topk_refs(sc, tg, 2)
cases["topk_ties"] = {"outputs": sc, "target": tg, "precision": np.float64(pk), "recall": np.float64(rk)}

out = {c: {k: t2j(v) for k, v in ts.items()} for c, ts in cases.items()}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "metrics2.json"), "w") as f:
    json.dump(out, f, separators=(",", ":"), sort_keys=True)
    f.write("\n")
