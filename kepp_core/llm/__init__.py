"""LLM plan recommendations: an OpenAI-compatible chat client with an on-disk reply cache,
the paper's prompts, majority vote, plausibility check and mapping of generated steps to
dataset actions by sentence embeddings (paper supplement C.3)."""

from kepp_core.llm.cache import ResponseCache, request_key
from kepp_core.llm.client import ERROR_KINDS, ChatClient, LLMConfig, LLMError
from kepp_core.llm.embedding import EMBEDDERS, Embedder, LexicalEmbedder, MiniLMEmbedder, make_embedder
from kepp_core.llm.mapping import ActionMapper
from kepp_core.llm.options import LLMOptions
from kepp_core.llm.prompts import (PLAN_PROMPT, VERIFY_PROMPT, ReplyProblem, parse_steps, parse_yes_no,
                                   plan_prompt, verify_prompt)
from kepp_core.llm.recommend import (ENDPOINT_FALLBACK, Fallback, LLMRecommendation, LLMRecommender,
                                     graph_fallback, llm_conditions, llm_recommendations, majority_vote,
                                     plan_condition)

__all__ = [
    "EMBEDDERS", "ENDPOINT_FALLBACK", "ERROR_KINDS", "PLAN_PROMPT", "VERIFY_PROMPT", "ActionMapper",
    "ChatClient", "Embedder", "Fallback", "LLMConfig", "LLMError", "LLMRecommendation", "LLMRecommender",
    "LLMOptions", "LexicalEmbedder", "MiniLMEmbedder", "ReplyProblem", "ResponseCache", "graph_fallback",
    "llm_conditions", "llm_recommendations", "majority_vote", "make_embedder", "parse_steps",
    "parse_yes_no", "plan_condition", "plan_prompt", "request_key", "verify_prompt",
]
