"""The paper's two prompts (supplement C.3) and the parsing of the replies.

The planning prompt asks for ``T`` steps from ``â_1`` to ``â_T`` in the form
"Step 1, ..., Step T"; the verification prompt asks for a plain Yes/No.

>>> parse_steps("Sure!\\nStep 1: boil water\\nStep 2: add tea\\nStep 3: pour into cup", 3)
['boil water', 'add tea', 'pour into cup']
>>> parse_yes_no("Yes, this sequence is possible.")
True
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "PLAN_PROMPT", "VERIFY_PROMPT", "ReplyProblem", "parse_steps", "parse_yes_no", "plan_prompt", "verify_prompt",
]

PLAN_PROMPT = (
    "In the multi-step task that I am going to perform, I know {total_steps} steps are required, "
    "the first step is {start_action}, and the last step is {end_action} and I need to go from "
    "{start_action} to {end_action}. Can you tell me the {total_steps} steps in the form "
    "\"Step 1, ..., Step {total_steps}\" so that I can follow in order to complete this "
    "{total_steps}-step task? Note that repetitive steps are possible"
)

VERIFY_PROMPT = (
    "Is the following action sequence possible? Note that repetitive steps are possible. "
    "Please answer only \"Yes\" or \"No\": {steps}"
)


def plan_prompt(start_action: str, end_action: str, horizon: int) -> str:
    """The planning prompt for a ``horizon``-step task from ``start_action`` to ``end_action``.

    >>> plan_prompt("a", "b", 3)[:60]
    'In the multi-step task that I am going to perform, I know 3 '
    """
    return PLAN_PROMPT.format(total_steps=horizon, start_action=start_action, end_action=end_action)


def format_steps(steps: Sequence[str]) -> str:
    """``Step 1: a, Step 2: b, ...`` (the ``{steps}`` of the verification prompt).

    >>> format_steps(["boil water", "add tea"])
    'Step 1: boil water, Step 2: add tea'
    """
    return ", ".join(f"Step {i}: {s}" for i, s in enumerate(steps, 1))


def verify_prompt(steps: Sequence[str]) -> str:
    return VERIFY_PROMPT.format(steps=format_steps(steps))


class ReplyProblem(Exception):
    """A reply that gives no usable plan; ``kind`` is ``refusal`` or ``malformed``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# "Step 3:", "**Step 3:**", "Step 3 -", "step 3." ... the marker before each step's text.
_STEP_MARK = re.compile(r"(?:\*\*|__)?\bstep\s*(\d+)\s*(?:\*\*|__)?\s*[:.)\-\u2013\u2014]\s*(?:\*\*|__)?",
                        re.IGNORECASE)
# "1. text" / "1) text" at the start of a line (a numbered list without "Step").
_LIST_ITEM = re.compile(r"^\s*(?:[-*]\s*)?(\d+)\s*[.)]\s+(.+?)\s*$", re.MULTILINE)
_REFUSAL = re.compile(
    r"\b(?:i'?m sorry|i am sorry|i apologi[sz]e|i cannot|i can ?not|i can't|i can\u2019t|"
    r"i'?m (?:not able|unable)|i am (?:not able|unable)|as an ai|i won'?t|i will not)\b", re.IGNORECASE)


def _clean(text: str) -> str:
    text = text.strip().strip("*_`").strip()
    text = text.strip("\"'\u201c\u201d\u2018\u2019").strip()
    return text.rstrip(" ,;.").strip()


def parse_steps(reply: str, horizon: int) -> list[str]:
    """The ``horizon`` step texts of a planning reply, or a :class:`ReplyProblem`.

    Steps are found by their "Step i" markers (any of ``:``, ``.``, ``)``, ``-`` after the
    number, markdown bold allowed), else as a numbered list. A step's text runs to the end
    of its line or to the next marker. The numbers must be exactly ``1..horizon``.

    >>> parse_steps("Step 1: a, Step 2: b, Step 3: c.", 3)
    ['a', 'b', 'c']
    >>> parse_steps("1. crack eggs\\n2. whisk\\n3. fry", 3)
    ['crack eggs', 'whisk', 'fry']
    """
    found: dict[int, str] = {}
    marks = list(_STEP_MARK.finditer(reply))
    for k, m in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(reply)
        text = _clean(reply[m.end():end].lstrip().split("\n", 1)[0])
        number = int(m.group(1))
        if text and number not in found:
            found[number] = text
    if not found:
        for m in _LIST_ITEM.finditer(reply):
            number, text = int(m.group(1)), _clean(m.group(2))
            if text and number not in found:
                found[number] = text
    if not found:
        if not reply.strip():
            raise ReplyProblem("malformed", "empty reply")
        if _REFUSAL.search(reply):
            raise ReplyProblem("refusal", f"the model declined: {_short(reply)!r}")
        raise ReplyProblem("malformed", f"no 'Step i' lines in the reply: {_short(reply)!r}")
    numbers = sorted(found)
    if numbers[-1] > horizon:
        raise ReplyProblem("malformed", f"the reply has step {numbers[-1]}, expected {horizon} steps: "
                                        f"{_short(reply)!r}")
    missing = [i for i in range(1, horizon + 1) if i not in found]
    if missing:
        raise ReplyProblem("malformed", f"the reply lacks step {missing[0]} of {horizon}: {_short(reply)!r}")
    return [found[i] for i in range(1, horizon + 1)]


def parse_yes_no(reply: str) -> bool | None:
    """``True`` for yes, ``False`` for no, ``None`` when the reply says neither (or both).

    >>> parse_yes_no("**No.** Step 2 cannot follow step 1."), parse_yes_no("Maybe")
    (False, None)
    """
    words = re.findall(r"[a-z]+", reply.lower())
    if not words:
        return None
    if words[0] in ("yes", "no"):
        return words[0] == "yes"
    said = {w for w in words if w in ("yes", "no")}
    return (said.pop() == "yes") if len(said) == 1 else None


def normalise_step(text: str) -> str:
    """The voting key of a step: lower case, words only.

    >>> normalise_step("  Pour the Water. ")
    'pour the water'
    """
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _short(text: str, n: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n] + "..."
