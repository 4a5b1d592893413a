"""S3D-G with its text tower: the text-video network of Miech et al., "End-to-End Learning of
Visual Representations from Uncurated Instructional Videos" (CVPR 2020), trained on HowTo100M
with MIL-NCE and released as ``s3d_howto100m.pth`` (a PyTorch state dict) and ``s3d_dict.npy``
(its word list). The features the official KEPP, PDPP and P3IV models were trained on are this
network's per-second ``video_embedding`` (docs, Bring your own: your own video with the official
models).

This is an own implementation for inference, written from the network's published facts
(``../shared/data/official-s3d/README.md`` lists them). It reads the release's state dict as it
is (its keys and shapes are checked first, an error naming the key) and folds it into a faster
network with the same outputs:

- every batch norm is folded into the convolution before it (eval mode: the running statistics),
  so a unit is one convolution with a bias and a ReLU;
- the three 1×1×1 convolutions an inception block applies to its input (branches 0, 1 and 2) are
  one convolution whose outputs are split;
- activations are kept channels-last, which oneDNN's 3-D convolutions run faster on the CPU.

The network, in the release's order: space-to-depth (``B, C, T, H, W -> B, 8C, T/2, H/2, W/2``),
``conv1`` (2×4×4, then the first position of each axis dropped, as TensorFlow's "SAME" padding
does), a max pool, ``conv_2b``, the separable ``conv_2c`` and its self-gating, a max pool, inception
blocks 3b-3c, a max pool, 4b-4f, a max pool, 5b-5c (each branch self-gated), the mean over
time and space (``mixed_5c``, 1,024-d) and a linear layer (``video_embedding``, 512-d). Max pools
between blocks pad the TensorFlow way (zeros, ``kernel - stride`` split floor/ceil; ceil mode).

The text tower lower-cases a sentence, splits it into words (``[\\w']+``), keeps the known ones
(a word's token is its index in the word list + 1; at most 16, zero-padded), embeds them
(300-d), applies a linear layer (2,048) and a ReLU, takes the maximum over the 16 positions
(padding included) and a last linear layer (``text_embedding``, 512-d). A dot product of a
``text_embedding`` with a ``video_embedding`` scores the text against the video.

>>> net = S3D.from_state_dict(rule_state_dict(vocabulary=3), ["open", "door"])
>>> {k: tuple(v.shape) for k, v in net.video(torch.zeros(1, 3, 4, 32, 32)).items()}
{'video_embedding': (1, 512), 'mixed_5c': (1, 1024)}
>>> net.text(["Open the door", "nothing known"]).shape, net.tokens(["Open the door"])[0, :3].tolist()
(torch.Size([2, 512]), [1, 2, 0])
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
import re
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from kepp_core.devices import chosen, resolve_device
from kepp_core.errors import KeppError
from kepp_core.safe_load import load_torch, read_npy
from kepp_core.video.s3d_spec import (CROP, FPS, MEMORY_BUDGET, OUTPUT_DIMS, WINDOW, S3DSpec, batch_bytes, decode_size,
                                      existing_words, file_digest, words_path)

EMBED_DIM = OUTPUT_DIMS["video_embedding"]  # video_embedding and text_embedding
MIXED_DIM = OUTPUT_DIMS["mixed_5c"]
WORD_DIM, TEXT_HIDDEN, MAX_WORDS = 300, 2048, 16
TEXT_BATCH = 512  # sentences through the text tower at once: 64 MB of its hidden layer
BN_EPS = 1e-5
_WORD = re.compile(r"[\w']+")

# The inception blocks: input width, then the widths of branch 0 (1×1×1), branch 1 (1×1×1, then
# separable 3×3×3), branch 2 (the same) and branch 3 (max pool, then 1×1×1), as in S3D-G.
INCEPTION = (
    ("mixed_3b", 192, (64, 96, 128, 16, 32, 32)),
    ("mixed_3c", 256, (128, 128, 192, 32, 96, 64)),
    ("mixed_4b", 480, (192, 96, 208, 16, 48, 64)),
    ("mixed_4c", 512, (160, 112, 224, 24, 64, 64)),
    ("mixed_4d", 512, (128, 128, 256, 24, 64, 64)),
    ("mixed_4e", 512, (112, 144, 288, 32, 64, 64)),
    ("mixed_4f", 528, (256, 160, 320, 32, 128, 128)),
    ("mixed_5b", 832, (256, 160, 320, 32, 128, 128)),
    ("mixed_5c", 832, (384, 192, 384, 48, 128, 128)),
)
# The max pools (kernel, stride) that come before a block, TensorFlow "SAME" padded.
POOL_BEFORE = {"conv_2b": ((1, 3, 3), (1, 2, 2)), "mixed_3b": ((1, 3, 3), (1, 2, 2)),
               "mixed_4b": ((3, 3, 3), (2, 2, 2)), "mixed_5b": ((2, 2, 2), (2, 2, 2))}


# --- the release's state dict: keys and shapes --------------------------------------------------------------
def _unit_shapes(prefix: str, cin: int, cout: int, kernel: tuple[int, int, int], separable: bool) -> dict:
    """The keys of one conv unit (``conv1`` + ``bn1``, and ``conv2`` + ``bn2`` when separable with a
    temporal kernel > 1: a spatial 1×k×k conv, then a temporal k×1×1 one)."""
    def bn(name: str, width: int) -> dict:
        return {f"{prefix}.{name}.{leaf}": (width,) for leaf in ("weight", "bias", "running_mean", "running_var")} | \
            {f"{prefix}.{name}.num_batches_tracked": ()}

    if separable and kernel[0] > 1:
        return ({f"{prefix}.conv1.weight": (cout, cin, 1, kernel[1], kernel[2])} | bn("bn1", cout)
                | {f"{prefix}.conv2.weight": (cout, cout, kernel[0], 1, 1)} | bn("bn2", cout))
    return {f"{prefix}.conv1.weight": (cout, cin, *kernel)} | bn("bn1", cout)


def _gate_shapes(prefix: str, width: int) -> dict:
    return {f"{prefix}.fc.weight": (width, width), f"{prefix}.fc.bias": (width,)}


def expected_shapes(vocabulary: int) -> dict[str, tuple[int, ...]]:
    """Every key of the release's state dict, in its order, with its shape (``vocabulary``: the
    rows of the word embedding, the word list's length + 1 for padding).

    >>> shapes = expected_shapes(66250)
    >>> len(shapes), shapes["conv1.conv1.weight"], shapes["text_module.word_embd.weight"]
    (537, (64, 24, 2, 4, 4), (66250, 300))
    """
    out = _unit_shapes("conv1", 24, 64, (2, 4, 4), False) | _unit_shapes("conv_2b", 64, 64, (1, 1, 1), False)
    out |= _unit_shapes("conv_2c", 64, 192, (3, 3, 3), True) | _gate_shapes("gating", 192)
    for name, cin, (b0, b1a, b1b, b2a, b2b, b3) in INCEPTION:
        out |= (_unit_shapes(f"{name}.conv_b0", cin, b0, (1, 1, 1), False)
                | _unit_shapes(f"{name}.conv_b1_a", cin, b1a, (1, 1, 1), False)
                | _unit_shapes(f"{name}.conv_b1_b", b1a, b1b, (3, 3, 3), True)
                | _unit_shapes(f"{name}.conv_b2_a", cin, b2a, (1, 1, 1), False)
                | _unit_shapes(f"{name}.conv_b2_b", b2a, b2b, (3, 3, 3), True)
                | _unit_shapes(f"{name}.conv_b3_b", cin, b3, (1, 1, 1), False)
                | _gate_shapes(f"{name}.gating_b0", b0) | _gate_shapes(f"{name}.gating_b1", b1b)
                | _gate_shapes(f"{name}.gating_b2", b2b) | _gate_shapes(f"{name}.gating_b3", b3))
    return out | {"fc.weight": (EMBED_DIM, MIXED_DIM), "fc.bias": (EMBED_DIM,),
                  "text_module.word_embd.weight": (vocabulary, WORD_DIM),
                  "text_module.fc1.weight": (TEXT_HIDDEN, WORD_DIM), "text_module.fc1.bias": (TEXT_HIDDEN,),
                  "text_module.fc2.weight": (EMBED_DIM, TEXT_HIDDEN), "text_module.fc2.bias": (EMBED_DIM,)}


def rule_state_dict(vocabulary: int = 21) -> dict[str, torch.Tensor]:
    """A state dict of the release's keys and shapes with the reference fixture's untrained
    weights (``../shared/data/official-s3d/README.md``, "The weight rule"): every tensor drawn
    from its key, so tests and benchmarks rebuild the fixture's network without a weights file.
    It is a model of nothing.

    >>> sd = rule_state_dict()
    >>> float(sd["mixed_3b.gating_b0.fc.bias"].mean()) > 2.9, sd["conv1.bn1.num_batches_tracked"].dtype
    (True, torch.int64)
    """
    out = {}
    for key, shape in expected_shapes(vocabulary).items():
        z = np.random.default_rng(zlib.crc32(key.encode())).standard_normal(shape)
        leaf = key.rsplit(".", 1)[-1]
        if leaf == "num_batches_tracked":
            out[key] = torch.zeros(shape, dtype=torch.int64)
            continue
        if leaf == "running_mean":
            v = 0.1 * z
        elif leaf == "running_var":
            v = 1 + 0.1 * np.abs(z)
        elif leaf == "weight" and ".bn" in key:
            v = 1.25 + 0.1 * z
        elif leaf == "bias":
            v = 3.0 + 0.01 * z if "gating" in key else 0.01 * z
        else:
            v = z * np.sqrt(2 / (int(np.prod(shape[1:])) if len(shape) > 1 else 1))
        out[key] = torch.from_numpy(np.asarray(v, dtype=np.float32))
    return out


def check_state_dict(state: object, where: str) -> int:
    """Check a state dict against the release's keys and shapes; return its vocabulary size
    (read from ``text_module.word_embd.weight``). A KeppError names the first key that is
    missing, extra, not a tensor or of the wrong shape."""
    if not isinstance(state, dict) or not state:
        raise KeppError(f"{where}: not an S3D state dict (expected a dict of tensors, got "
                        f"{type(state).__name__ if not isinstance(state, dict) else 'an empty dict'})")
    emb = state.get("text_module.word_embd.weight")
    if not isinstance(emb, torch.Tensor) or emb.ndim != 2 or emb.shape[0] < 2:
        raise KeppError(f"{where}: key 'text_module.word_embd.weight' missing or not a [words + 1, {WORD_DIM}] "
                        "tensor: not the S3D HowTo100M state dict (s3d_howto100m.pth)")
    expected = expected_shapes(int(emb.shape[0]))
    missing = [k for k in expected if k not in state]
    extra = [k for k in state if k not in expected]
    if missing or extra:
        what = (f"{len(missing)} keys missing (first: {missing[0]!r})" if missing else "") + \
            ("; " if missing and extra else "") + (f"{len(extra)} unexpected keys (first: {extra[0]!r})" if extra else "")
        raise KeppError(f"{where}: not the S3D HowTo100M state dict: {what}")
    for key, shape in expected.items():
        value = state[key]
        if not isinstance(value, torch.Tensor):
            raise KeppError(f"{where}: key {key!r} is a {type(value).__name__}, expected a tensor")
        if tuple(value.shape) != shape:
            raise KeppError(f"{where}: key {key!r} has shape {list(value.shape)}, expected {list(shape)}")
        if key.endswith("num_batches_tracked"):
            continue
        if not value.is_floating_point():
            raise KeppError(f"{where}: key {key!r} holds {value.dtype}, expected floating-point weights")
        if not torch.isfinite(value).all():
            raise KeppError(f"{where}: key {key!r} holds non-finite values")
        if key.endswith("running_var") and bool((value < 0).any()):  # var + eps could be 0: a division by zero
            raise KeppError(f"{where}: key {key!r} holds a negative variance ({float(value.min()):g}); a batch "
                            f"norm's running variance is at least 0")
    return int(emb.shape[0])


def read_weights(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """The state dict in ``path``, read by the package's one loader
    (:func:`kepp_core.safe_load.load_torch`: nesting, object counts and sizes bounded first, then
    ``torch.load(weights_only=True)``) and checked (:func:`check_state_dict`)."""
    path = Path(path)
    if not path.exists():
        raise KeppError(f"{path}: S3D weights file not found (the release's s3d_howto100m.pth)")
    state = load_torch(path, "weights file")
    check_state_dict(state, str(path))
    return state


def read_words(path: str | os.PathLike) -> list[str]:
    """The word list: a ``.npy`` array of strings (read without pickles, its header's size checked
    against the file first, :func:`kepp_core.safe_load.read_npy`), each word valid UTF-8 text."""
    path = existing_words(path)
    words = read_npy(path, "word list (a .npy array of strings)", kinds="US")
    if words.ndim != 1:
        raise KeppError(f"{path}: expected a 1-D numpy array of words, got {words.dtype} {list(words.shape)}")
    if words.dtype.kind == "U":
        return [str(w) for w in words.tolist()]
    try:
        return [w.decode("utf-8") for w in words.tolist()]
    except UnicodeDecodeError:
        bad = next(k for k, w in enumerate(words.tolist()) if not _is_utf8(w))
        raise KeppError(f"{path}: word {bad} is not UTF-8 text (a word list holds words)") from None


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# --- the network --------------------------------------------------------------------------------------------
# Activations are kept as [B, T, H, W, C] (channels last): a 1×1×1 convolution is then one matrix
# product, a spatial 1×k×k one a 2-D convolution over the B·T frames and a temporal k×1×1 one a
# 2-D convolution over (T, H·W), each a view of the same memory; oneDNN runs these far faster than
# PyTorch's general 3-D convolution on the CPU.
def _folded(state: dict, prefix: str, conv: str, bn: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A convolution's weight and bias with the batch norm after it folded in (eval mode)."""
    w = state[f"{prefix}.{conv}.weight"].double()
    g, b = state[f"{prefix}.{bn}.weight"].double(), state[f"{prefix}.{bn}.bias"].double()
    mean, var = state[f"{prefix}.{bn}.running_mean"].double(), state[f"{prefix}.{bn}.running_var"].double()
    scale = g / torch.sqrt(var + BN_EPS)
    return (w * scale[:, None, None, None, None]).float(), (b - mean * scale).float()


class Pointwise(nn.Module):
    """A 1×1×1 convolution (batch norm folded in) and a ReLU on ``[B, T, H, W, C]``: a matrix product."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("weight", weight.flatten(1).contiguous())
        self.register_buffer("bias", bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(F.linear(x, self.weight, self.bias), inplace=True)


class Separable(nn.Module):
    """A 3×3×3 unit as a spatial 1×3×3 unit (a 2-D convolution of every frame), then a temporal
    3×1×1 one (a 2-D convolution over time × positions), each with its batch norm folded in and a ReLU."""

    def __init__(self, state: dict, prefix: str) -> None:
        super().__init__()
        w, b = _folded(state, prefix, "conv1", "bn1")
        self.register_buffer("spatial_weight", w[:, :, 0].contiguous(memory_format=torch.channels_last))
        self.register_buffer("spatial_bias", b)
        w, b = _folded(state, prefix, "conv2", "bn2")
        self.register_buffer("temporal_weight", w[..., 0].contiguous(memory_format=torch.channels_last))
        self.register_buffer("temporal_bias", b)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, t, h, w, c = x.shape
        frames = x.reshape(n * t, h, w, c).permute(0, 3, 1, 2)
        y = F.conv2d(frames, self.spatial_weight, self.spatial_bias, padding=(1, 1)).relu_()
        c = y.shape[1]
        y = y.permute(0, 2, 3, 1).reshape(n, t, h * w, c).permute(0, 3, 1, 2)
        y = F.conv2d(y, self.temporal_weight, self.temporal_bias, padding=(1, 0)).relu_()
        return y.permute(0, 2, 3, 1).reshape(n, t, h, w, c)


class Gate(nn.Module):
    """S3D-G's self-gating: ``x · sigmoid(fc(mean over T, H, W of x))`` per channel."""

    def __init__(self, state: dict, prefix: str) -> None:
        super().__init__()
        self.register_buffer("weight", state[f"{prefix}.fc.weight"].float())
        self.register_buffer("bias", state[f"{prefix}.fc.bias"].float())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = torch.sigmoid(F.linear(x.mean(dim=(1, 2, 3)), self.weight, self.bias))
        return x.mul_(w[:, None, None, None, :])


def max_pool(x: torch.Tensor, kernel, stride, padding=0, ceil_mode: bool = False) -> torch.Tensor:
    """3-D max pool of ``[B, T, H, W, C]`` (oneDNN's channels-last pool on a view)."""
    y = F.max_pool3d(x.permute(0, 4, 1, 2, 3), kernel, stride, padding, ceil_mode=ceil_mode)
    return y.permute(0, 2, 3, 4, 1).contiguous()


def same_pool(x: torch.Tensor, kernel: tuple[int, ...], stride: tuple[int, ...]) -> torch.Tensor:
    """Max pool of ``[B, T, H, W, C]`` with TensorFlow's "SAME" padding: zeros, ``max(kernel -
    stride, 0)`` split floor/ceil per axis, then a ceil-mode pool. Where every padded axis is even
    and the padding is one trailing position (the network's usual case), the pool's own ceil mode
    gives the same windows over the same values (the inputs follow a ReLU: a zero never wins), so
    nothing is copied."""
    pad = [0, 0]  # F.pad lists the last axis (channels) first
    for k, s in zip(reversed(kernel), reversed(stride)):
        total = max(k - s, 0)
        pad += [total // 2, total - total // 2]
    trailing_one = all(a == 0 and b in (0, 1) for a, b in zip(pad[2::2], pad[3::2]))
    even = all(n % 2 == 0 for n, b in zip(reversed(x.shape[1:4]), pad[3::2]) if b)
    return max_pool(x if trailing_one and even else F.pad(x, pad), kernel, stride, ceil_mode=True)


class Inception(nn.Module):
    """An inception block: four self-gated branches concatenated (b0, b1, b2, b3); the 1×1×1
    convolutions of branches 0, 1 and 2 on the block's input run as one."""

    def __init__(self, state: dict, name: str) -> None:
        super().__init__()
        heads = [_folded(state, f"{name}.conv_b{b}", "conv1", "bn1") for b in ("0", "1_a", "2_a")]
        self.widths = [int(w.shape[0]) for w, _ in heads]
        self.heads = Pointwise(torch.cat([w for w, _ in heads]), torch.cat([b for _, b in heads]))
        self.b1, self.b2 = Separable(state, f"{name}.conv_b1_b"), Separable(state, f"{name}.conv_b2_b")
        self.b3 = Pointwise(*_folded(state, f"{name}.conv_b3_b", "conv1", "bn1"))
        self.gates = nn.ModuleList(Gate(state, f"{name}.gating_b{b}") for b in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b0, b1, b2 = self.heads(x).split(self.widths, dim=-1)
        b3 = self.b3(max_pool(x, 3, 1, 1))  # -inf padding: the same as zeros after a ReLU
        branches = (b0.contiguous(), self.b1(b1.contiguous()), self.b2(b2.contiguous()), b3)
        return torch.cat([g(b) for g, b in zip(self.gates, branches)], dim=-1)


def space_to_depth(x: torch.Tensor) -> torch.Tensor:
    """``[B, C, T, H, W] -> [B, T/2, H/2, W/2, 8C]``: each 2×2×2 cell's values become channels, in
    the release's order (the 8 offsets of the cell outermost, the colour innermost... as its
    ``view(B, C, T/2, 2, H/2, 2, W/2, 2).permute(0, 3, 5, 7, 1, 2, 4, 6)`` orders them)."""
    b, c, t, h, w = x.shape
    x = x.reshape(b, c, t // 2, 2, h // 2, 2, w // 2, 2).permute(0, 2, 4, 6, 3, 5, 7, 1)
    return x.reshape(b, t // 2, h // 2, w // 2, 8 * c)


class VideoTower(nn.Module):
    """Frames ``[B, 3, T, H, W]`` in [0, 1] → ``(mixed_5c [B, 1024], video_embedding [B, 512])``."""

    def __init__(self, state: dict) -> None:
        super().__init__()
        w, b = _folded(state, "conv1", "conv1", "bn1")
        self.register_buffer("conv1_weight", w.contiguous(memory_format=torch.channels_last_3d))
        self.register_buffer("conv1_bias", b)
        self.conv_2b = Pointwise(*_folded(state, "conv_2b", "conv1", "bn1"))
        self.conv_2c = Separable(state, "conv_2c")
        self.gating = Gate(state, "gating")
        self.blocks = nn.ModuleDict((name, Inception(state, name)) for name, _, _ in INCEPTION)
        self.register_buffer("fc_weight", state["fc.weight"].float())
        self.register_buffer("fc_bias", state["fc.bias"].float())

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # conv1's padding (1, 2, 2) and the drop of each axis's first position, as one asymmetric pad
        x = F.pad(space_to_depth(x), (0, 0, 1, 2, 1, 2, 0, 1)).permute(0, 4, 1, 2, 3)
        x = F.conv3d(x, self.conv1_weight, self.conv1_bias).relu_().permute(0, 2, 3, 4, 1).contiguous()
        x = self.conv_2b(same_pool(x, *POOL_BEFORE["conv_2b"]))
        x = self.gating(self.conv_2c(x))
        for name, block in self.blocks.items():
            if name in POOL_BEFORE:
                x = same_pool(x, *POOL_BEFORE[name])
            x = block(x)
        mixed = x.mean(dim=(1, 2, 3))
        return mixed, F.linear(mixed, self.fc_weight, self.fc_bias)


class TextTower(nn.Module):
    """Token ids ``[B, 16]`` → ``text_embedding [B, 512]``."""

    def __init__(self, state: dict) -> None:
        super().__init__()
        self.register_buffer("embedding", state["text_module.word_embd.weight"].float())
        for name in ("fc1", "fc2"):
            self.register_buffer(f"{name}_weight", state[f"text_module.{name}.weight"].float())
            self.register_buffer(f"{name}_bias", state[f"text_module.{name}.bias"].float())

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = F.relu(F.linear(F.embedding(tokens, self.embedding), self.fc1_weight, self.fc1_bias))
        return F.linear(h.max(dim=1).values, self.fc2_weight, self.fc2_bias)


# --- the public object --------------------------------------------------------------------------------------
MIN_FRAMES, MIN_SIDE = 2, 2  # the smallest input the network takes (even sizes: space-to-depth)


def check_video_input(x: object) -> torch.Tensor:
    """``x`` as the network takes it: a float tensor ``[B, 3, T, H, W]`` with even ``T, H, W``
    and values in [0, 1] (KeppError naming what is wrong otherwise)."""
    if not isinstance(x, torch.Tensor):
        raise KeppError(f"S3D video input must be a torch tensor [B, 3, T, H, W], got {type(x).__name__}")
    if x.ndim != 5 or x.shape[1] != 3 or x.shape[0] < 1:
        raise KeppError(f"S3D video input has shape {list(x.shape)}, expected [B, 3, T, H, W] (RGB, B >= 1)")
    if not x.is_floating_point():
        raise KeppError(f"S3D video input is {x.dtype}, expected floats in [0, 1] (divide uint8 frames by 255)")
    t, h, w = x.shape[2:]
    if t % 2 or h % 2 or w % 2 or t < MIN_FRAMES or min(h, w) < MIN_SIDE:
        raise KeppError(f"S3D video input has T x H x W = {t} x {h} x {w}: each must be even and at least 2 "
                        "(the network's space-to-depth halves them)")
    if x.numel() and not (float(x.min()) >= 0.0 and float(x.max()) <= 1.0):
        raise KeppError(f"S3D video input has values in [{float(x.min()):g}, {float(x.max()):g}], expected [0, 1]")
    return x


class S3D:
    """The S3D HowTo100M text-video network, ready for inference on one device.

    ``video(x)``: frames ``[B, 3, T, H, W]`` float in [0, 1] → ``{"video_embedding": [B, 512],
    "mixed_5c": [B, 1024]}``; ``text(sentences)`` → ``[B, 512]``; a dot product of the two scores text
    against video. Load the release with :meth:`load`.

    >>> net = S3D.load("s3d/s3d_howto100m.pth")  # doctest: +SKIP
    >>> (net.text(["crack eggs"]) @ net.video(frames)["video_embedding"].T).shape  # doctest: +SKIP
    torch.Size([1, 1])
    """

    def __init__(self, video: VideoTower, text: TextTower, words: list[str], device: str = "cpu") -> None:
        if str(device).startswith("cuda"):  # a GPU there is not: one line naming the fix (torch's is an assertion)
            device = resolve_device(str(device), "the S3D network: device=")
        self.video_tower, self.text_tower = video.eval(), text.eval()
        self.words = list(words)
        self.word_to_token = {w: i + 1 for i, w in enumerate(self.words)}  # a repeated word: its last index
        self.device = torch.device(device)
        self.video_tower.to(self.device)
        self.text_tower.to(self.device)

    @classmethod
    def from_state_dict(cls, state: dict, words: list[str], device: str = "cpu", where: str = "state dict") -> S3D:
        """The network of a checked state dict and its word list (one word per embedding row but
        the first, which is padding)."""
        vocabulary = check_state_dict(state, where)
        if len(words) != vocabulary - 1:
            raise KeppError(f"{where}: the word list has {len(words)} words, but the weights embed {vocabulary - 1} "
                            f"(text_module.word_embd.weight has {vocabulary} rows, one for padding): "
                            "not the word list of these weights")
        return cls(VideoTower(state), TextTower(state), words, device)

    @classmethod
    def load(cls, weights: str | os.PathLike, dictionary: str | os.PathLike | None = None,
             device: str | None = None) -> S3D:
        """The release's two files: the weights (``s3d_howto100m.pth``) and the word list
        (``dictionary``, default ``s3d_dict.npy`` beside the weights), on ``device`` (default: the
        command's, else the GPU where there is one: :func:`kepp_core.devices.chosen`)."""
        device = chosen(device, f"S3D {Path(weights).name}: device=")  # first: a device there is not is one line
        words_file = words_path(weights, dictionary)
        words = read_words(words_file)  # first: a missing word list fails before 30 MB are read
        state = read_weights(weights)
        try:
            return cls.from_state_dict(state, words, device, where=str(weights))
        except KeppError as e:
            raise KeppError(str(e).replace("the word list", f"the word list {words_file}", 1)) from None

    @property
    def vocabulary(self) -> int:
        """Rows of the word embedding (the words + padding)."""
        return len(self.words) + 1

    def video(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """``video_embedding [B, 512]`` and ``mixed_5c [B, 1024]`` of frames ``[B, 3, T, H, W]`` in [0, 1]."""
        x = check_video_input(x)
        with torch.inference_mode(), _exact_cuda():
            mixed, emb = self.video_tower(x.to(self.device, torch.float32))
        return {"video_embedding": emb, "mixed_5c": mixed}

    def tokens(self, sentences: list[str]) -> torch.Tensor:
        """Token ids ``[B, 16]`` of sentences (lower-cased words in the list, in order, at most 16, zero-padded)."""
        if isinstance(sentences, str) or not all(isinstance(s, str) for s in sentences):
            raise KeppError("S3D text input must be a list of strings")
        out = torch.zeros(len(sentences), MAX_WORDS, dtype=torch.long)
        for i, s in enumerate(sentences):
            ids = [self.word_to_token[w] for w in _WORD.findall(s.lower()) if w in self.word_to_token][:MAX_WORDS]
            out[i, :len(ids)] = torch.tensor(ids, dtype=torch.long)
        return out

    def text(self, sentences: list[str]) -> torch.Tensor:
        """``text_embedding [B, 512]`` of sentences (a sentence with no known word embeds the padding),
        :data:`TEXT_BATCH` at a time (the tower's hidden layer is ``16 × 2048`` values per sentence)."""
        if len(sentences) == 0:
            raise KeppError("S3D text input is empty: give at least one sentence")
        tokens = self.tokens(sentences)
        with torch.inference_mode():
            return torch.cat([self.text_tower(tokens[i:i + TEXT_BATCH].to(self.device))
                              for i in range(0, len(tokens), TEXT_BATCH)])


class _exact_cuda:
    """No TF32 in CUDA convolutions and matrix products for the block (float32 as on the CPU)."""

    def __enter__(self) -> None:
        self.saved = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False

    def __exit__(self, *exc) -> None:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = self.saved


# --- the encoder ----------------------------------------------------------------------------------------------
DECODE_WORKERS_CPU = 2  # decoding beside the network: 7-10% faster and 0.1 GB less on 2 idle cores (docs, at scale)
MAX_DECODE_WORKERS_GPU = 8


def gpu_decode_workers() -> int:
    """Decoding threads that feed a GPU: one per core but the network's own, at most 8."""
    return max(1, min(MAX_DECODE_WORKERS_GPU, (os.cpu_count() or 2) - 1))


def square_frames(frames: np.ndarray, crop: int = CROP) -> np.ndarray:
    """The centre ``crop × crop`` square of frames ``[N, H, W, 3]`` uint8: the largest centred
    square, scaled to ``crop`` (bicubic, antialiased) unless its side is ``crop`` already (frames
    decoded at :func:`~kepp_core.video.s3d_spec.decode_size` are only cropped)."""
    n, h, w, _ = frames.shape
    side = min(h, w)
    top, left = (h - side) // 2, (w - side) // 2
    square = frames[:, top:top + side, left:left + side]
    if side == crop:
        return square
    t = torch.from_numpy(np.ascontiguousarray(square)).permute(0, 3, 1, 2).float()
    t = F.interpolate(t, size=(crop, crop), mode="bicubic", antialias=True, align_corners=False)
    return t.clamp_(0, 255).round_().to(torch.uint8).permute(0, 2, 3, 1).numpy()


def second_windows(frames: np.ndarray, fps: float, crop: int = CROP) -> np.ndarray:
    """Frames ``[N, H, W, 3]`` uint8 at ``fps`` → one window per second ``[S, WINDOW, crop, crop, 3]``
    (resampled to :data:`FPS` when ``fps`` differs, centre-cropped, the last window padded with
    black frames; :mod:`~kepp_core.video.s3d_spec`). Fewer than one window's frames is a KeppError.

    >>> second_windows(np.zeros((40, 8, 12, 3), np.uint8), 16.0).shape
    (3, 16, 224, 224, 3)
    """
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise KeppError(f"S3D encoder expects uint8 frames [N, H, W, 3], got {frames.dtype} {list(frames.shape)}")
    n = len(frames)
    count = int(math.ceil(n / fps * FPS - 1e-6))
    if count < WINDOW:
        raise KeppError(f"the video is {n / fps:.2f} s long ({n} frames at {fps:g} fps), shorter than one S3D "
                        f"window ({WINDOW} frames at {FPS} fps = {WINDOW / FPS:g} s)")
    if abs(fps - FPS) > 1e-3:
        frames = frames[np.minimum(np.floor(np.arange(count) / FPS * fps + 1e-6).astype(np.int64), n - 1)]
    seconds = -(-count // WINDOW)
    out = np.zeros((seconds * WINDOW, crop, crop, 3), np.uint8)
    out[:count] = square_frames(frames[:count], crop)
    return out.reshape(seconds, WINDOW, crop, crop, 3)


class S3DEncoder:
    """The ``s3d:PATH`` feature encoder: one S3D feature per second of video (the sampling of
    :mod:`~kepp_core.video.s3d_spec`), the windows run through the network in batches of
    ``batch`` on the spec's device (default: the GPU where there is one). On the CPU the batches
    run on as many threads as torch has intra-op threads, each batch on one: batches in parallel
    spend far less CPU time than threads that meet inside every operation (on busy cores above all).

    ``decode_size``, ``exact_fps``, ``min_frames`` and ``chunk_seconds`` tell the decoder
    (:func:`kepp_core.video.encode.encode_file`) to decode at the crop's scale, at exactly
    :data:`FPS` frames per second, to refuse a video shorter than one window and to decode a
    long video ``chunk_seconds`` seconds at a time (memory stays bounded); ``prepare`` cuts decoded
    frames into windows and ``decode_workers`` says how many threads decode while the network runs
    (:func:`kepp_core.video.encode.encode_files`: 1, the serial path, on the CPU; on a GPU
    :func:`gpu_decode_workers`)."""

    sample_fps: float | None = float(FPS)
    frame_size: tuple[int, int] | None = None
    exact_fps = True
    min_frames = WINDOW

    def __init__(self, spec: S3DSpec | str, network: S3D | None = None) -> None:
        self.spec = S3DSpec.parse(spec) if isinstance(spec, str) else spec
        self.name, self.dim, self.output = self.spec.name, self.spec.dim, self.spec.output
        self.net = network or S3D.load(self.spec.weights, self.spec.dictionary, self.spec.device)
        fits = max(1, MEMORY_BUDGET // batch_bytes(1, self.spec.size))  # a large crop takes fewer windows
        self.batch = self.spec.batch or min(32 if self.net.device.type == "cuda" else 2, fits)
        self.decode_workers = DECODE_WORKERS_CPU if self.net.device.type == "cpu" else gpu_decode_workers()
        self.chunk_seconds = self.batch * max(1, 16 // self.batch)  # ~16 s of frames in memory at once

    @property
    def manifest(self) -> dict:
        """What a feature folder's ``features.json`` records of this encoder besides its name: the
        spec (without device and batch, which do not change the features), the weights' file name
        and digest, the crop, the frames per second of video and per feature row."""
        spec = replace(self.spec, device=None, batch=None)
        return {"spec": spec.text(), "weights": f"{spec.weights.name}@{file_digest(spec.weights)}",
                "crop": spec.size, "fps": float(FPS), "frames": WINDOW}

    def decode_size(self, width: int, height: int) -> tuple[int, int]:
        """The size a ``width × height`` video is decoded at (the shorter side at the crop's)."""
        return decode_size(width, height, self.spec.size)

    def __call__(self, frames: np.ndarray, fps: float) -> np.ndarray:
        return self.embed(self.prepare(frames, fps))

    def prepare(self, frames: np.ndarray, fps: float) -> np.ndarray:
        """The network's input of decoded frames: one window per second (:func:`second_windows`); what a
        decoding thread of :func:`kepp_core.video.encode.encode_files` hands to the network's thread."""
        return second_windows(frames, fps, self.spec.size)

    def embed(self, windows: np.ndarray) -> np.ndarray:
        """The chosen output ``[S, D]`` of one-second windows ``[S, WINDOW, crop, crop, 3]`` uint8."""
        batches = [windows[i:i + self.batch] for i in range(0, len(windows), self.batch)]
        workers = torch.get_num_threads()
        if self.net.device.type != "cpu" or workers == 1 or len(batches) == 1:
            return np.concatenate([self._embed(b) for b in batches])
        torch.set_num_threads(1)  # each batch on one thread, the batches in parallel
        try:
            with ThreadPoolExecutor(workers) as pool:
                return np.concatenate(list(pool.map(self._embed, batches)))
        finally:
            torch.set_num_threads(workers)

    def _embed(self, windows: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(windows).to(self.net.device).permute(0, 4, 1, 2, 3).float().div_(255.0)
        return self.net.video(x)[self.output].float().cpu().numpy().astype(np.float32)
