"""The facts every layer shares, in one place and without torch or numpy (the app's first page,
``kepp --help`` and the command parsers read them), one module per concern:

- :mod:`~kepp_core.catalog.roles`: the model roles and the one codec between a model folder's name
  and its role (``step``, ``plan-graph-R2``, ``endpoints-pair``, ...);
- :mod:`~kepp_core.catalog.files`: a models root's horizon folders (``ROOT/T<h>``) and the file names;
- :mod:`~kepp_core.catalog.sources`: the endpoint sources (step model, truth, endpoint model and its
  variants, text tower): each one's role and words, and what it gives evaluation and the planner;
- :mod:`~kepp_core.catalog.decoders`: the decoders of the graph-decoded rows (graph, joint): each one's
  modes, stored choice key and words;
- :mod:`~kepp_core.catalog.rows`: the evaluation methods, one :class:`MethodEntry` per row of the table,
  built from named parts (a kind, an implementation, an endpoint source, a decoder);
- :mod:`~kepp_core.catalog.live`: which planner re-plans a row on two clips (:func:`live_planner`);
- :mod:`~kepp_core.catalog.metrics`: the metric names, the paired test and the failure patterns;
- :mod:`~kepp_core.catalog.benchmark`: the field's evaluation codes as metric families (keys, row
  fields, headers naming the code) and the unified benchmark's facts;
- :mod:`~kepp_core.catalog.slices`: the named cuts of a method's episodes;
- :mod:`~kepp_core.catalog.scorers`: the path scorers' readable names;
- :mod:`~kepp_core.catalog.episodes`: the episode-id codec;
- :mod:`~kepp_core.catalog.limits`: limits and fixed vocabularies of the option parsers;
- :mod:`~kepp_core.catalog.defaults`: the named defaults (observation setting, ``M``, the table's
  horizons, the logit scale, the confidence level).

Every public name is read from this package (``from kepp_core.catalog import NAME``); each module
lists its own in its ``__all__`` (and this package's ``__all__`` is their sum), so a name is written
once, beside what it names. The app imports only this package of them (with ``kepp_core.api`` and
``kepp_core.errors``).

>>> method("kepp-R2").R, model_folder(ENDPOINTS_PAIR), horizon_folder(3), METRIC_NAMES["SR"]
(2, 'endpoints-pair', 'T3', 'SR')
"""

from kepp_core.catalog.benchmark import *  # noqa: F403
from kepp_core.catalog.defaults import *  # noqa: F403
from kepp_core.catalog.episodes import *  # noqa: F403
from kepp_core.catalog.files import *  # noqa: F403
from kepp_core.catalog.limits import *  # noqa: F403
from kepp_core.catalog.metrics import *  # noqa: F403
from kepp_core.catalog.roles import *  # noqa: F403
from kepp_core.catalog.decoders import *  # noqa: F403
from kepp_core.catalog.rows import *  # noqa: F403
from kepp_core.catalog.live import *  # noqa: F403
from kepp_core.catalog.sources import *  # noqa: F403
from kepp_core.catalog.scorers import *  # noqa: F403
from kepp_core.catalog.slices import *  # noqa: F403
from kepp_core.catalog import (
    benchmark,
    decoders,
    defaults,
    episodes,
    files,
    limits,
    live,
    metrics,
    roles,
    rows,
    scorers,
    slices,
    sources,
)

# each part's __all__ lists the names it shows through this package (written once, beside their code)
__all__ = [
    *benchmark.__all__,
    *defaults.__all__,
    *episodes.__all__,
    *files.__all__,
    *limits.__all__,
    *metrics.__all__,
    *roles.__all__,
    *decoders.__all__,
    *rows.__all__,
    *live.__all__,
    *sources.__all__,
    *scorers.__all__,
    *slices.__all__,
]
