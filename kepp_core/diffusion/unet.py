"""A small 1-D temporal U-Net over the ``T`` axis with a sinusoidal diffusion-step embedding.

Input ``[B, C, T]`` (all channels of the sample), output ``[B, A, T]`` (the action block of
the predicted ``x_0``). Odd horizons are fine: the up path resizes to its skip connection.

>>> net = TemporalUNet(in_channels=12, out_channels=5, dim=16)
>>> net(torch.zeros(2, 12, 5), torch.tensor([0, 7])).shape
torch.Size([2, 5, 5])
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["TemporalUNet", "sinusoidal_embedding"]


def sinusoidal_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """``[B, dim]`` sin/cos features of integer diffusion steps ``t``.

    >>> sinusoidal_embedding(torch.tensor([0]), 4).tolist()
    [[0.0, 0.0, 1.0, 1.0]]
    """
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / max(half - 1, 1))
    args = t.float()[:, None] * freqs[None]
    return torch.cat([args.sin(), args.cos()], dim=-1)


def _groups(ch: int) -> int:
    for g in (8, 4, 2):
        if ch % g == 0:
            return g
    return 1


class ResidualBlock(nn.Module):
    """Two convolutions with group norm and Mish, the time embedding added in between, and a skip."""
    def __init__(self, cin: int, cout: int, tdim: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(cin, cout, 3, padding=1)
        self.norm1 = nn.GroupNorm(_groups(cout), cout)
        self.time = nn.Linear(tdim, cout)
        self.conv2 = nn.Conv1d(cout, cout, 3, padding=1)
        self.norm2 = nn.GroupNorm(_groups(cout), cout)
        self.skip = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        h = F.mish(self.norm1(self.conv1(x)))
        h = h + self.time(temb)[:, :, None]
        h = F.mish(self.norm2(self.conv2(h)))
        return h + self.skip(x)


class TemporalUNet(nn.Module):
    """Down path (residual block + stride-2 conv per level), middle block, up path with skips."""

    def __init__(self, in_channels: int, out_channels: int, dim: int = 128,
                 mults: tuple[int, ...] = (1, 2, 4)) -> None:
        super().__init__()
        self.time_dim = dim
        self.time_mlp = nn.Sequential(nn.Linear(dim, dim * 4), nn.Mish(), nn.Linear(dim * 4, dim))
        widths = [dim * m for m in mults]
        self.stem = nn.Conv1d(in_channels, widths[0], 1)
        self.down = nn.ModuleList()
        ch = widths[0]
        for i, w in enumerate(widths):
            last = i == len(widths) - 1
            self.down.append(nn.ModuleList([
                ResidualBlock(ch, w, dim),
                nn.Identity() if last else nn.Conv1d(w, w, 3, stride=2, padding=1)]))
            ch = w
        self.mid = ResidualBlock(ch, ch, dim)
        self.up = nn.ModuleList()
        for w in reversed(widths[:-1]):
            self.up.append(ResidualBlock(ch + w, w, dim))
            ch = w
        self.head = nn.Sequential(nn.Conv1d(ch, ch, 3, padding=1), nn.Mish(), nn.Conv1d(ch, out_channels, 1))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        temb = self.time_mlp(sinusoidal_embedding(t, self.time_dim))
        h = self.stem(x)
        skips = []
        for block, down in self.down:
            h = block(h, temb)
            skips.append(h)
            h = down(h)
        skips.pop()  # the deepest level feeds the middle block directly
        h = self.mid(h, temb)
        for block in self.up:
            s = skips.pop()
            h = F.interpolate(h, size=s.shape[-1], mode="nearest")
            h = block(torch.cat([h, s], dim=1), temb)
        return self.head(h)
