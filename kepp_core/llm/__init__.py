"""LLM plan recommendations: an OpenAI-compatible chat client with an on-disk reply cache,
the paper's prompts, majority vote, plausibility check and mapping of generated steps to
dataset actions by sentence embeddings (paper supplement C.3)."""

from kepp_core.llm.cache import *  # noqa: F403
from kepp_core.llm.client import *  # noqa: F403
from kepp_core.llm.embedding import *  # noqa: F403
from kepp_core.llm.mapping import *  # noqa: F403
from kepp_core.llm.options import *  # noqa: F403
from kepp_core.llm.prompts import *  # noqa: F403
from kepp_core.llm.recommend import *  # noqa: F403
from kepp_core.llm import cache, client, embedding, mapping, options, prompts, recommend

# each part's __all__ lists the names it shows through this package (written once, beside their code)
__all__ = [
    *cache.__all__,
    *client.__all__,
    *embedding.__all__,
    *mapping.__all__,
    *options.__all__,
    *prompts.__all__,
    *recommend.__all__,
]
