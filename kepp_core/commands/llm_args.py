"""The command line's LLM-recommendation flags (``kepp train`` / ``kepp eval`` with an LLM
condition row), read into :class:`~kepp_core.llm.options.LLMOptions`.

>>> import argparse
>>> p = argparse.ArgumentParser(); add_llm_args(p)
>>> a = p.parse_args(["--llm-url", "http://127.0.0.1:8080/v1", "--llm-model", "llama"])
>>> llm_options_from_args(a).config(env={}).endpoint
'http://127.0.0.1:8080/v1/chat/completions'
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence

from kepp_core.data.records import Dataset
from kepp_core.errors import KeppError
from kepp_core.llm.client import ENV_KEY, ENV_MODEL, ENV_URL
from kepp_core.llm.embedding import EMBEDDERS
from kepp_core.llm.options import DEFAULT_CACHE, LLMOptions
from kepp_core.llm.recommend import ENDPOINT_FALLBACK, ON_ERROR, VOTE_ON, Fallback, LLMRecommender


def add_llm_args(p: argparse.ArgumentParser) -> None:
    """``--llm-url``, ``--llm-model``, ``--llm-cache``, ``--llm-mapper``, ... (the key only
    from the environment, never on the command line)."""
    g = p.add_argument_group("LLM recommendation (OpenAI-compatible chat endpoint)")
    g.add_argument("--llm-url", default=None, help=f"endpoint base URL, e.g. http://127.0.0.1:8080/v1 "
                                                   f"(default: ${ENV_URL}; key from ${ENV_KEY})")
    g.add_argument("--llm-model", default=None, help=f"model name sent to the endpoint (default: ${ENV_MODEL})")
    g.add_argument("--llm-cache", default=DEFAULT_CACHE, help="folder of cached replies (reruns ask nothing)")
    g.add_argument("--llm-mapper", default="minilm", choices=sorted(EMBEDDERS),
                   help="embedding that maps generated steps to dataset actions")
    g.add_argument("--llm-queries", type=int, default=3, help="planning queries per (a_1, a_T, T), majority-voted")
    g.add_argument("--llm-vote-on", default="text", choices=VOTE_ON,
                   help="vote on the step text (paper) or on the mapped action")
    g.add_argument("--llm-no-verify", action="store_true", help="skip the yes/no plausibility check")
    g.add_argument("--llm-keep-unverified", action="store_true",
                   help="use a plan the model called implausible instead of the fallback")
    g.add_argument("--llm-on-error", default="fallback", choices=ON_ERROR,
                   help="on timeouts, refusals, malformed replies or a down server: use the fallback "
                        "plan and report it, or stop with an error")
    g.add_argument("--llm-timeout", type=float, default=60.0, help="seconds per request")
    g.add_argument("--llm-retries", type=int, default=2, help="extra attempts for retryable failures")
    g.add_argument("--llm-temperature", type=float, default=0.7, help="sampling temperature of the queries")


def llm_options_from_args(args: argparse.Namespace) -> LLMOptions:
    """The :class:`LLMOptions` the :func:`add_llm_args` flags say."""
    return LLMOptions(url=args.llm_url, model=args.llm_model, cache=args.llm_cache, mapper=args.llm_mapper,
                      queries=args.llm_queries, vote_on=args.llm_vote_on, verify=not args.llm_no_verify,
                      keep_unverified=args.llm_keep_unverified, on_error=args.llm_on_error,
                      timeout=args.llm_timeout, retries=args.llm_retries, temperature=args.llm_temperature)


def recommender_from_args(args: argparse.Namespace, dataset: Dataset | Sequence[str],
                          fallback: Fallback | Callable[[int, int, int], Sequence[int]] = ENDPOINT_FALLBACK,
                          env: Mapping[str, str] | None = None) -> LLMRecommender:
    """An :class:`LLMRecommender` configured from the :func:`add_llm_args` flags."""
    try:
        return llm_options_from_args(args).recommender(dataset, fallback, env)
    except KeppError as e:
        raise KeppError(f"{e} (flags: --llm-url, --llm-model)") from None
