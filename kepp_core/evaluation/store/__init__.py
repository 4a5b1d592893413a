"""The records store: per-episode records (:mod:`kepp_core.evaluation.records`) as columns, read and judged once
per file version and cached, in parts:

- :mod:`~kepp_core.evaluation.store.reading`: a records file as rows (the fast way, pyarrow's JSON reader with its
  checks as columns, or record by record with the one-line error of the first bad record);
- :mod:`~kepp_core.evaluation.store.judging`: each row's success and failure patterns, decided once here;
- :mod:`~kepp_core.evaluation.store.version`: a file's version (size, hash of its bytes; the hash remembered) and
  the cache home's bounded reads of regular files only;
- :mod:`~kepp_core.evaluation.store.cache`: a file's judged table kept in the cache home, proving what it is
  (its source's identity, its checksum) before it is used;
- :mod:`~kepp_core.evaluation.store.sources`: which version of each records file the cache holds; the tables of
  versions no longer on disk deleted;
- :mod:`~kepp_core.evaluation.store.arrays`: plans and ground truths as ``[n, T]`` arrays;
- :mod:`~kepp_core.evaluation.store.files`: a folder's records files and those skipped, several read at once;
- :mod:`~kepp_core.evaluation.store.frame`: several files as one table, and the pandas predictions table of
  :func:`kepp_core.api.read_predictions`;
- :mod:`~kepp_core.evaluation.store.units`: a protocol's records as the units of its paired tests.

JSONL and Parquet stay the formats records are written and exchanged in; the cache is Arrow IPC.
"""

from kepp_core.evaluation.store.arrays import *  # noqa: F403
from kepp_core.evaluation.store.cache import *  # noqa: F403
from kepp_core.evaluation.store.files import *  # noqa: F403
from kepp_core.evaluation.store.frame import *  # noqa: F403
from kepp_core.evaluation.store.judging import *  # noqa: F403
from kepp_core.evaluation.store.reading import *  # noqa: F403
from kepp_core.evaluation.store.sources import *  # noqa: F403
from kepp_core.evaluation.store.units import *  # noqa: F403
from kepp_core.evaluation.store.version import *  # noqa: F403
from kepp_core.evaluation.store import arrays, cache, files, frame, judging, reading, sources, units, version

# each part's __all__ lists the names it shows through this package (written once, beside their code)
__all__ = [*arrays.__all__, *cache.__all__, *files.__all__, *frame.__all__, *judging.__all__, *reading.__all__,
           *sources.__all__, *units.__all__, *version.__all__]
