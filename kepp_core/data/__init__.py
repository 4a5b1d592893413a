"""Plans, tasks, vocabularies, loaders (CrossTask, COIN, plans-JSONL), episodes, synthetic world."""

from kepp_core.data.coin import *  # noqa: F403
from kepp_core.data.crosstask import *  # noqa: F403
from kepp_core.data.episodes import *  # noqa: F403
from kepp_core.data.extract import *  # noqa: F403
from kepp_core.data.feature_files import *  # noqa: F403
from kepp_core.data.plans import *  # noqa: F403
from kepp_core.data.records import *  # noqa: F403
from kepp_core.data.registry import *  # noqa: F403
from kepp_core.data.stats import *  # noqa: F403
from kepp_core.data import (
    coin,
    crosstask,
    episodes,
    extract,
    feature_files,
    plans,
    records,
    registry,
    stats,
)

# each part's __all__ lists the names it shows through this package (written once, beside their code)
__all__ = [
    *coin.__all__,
    *crosstask.__all__,
    *episodes.__all__,
    *extract.__all__,
    *feature_files.__all__,
    *plans.__all__,
    *records.__all__,
    *registry.__all__,
    *stats.__all__,
]
