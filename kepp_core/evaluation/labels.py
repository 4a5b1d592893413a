"""Readable names of the evaluation methods, known without loading the methods (which load
torch): the app's first page names the methods of its scenes before any model is needed. The
methods take their labels from here (:attr:`kepp_core.evaluation.methods.base.Method.label`).

>>> METHOD_LABELS["kepp-R1"]
'KEPP R=1'
"""

from __future__ import annotations

METHOD_LABELS: dict[str, str] = {
    "random": "Random",
    "retrieval": "Retrieval (nearest training episode)",
    "graph-pred": "P²KG zero-shot, predicted endpoints",
    "graph-gt": "P²KG zero-shot, ground-truth endpoints",
    "pdpp": "PDPP (task classifier)",
    "kepp-nograph": "KEPP without graph condition",
    "kepp-R1": "KEPP R=1",
    "kepp-R2": "KEPP R=2",
    "kepp-gt": "KEPP with ground-truth endpoints",
    "kepp-R1-struct": "KEPP R=1, structured training",
    "kepp-llm": "KEPP with the LLM plan instead of the graph",
    "kepp-graph-llm": "KEPP with the graph and the LLM plan",
    "pdpp+dec": "PDPP (task classifier) + graph decoding",
    "kepp-nograph+dec": "KEPP without graph condition + graph decoding",
    "kepp-R1+dec": "KEPP R=1 + graph decoding",
    "kepp-R2+dec": "KEPP R=2 + graph decoding",
    "kepp-gt+dec": "KEPP with ground-truth endpoints + graph decoding",
    "kepp-R1-struct+dec": "KEPP R=1, structured training + graph decoding",
}
