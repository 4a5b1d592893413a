"""Readable names and first choices: the one display name of each evaluation method (every page
asks :func:`method_name`), an episode id as words, the method a page shows first and the methods it
compares it with (plain Python, no Streamlit)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kepp_core import catalog

__all__ = ["COMPARED_WITH", "compare_default", "default_method", "episode_label", "first_shown", "method_name",
           "method_names", "namer"]

# The rows the Results page compares a chosen method with first (the ablation and the baselines).
COMPARED_WITH = ("kepp-nograph", "pdpp", "graph-pred", "random")


def method_name(name: str, imported: str | None = None) -> str:
    """The one name a method goes by in the app, on every page, in every title, caption, select box and
    table: the catalogue's label (a method the catalogue does not know keeps its own name); a method whose
    plans were imported (``kepp records import``: ``imported``, the predictions file they came from) says so.

    >>> method_name("kepp-R2"), method_name("random"), method_name("my-own-row")
    ('KEPP R=2', 'Random', 'my-own-row')
    >>> method_name("ViterbiPlanNet", "T3_predictions.json")
    'ViterbiPlanNet (imported: T3_predictions.json)'
    """
    label = catalog.method_label(name)
    return f"{label} (imported: {imported})" if imported else label


def method_names(names, imported: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each of ``names`` with its display name (:func:`method_name`; ``imported``: the predictions file of
    each imported method)."""
    files = imported or {}
    return {n: method_name(n, files.get(n)) for n in names}


def namer(names: Mapping[str, str]) -> Callable[[str], str]:
    """A method's display name from ``names`` (the records' own: :func:`method_names`), else
    :func:`method_name`'s: the ``format_func`` of a page's method pickers.

    >>> namer({"vpn": "vpn (imported: T3.json)"})("vpn"), namer({})("kepp-R2")
    ('vpn (imported: T3.json)', 'KEPP R=2')
    """
    return lambda m: names.get(m) or method_name(m)


def episode_label(episode: str, task_names: dict | None = None) -> str:
    """A record's episode id as words: task name, video, the steps it covers.

    >>> episode_label("coffee/0001/2:3", {"coffee": "make coffee"})
    'make coffee · video 0001 · steps 3–5'
    """
    parts = catalog.parse_episode_id(episode)
    if parts is None:
        return str(episode)
    task, video, first, horizon = parts
    name = (task_names or {}).get(task, task)
    return f"{name} · video {video} · steps {first + 1}–{first + horizon}"


def first_shown(names) -> str | None:
    """Of the methods ``names``, the one a records page shows first: the KEPP planner with the most
    paths, else KEPP with ground-truth endpoints (None when none of them).

    >>> first_shown(["random", "kepp-gt", "kepp-R1"]), first_shown(["random", "kepp-gt"]), first_shown(["random"])
    ('kepp-R1', 'kepp-gt', None)
    """
    present = set(names)
    rows = [m for m in catalog.methods() if m.name in present]
    planners = sorted((m for m in rows if m.stores_paths), key=lambda m: -m.R)
    truth = [m for m in rows if m.ends is not None and m.ends.exact and m.R is not None and m.plan_model is not None
             and not m.decoded and not m.structured]
    return (planners + truth)[0].name if planners or truth else None


def default_method(methods: list[str]) -> int:
    """Index of the method to show first: KEPP if it was evaluated (:func:`first_shown`).

    >>> default_method(["random", "kepp-R1", "kepp-R2"])
    2
    """
    first = first_shown(methods)
    return methods.index(first) if first is not None else 0


def compare_default(method: str, available: Sequence[str], most: int = 4) -> list[str]:
    """The methods to compare ``method`` with on one episode, first: itself, then those of
    :data:`COMPARED_WITH` the episode has (``most`` in all).

    >>> compare_default("kepp-R3", ["random", "kepp-R3", "kepp-nograph"])
    ['kepp-R3', 'kepp-nograph', 'random']
    """
    return ([method] + [m for m in COMPARED_WITH if m in available and m != method])[:most]
