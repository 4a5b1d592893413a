"""Loading a dataset by name: ``crosstask``, ``coin``, ``plans``, ``official-list`` (the official
KEPP training lists) and ``demo`` (the synthetic world)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from kepp_core.data.coin import load_coin
from kepp_core.data.crosstask import load_crosstask
from kepp_core.data.official import load_official_list
from kepp_core.data.plans import load_plans
from kepp_core.data.records import Dataset
from kepp_core.data.synth.world import default_world_root
from kepp_core.errors import KeppError, unknown_name_error

LOADERS: dict[str, Callable[..., Dataset]] = {
    "crosstask": load_crosstask,
    "coin": load_coin,
    "plans": load_plans,
    "official-list": load_official_list,
    # The synthetic world is written in the CrossTask layout and read by the same loader.
    "demo": lambda root, **kw: load_crosstask(root, **{"name": "demo", **kw}),
}


def load_dataset(name: str, root: str | Path | None, features: str | Path | None = None,
                 seed: int = 0, coin_actions: str = "steps", roots: Sequence[Path] | None = None) -> Dataset:
    """Load the dataset ``name`` from ``root``.

    ``coin_actions`` (COIN only): ``steps`` (one action per COIN step id) or ``labels``.
    ``roots``: the app's allowed folders (resolved); every file the dataset's files name must lie
    under one of them (None, on the command line: any path the user's files name).

    >>> ds = load_dataset("plans", "../shared/data/niv/plans.jsonl")  # doctest: +SKIP
    """
    if name not in LOADERS:
        raise unknown_name_error("dataset", name, LOADERS)
    if root is None:
        if name != "demo":
            raise KeppError(f"dataset {name!r} needs a root (a folder or annotation file)")
        root = default_world_root()  # loading never renders: `kepp demo` or `kepp data synth` does
        if not (root / "world.json").is_file():
            raise KeppError(f"{root}: the demo world is not built yet (run `kepp data synth` or `kepp demo`, "
                            "or call kepp_core.data.synth.ensure_world())")
    if not Path(root).exists():
        raise KeppError(f"{root}: dataset path does not exist")
    if name == "coin":
        return load_coin(root, features=features, seed=seed, actions=coin_actions, roots=roots)
    return LOADERS[name](root, features=features, seed=seed, roots=roots)
