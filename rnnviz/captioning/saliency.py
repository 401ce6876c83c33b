"""Which pixels a word came from: the gradient of its log-probability, or the drop when a patch is greyed out."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from rnnviz.captioning.model import START_ID, Captioner


def saliency(model: Captioner, image: Tensor, ids: list[int], t: int, method: str = "gradient") -> np.ndarray:
    """How much each pixel moves log p(w_t | w_{<t}, v) for word ``ids[t]``: (48, 48), non-negative.

    gradient: |∂ log p / ∂ pixel|, the largest of the three channels;
    occlusion: the drop in log p when an 8×8 patch around the pixel is painted grey (stride 4, averaged)."""
    if not 0 <= t < len(ids):
        raise ValueError(f"t must be in 0..{len(ids) - 1}, not {t}")
    model.eval()
    tokens = torch.tensor([[START_ID, *ids[: t]]])
    target = ids[t]
    if method == "gradient":
        x = image.clone().requires_grad_(True)
        logits, _ = model(x, tokens)
        log_p = F.log_softmax(logits[0, -1], -1)[target]
        (grad,) = torch.autograd.grad(log_p, x)
        return grad[0].abs().amax(0).numpy()
    if method == "occlusion":
        size, stride = 8, 4
        corners = [(y, x) for y in range(0, 48 - size + 1, stride) for x in range(0, 48 - size + 1, stride)]
        batch = image.repeat(len(corners), 1, 1, 1)
        for k, (y, x) in enumerate(corners):
            batch[k, :, y:y + size, x:x + size] = 0.5
        with torch.no_grad():
            base = F.log_softmax(model(image, tokens)[0][0, -1], -1)[target]
            occluded = F.log_softmax(model(batch, tokens.expand(len(corners), -1))[0][:, -1], -1)[:, target]
        drop = (base - occluded).clamp(min=0).numpy()
        heat, count = np.zeros((48, 48)), np.zeros((48, 48))
        for d, (y, x) in zip(drop, corners):
            heat[y:y + size, x:x + size] += d
            count[y:y + size, x:x + size] += 1
        return heat / count
    raise ValueError(f"method must be 'gradient' or 'occlusion', not {method!r}")


def object_share(heat: np.ndarray, mask: np.ndarray) -> float:
    """The share of the saliency mass that lies on object pixels (mask True)."""
    total = float(heat.sum())
    return float(heat[mask].sum()) / total if total > 0 else 0.0
