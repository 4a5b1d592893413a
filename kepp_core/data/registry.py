"""Loading a dataset by name: ``crosstask``, ``coin``, ``plans``, ``official-list`` (the official
KEPP training lists), ``split-lists`` (the literature's train and test lists) and ``demo`` (the
synthetic world)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from kepp_core.data.coin import load_coin
from kepp_core.data.crosstask import load_crosstask
from kepp_core.data.feature_files import check_manifests_under
from kepp_core.data.official import load_official_list
from kepp_core.data.plans import load_plans
from kepp_core.data.records import Dataset
from kepp_core.data.split_lists import NAME as SPLIT_LISTS, SplitFiles, load_split_lists
from kepp_core.data.synth.world import default_world_root
from kepp_core.errors import KeppError, unknown_name_error

__all__ = ["LOADERS", "load_dataset"]

LOADERS: dict[str, Callable[..., Dataset]] = {
    "crosstask": load_crosstask,
    "coin": load_coin,
    "plans": load_plans,
    "official-list": load_official_list,
    SPLIT_LISTS: load_split_lists,
    # The synthetic world is written in the CrossTask layout and read by the same loader.
    "demo": lambda root, **kw: load_crosstask(root, **{"name": "demo", **kw}),
}


def load_dataset(name: str, root: str | Path | None, features: str | Path | None = None,
                 seed: int = 0, coin_actions: str = "steps", roots: Sequence[Path] | None = None,
                 lists: SplitFiles | None = None) -> Dataset:
    """Load the dataset ``name`` from ``root``.

    ``coin_actions`` (COIN only): ``steps`` (one action per COIN step id) or ``labels``.
    ``roots``: the app's allowed folders (resolved); every file the dataset's files name must lie
    under one of them, the feature folders' manifests included (None, on the command line: any
    path the user's files name). ``lists`` (``split-lists`` only): the train and test lists given
    directly (``root`` is then not needed).

    >>> ds = load_dataset("plans", "../shared/data/niv/plans.jsonl")  # doctest: +SKIP
    """
    if name not in LOADERS:
        raise unknown_name_error("dataset", name, LOADERS)
    if lists is not None and name != SPLIT_LISTS:
        raise KeppError(f"train and test lists are read by --dataset {SPLIT_LISTS} (not {name!r})")
    if name == SPLIT_LISTS:
        ds = load_split_lists(root, features=features, roots=roots, lists=lists)
        check_manifests_under(ds, roots)
        return ds
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
        ds = load_coin(root, features=features, seed=seed, actions=coin_actions, roots=roots)
    else:
        ds = LOADERS[name](root, features=features, seed=seed, roots=roots)
    check_manifests_under(ds, roots)
    return ds
