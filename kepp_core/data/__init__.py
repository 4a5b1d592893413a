"""Plans, tasks, vocabularies, loaders (CrossTask, COIN, plans-JSONL), episodes, synthetic world."""

from kepp_core.data.coin import load_coin
from kepp_core.data.crosstask import load_crosstask
from kepp_core.data.episodes import Episode, make_episodes, observations
from kepp_core.data.extract import ExtractSummary, extract_features
from kepp_core.data.feature_files import load_features
from kepp_core.data.plans import load_plans, write_plans
from kepp_core.data.records import Dataset, Step, Task, Video
from kepp_core.data.registry import LOADERS, load_dataset
from kepp_core.data.stats import dataset_stats

__all__ = [
    "LOADERS", "Dataset", "Episode", "ExtractSummary", "extract_features", "Step", "Task", "Video", "dataset_stats",
    "load_coin", "load_crosstask", "load_dataset", "load_features", "load_plans",
    "make_episodes", "observations", "write_plans",
]
