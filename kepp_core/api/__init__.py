"""The calls the app and the commands need, over the layers below: a thin door, not a second core.
Each name is documented where it is defined; drawing, scene curation and URLs live with the app
(``app/components``), the facts every layer shares in :mod:`kepp_core.catalog`.

- :mod:`~kepp_core.api.config`: the app's configuration (:class:`AppConfig`: its TOML file and the
  folders a browser visitor may open are its methods);
- :mod:`~kepp_core.api.workspace`: a configuration opened (dataset, graph, models, prediction
  records, training runs, protocol folders, playlists) and the cache home's remembered views;
- :mod:`~kepp_core.api.planning`: the planner of a models folder, one episode from two clips,
  sampled plans, the LLM recommender;
- :mod:`~kepp_core.api.analysis`: transition matrices, expert trajectories, prediction records as
  one table, metrics per method and horizon and by slice (in any evaluation code's family), the
  failure analysis, two methods episode by episode, published numbers beside them;
- :mod:`~kepp_core.api.protocols`: ``kepp protocol`` results: intervals over seeds, the paired
  test of any two methods, data-efficiency curves;
- :mod:`~kepp_core.api.media`: video facts, thumbnails, uploads and their encoding, zero-shot step
  grounding with the S3D text tower;
- the graph's own queries (:mod:`kepp_core.graph`): the neighbourhood of a step, the top-R paths
  between two steps, where a graph came from.

``import kepp_core.api`` stays light: torch loads only when a planner is first needed.

>>> from kepp_core import api
>>> api.AppConfig().dataset, len(api.__all__) <= 47
('demo', True)
"""

from __future__ import annotations

from kepp_core.api.analysis import *  # noqa: F403
from kepp_core.api.config import *  # noqa: F403
from kepp_core.api.media import *  # noqa: F403
from kepp_core.api.planning import *  # noqa: F403
from kepp_core.api.protocols import *  # noqa: F403
from kepp_core.api.workspace import *  # noqa: F403
from kepp_core.api import analysis, config, media, planning, protocols, workspace

# each module's __all__ lists the names it opens in this door (written once, beside their code; the graph's
# own queries are shown by analysis)
__all__ = [
    *config.__all__,
    *workspace.__all__,
    *planning.__all__,
    *analysis.__all__,
    *protocols.__all__,
    *media.__all__,
]
