"""Shared fixtures: the real annotation sets in ../shared/data and small synthetic worlds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def _shared(relative: str) -> Path:
    path = SHARED_DATA / relative
    if not path.exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{path} is missing: CI always provides ../shared/data")
        pytest.skip(f"{path} is not present (the shared annotation sets live beside the repository)")
    return path


@pytest.fixture(scope="session")
def coin_json() -> Path:
    return _shared("coin/COIN.json")


@pytest.fixture(scope="session")
def niv_plans() -> Path:
    return _shared("niv/plans.jsonl")


@pytest.fixture(scope="session")
def coin_dataset(coin_json):
    from kepp_core.data import load_coin

    return load_coin(coin_json)


@pytest.fixture(scope="session")
def niv_dataset(niv_plans):
    from kepp_core.data import load_plans

    return load_plans(niv_plans)
