"""What the S3D tests and the S3D app test build: the release's two files made from the reference
fixture's weight rule (``../shared/data/official-s3d/README.md``), a small synthetic world whose
features come from the S3D encoder, and official-format checkpoints whose observation fits it."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

SMALL = "size=32"  # a 32-px crop: the fixture network on tiny inputs (a test's encoder, never a default)


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """One intra-op thread for the block (the suite runs two workers on two cores), the count restored after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def write_release(folder: Path, words: list[str]) -> Path:
    """``folder/s3d_howto100m.pth`` (a state dict of the fixture rule, saved with ``torch.save``,
    its vocabulary sized for ``words``) and ``folder/s3d_dict.npy``; the weights file's path."""
    from kepp_core.video.s3d import rule_state_dict

    folder.mkdir(parents=True, exist_ok=True)
    torch.save(rule_state_dict(len(words) + 1), folder / "s3d_howto100m.pth")
    np.save(folder / "s3d_dict.npy", np.array(words))
    return folder / "s3d_howto100m.pth"


def step_words(actions) -> list[str]:
    """The words of a dataset's step names, sorted (a word list under which every step has a text)."""
    return sorted({w for a in actions for w in re.findall(r"[\w']+", a.lower())})


def official_checkpoints(folder: Path, actions: int, obs: int, horizon: int = 3, seed: int = 0) -> tuple[Path, Path]:
    """An official-format planning and step checkpoint (``torch.save`` of ``model``/``ema`` state
    dicts, keys ``module.``-prefixed) of untrained official networks (dim 32) for ``actions``
    actions and observations of ``obs`` values: ``(plan, step)``."""
    from kepp_core.diffusion.official import LLM_FROM_GRAPH, OfficialDiffusion

    torch.manual_seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for kind in ("plan", "step"):
        rows = actions if kind == "plan" else 0
        net = OfficialDiffusion(kind, horizon, obs, actions, n_steps=20, dim=32, dim_mults=(1, 2, 4),
                                graph_dim=rows, llm_dim=rows, llm_rows=LLM_FROM_GRAPH)
        state = {f"module.{k}": v for k, v in net.state_dict().items()}
        path = folder / f"official-{kind}.pth.tar"
        torch.save({"epoch": 1, "model": state, "ema": state, "step": 1}, path)
        out.append(path)
    return out[0], out[1]


def build_s3d_world(base: Path) -> tuple[Path, Path]:
    """``base/world``: a small synthetic world (24 short videos, 64 px; one training video held out for
    validation, where a decoding choice is made) whose features are re-extracted with
    the S3D encoder (``base/s3d``: a release whose word list holds the world's step words; a 32-px
    crop): ``(world root, weights file)``. Built once (``base/ready`` marks it done)."""
    from kepp_core.data import load_dataset
    from kepp_core.data.extract import extract_features
    from kepp_core.data.synth import generate_world

    root, release_dir = base / "world", base / "s3d"
    if (base / "ready").is_file():
        return root, release_dir / "s3d_howto100m.pth"
    generate_world(root, seed=0, videos=24, progress=False, step_min=0.8, step_max=1.0, idle=0.2, size=64)
    release = write_release(release_dir, step_words(load_dataset("demo", root).actions))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the suite runs two workers on two cores
    try:
        extract_features(root, f"s3d:{release},{SMALL}", force=True, progress=False)
    finally:
        torch.set_num_threads(threads)
    (base / "ready").write_text("")
    return root, release


def build_official_models(base: Path, world: Path) -> Path:
    """``base/models``: official-format checkpoints for ``world``'s actions and observations of
    3 s × 512 values (S3D's ``video_embedding``), imported with ``kepp models import`` (the world
    as their dataset: its step names and the graph beside the planner). Built once."""
    from kepp_core.cli import main
    from kepp_core.data import load_dataset

    models = base / "models"
    if (base / "ready").is_file():
        return models
    plan, step = official_checkpoints(base / "official", load_dataset("demo", world).num_actions, 3 * 512)
    code = main(["models", "import", "--plan", str(plan), "--step", str(step), "-T", "3", "--out", str(models),
                 "--dataset", "demo", "--root", str(world)])
    assert code == 0, "kepp models import could not import the test checkpoints"
    (base / "ready").write_text("")
    return models
