"""What the Plan page shows, decided without Streamlit: :func:`decide` takes the page's state for one run
(:class:`PlanState`, read from its URL keys and its widgets), what the planner side offers
(:class:`Models`) and what the prediction records hold (:class:`Records`), and says which result is shown
(a record, the live plan, or the two as tabs of one result), whether to plan now, which messages to show,
whether the page stops before a result, whether to bring the result into view, and which of the state's
keys go into the URL. The page draws the :class:`Decision`; ``tests/test_app_plan_decision.py`` runs every
exit of every function here.

Every exit of the page is a decision: an input the page cannot go on from (:attr:`PlanState.held`: no model
of the horizon, :func:`untrained_horizon`; a models folder without a planning model, :func:`no_planning_model`;
a playlist item's missing video, :func:`missing_video`; no upload yet, :data:`NO_UPLOAD`; no video matching the
search, :data:`NO_MATCH`) is said by :func:`decide`, and the page stops there.

Beside it, the smaller decisions the page asks on its way: a playlist item whose video is not in the
dataset (:func:`missing_video`), whether an upload can be offered (:func:`upload_refused`), a live plan that
is not a plan (:func:`no_plan`), typed steps beyond the
budget (:func:`typed_steps`), the horizons and the R a page may offer (:func:`horizon_choices`,
:func:`r_choices`) and the words for the symbols a result shows (:data:`SYMBOLS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from components.ui.text import md

__all__ = ["LIVE", "MAX_STEP_CHARS", "MAX_TYPED_STEPS", "NO_MATCH", "NO_UPLOAD", "RECORDED", "RECORD_KEYS", "SYMBOLS",
           "Decision", "Message", "Models", "PlanState", "Records", "choice_words", "decide", "default_model",
           "horizon_choices", "missing_video", "no_plan", "no_planning_model", "r_choices", "typed_steps",
           "untrained_horizon", "upload_refused"]

RECORDED, LIVE = "recorded", "live"  # the two views of one result (the page's tabs)
MAX_TYPED_STEPS = 200  # step names typed for the step timeline (each is a text-tower query and a timeline row)
MAX_STEP_CHARS = 200  # characters of one typed step name
# The keys a Plan page without models honours: the episode, the record shown and the playlist place played
# (the planner's keys name what a live re-plan would run, and no model runs there).
RECORD_KEYS = ("T", "video", "ep", "rec", "seed", "playlist", "item")

# One line for each symbol a result shows, where it shows (captions and help texts).
SYMBOLS = {
    "ends": "â₁ / â_T: the first / last step predicted from the start / goal clip, with its probability.",
    "R": "R: how many of the graph's most probable paths between â₁ and â_T the planning model is given "
         "(a graph-conditioned model's R is the R it was trained with).",
    "paths": "Graph paths: the P²KG's most probable T-step paths between â₁ and â_T, by probability; "
             "\"graph paths 1 = 2\" is one path at ranks 1 and 2 (the graph has no other of that length).",
    "kbest": "K-best plans: this row's K most probable plans, best first, each with its log score (the planning "
             "model's log-probabilities, λ × the P²KG's log transitions and the log-probabilities of its first and "
             "last step); the row's plan is the first.",
}  # a decoding's words are its decoder's (kepp_core.catalog.decoders: Decoder.words)


@dataclass(frozen=True)
class Message:
    """A message the page shows: ``level`` (``info``, ``warning``, ``error``, ``caption``), Markdown
    ``text`` (dataset and URL strings in it escaped; empty: nothing to say) and its ``icon`` (None: its level's;
    ``""``: none)."""

    level: str
    text: str
    icon: str | None = None


NO_UPLOAD = Message("info", "Upload a video to plan from it.", icon="")  # the upload source, nothing uploaded yet
NO_MATCH = Message("warning", "")  # the video picker's search matches no video: the picker says so itself


@dataclass(frozen=True, kw_only=True)
class PlanState:
    """The page's state for one run, as far as the decision needs it.

    ``rec``/``seed``: the record the state names (a method; its seed, None: its first); ``live``: the
    live tab asked for (``live=1``); ``plan``: ``plan=1`` in the address; ``arrived``: the state came
    with an address that asked for it (a link, a reload, a scene, a playlist's next item), not the
    page's own first state; ``news``: a key of the address is new this run; ``linkable``: the video can
    travel in a link (a dataset video or the upload scene); ``from_dataset``: the video is the dataset's
    (a record is of a dataset video); ``pressed``: the Plan button was pressed this run; ``tab``: the
    view the visitor chose this run (:data:`RECORDED`, :data:`LIVE`; None: no choice); ``saved``: a
    live result of exactly these inputs is held; ``playlist``/``item``: the playlist place played;
    ``presenting``: presentation mode (the controls folded away: the result is what the room sees);
    ``asked``: the keys the address holds (a page without models names those it cannot honour); ``held``: an
    input the page cannot go on from, found while its inputs were read (None: every input is there)."""

    rec: str | None = None
    seed: int | None = None
    live: bool = False
    plan: bool = False
    arrived: bool = False
    news: bool = False
    linkable: bool = True
    from_dataset: bool = True
    pressed: bool = False
    tab: str | None = None
    saved: bool = False
    playlist: str | None = None
    item: int | None = None
    presenting: bool = False
    asked: tuple[str, ...] = ()
    held: Message | None = None

    @property
    def in_view(self) -> bool:
        """Whether a result shown now is brought into view: it arrived asked for (a link, a scene, a slide, a
        press), or the page is presented; a page opened plainly stays at its top, with its controls."""
        return self.arrived or self.pressed or self.presenting


@dataclass(frozen=True, kw_only=True)
class Models:
    """The planner side: ``live_label`` (the evaluation row the live planner is, in words),
    ``width_error`` (the models cannot take the chosen encoder's features: nothing can be planned) and
    ``missing`` (why the page has no models at all, None: it has: nothing plans live, a record the
    address names is the one view, else the graph alone plans zero-shot) and ``choice`` (the words of the
    models folder's stored planning-model choice where the live planner runs the model it names,
    :func:`choice_words`; None: no stored choice, or another model was picked)."""

    live_label: str
    width_error: str | None = None
    missing: str | None = None
    choice: str | None = None


@dataclass(frozen=True, kw_only=True)
class Records:
    """The record of the shown episode that the state names, as the prediction records hold it
    (``record``: a :class:`components.records.recorded.Record`, None: none), its method's words (``label``) and,
    for a method whose plans were imported (``kepp records import``), their predictions file
    (``imported``: the app has no model of that method, so nothing re-plans it)."""

    record: object | None = None
    label: str = ""
    imported: str | None = None


@dataclass(frozen=True, kw_only=True)
class Decision:
    """What the page draws: ``record`` (the record shown: its tab), ``live`` (the live plan is shown:
    alone, or in its tab), ``tab`` (the view open when there is a record), ``plan_now`` (run the
    planner this run), ``messages`` (in order), ``stop`` (no result below the messages), ``scroll``
    (bring the result into view), ``keep`` (the URL values of ``rec``, ``seed``, ``live``, ``plan``; None
    drops a key), ``zero_shot`` (no models and no record: the graph alone plans, from its own controls) and
    ``ignored`` (``(key, why)`` for each key of the address the page cannot honour: said on the page)."""

    record: object | None
    live: bool
    tab: str | None
    plan_now: bool
    messages: tuple[Message, ...] = ()
    stop: bool = False
    scroll: bool = False
    keep: dict = field(default_factory=dict)
    zero_shot: bool = False
    ignored: tuple[tuple[str, str], ...] = ()


def _item(state: PlanState) -> str:
    return f"Playlist **{md(state.playlist)}**, item {state.item}: " if state.playlist else ""


def _missing_record(state: PlanState, records: Records, models: Models) -> Message | None:
    """The message for a record the state names that the records do not hold (None: no such record asked)."""
    if not state.rec or records.record is not None or not (state.linkable and state.from_dataset or models.missing):
        return None
    seed = "" if state.seed is None else f" (seed {state.seed})"
    instead = (f"with no models here ({md(models.missing)}), the graph alone plans below" if models.missing else
               f"shown instead is a live plan by **{md(models.live_label)}**, labelled as such")
    return Message("warning", f"{_item(state)}the loaded prediction records hold no **{md(records.label or state.rec)}** "
                              f"record of this episode{seed}: {instead}.")


def _imported_record(records: Records, models: Models) -> Message:
    """The caption of an imported method's record: its plan is what is shown; no model of it re-plans."""
    live = (f"No model here re-plans it ({md(models.missing)})." if models.missing else
            f"**Re-plan live** plans these clips with **{md(models.live_label)}**, a second view labelled as such.")
    return Message("caption", f"**{md(records.label)}** is another method's predictions brought in with kepp records "
                              "import: the app has no model of it, so its recorded plan is shown and nothing re-plans "
                              f"it (no endpoints or graph paths were recorded). {live}")


def _without_models(state: PlanState, models: Models, records: Records) -> Decision:
    """The decision of a page without models: the record the address names, shown as recorded with no live
    view (no model runs here), and every key of the address that names something else (a planner, clips, a
    live view) said not taken; with no such record, the graph alone (zero-shot), every key said not taken."""
    record = records.record if state.from_dataset else None
    missing = _missing_record(state, records, models)
    if record is None:
        why = f"no models here ({models.missing}): the graph alone plans, from its own controls"
        ignored = tuple((k, why) for k in state.asked if k not in ("playlist", "item"))
        return Decision(record=None, live=False, tab=None, plan_now=False, zero_shot=True, ignored=ignored,
                        messages=(missing,) if missing else (), keep={k: None for k, _ in ignored})
    if records.imported:
        said = _imported_record(records, models)
    else:
        said = Message("caption", f"No models here ({md(models.missing)}): **{md(records.label)}**'s plan is shown as "
                                  "the prediction records hold it, and nothing re-plans it.")
    why = f"no models here ({models.missing}): the recorded plan is shown, nothing is planned live"
    ignored = tuple((k, why) for k in state.asked if k not in RECORD_KEYS)
    keep = {k: None for k, _ in ignored} | {"rec": getattr(record, "method", None),
                                            "seed": getattr(record, "seed", None), "live": None, "plan": None}
    return Decision(record=record, live=False, tab=RECORDED, plan_now=False, messages=(said,), scroll=state.in_view,
                    keep=keep, ignored=ignored)


def decide(state: PlanState, models: Models, records: Records) -> Decision:
    """The decision (see the module docstring): a record the state names and the records hold is shown as
    recorded, the live plan as a second view of it (its tab, planned when open); with no such record the
    live plan is the one view, planned on a press or on an address that asks for it (``plan=1``, or a
    record the records lack), else the page asks for a press.

    >>> d = decide(PlanState(rec="kepp-R2", arrived=True), Models(live_label="KEPP R=2"), Records(record="rec"))
    >>> d.record, d.tab, d.plan_now, d.scroll, d.keep["live"]
    ('rec', 'recorded', False, True, None)

    Without models (``models.missing``) the record is the one view, and a key the page cannot honour is named:

    >>> d = decide(PlanState(rec="vpn", live=True, asked=("T", "video", "ep", "rec", "live")),
    ...            Models(live_label="", missing="no models"), Records(record="rec"))
    >>> d.record, d.live, d.plan_now, d.zero_shot, [k for k, _ in d.ignored]
    ('rec', False, False, False, ['live'])

    An input the page cannot go on from is said, and the page stops there:

    >>> d = decide(PlanState(held=NO_UPLOAD), Models(live_label=""), Records())
    >>> d.stop, d.plan_now, [m.text for m in d.messages]
    (True, False, ['Upload a video to plan from it.'])
    """
    if state.held is not None:
        return Decision(record=None, live=False, tab=None, plan_now=False, stop=True,
                        messages=(state.held,) if state.held.text else ())
    if models.missing:
        return _without_models(state, models, records)
    record = records.record if state.linkable and state.from_dataset else None
    messages = [m for m in (_missing_record(state, records, models),) if m is not None]
    if models.width_error:
        messages.append(Message("error", md(models.width_error)))
    if record is not None:
        if records.imported:
            messages.append(_imported_record(records, models))
        tab = state.tab or (LIVE if state.live or state.pressed else RECORDED)
        if state.pressed:
            tab = LIVE
        planned = tab == LIVE and not models.width_error and (state.pressed or not state.saved)
        keep = {"rec": getattr(record, "method", None), "seed": getattr(record, "seed", None),
                "live": True if tab == LIVE else None, "plan": None}
        return Decision(record=record, live=tab == LIVE and (planned or state.saved), tab=tab, plan_now=planned,
                        messages=tuple(messages + (_choice(models) if tab == LIVE else [])), scroll=state.in_view,
                        keep=keep)
    asked = state.linkable and state.news and (state.plan or bool(state.rec))
    planned = not models.width_error and (state.pressed or (asked and not state.saved))
    live = planned or state.saved
    keep = {"rec": None, "seed": None, "live": None, "plan": True if live and state.linkable else None}
    if not live:
        if not models.width_error:
            messages.append(Message("info", "Choose the clips and press **Plan**."))
        return Decision(record=None, live=False, tab=None, plan_now=False, messages=tuple(messages), stop=True,
                        keep=keep)
    return Decision(record=None, live=True, tab=None, plan_now=planned, messages=tuple(messages + _choice(models)),
                    scroll=state.in_view, keep=keep)


def _choice(models: Models) -> list[Message]:
    """The stored planning-model choice, said where the live plan is shown."""
    return [Message("caption", md(models.choice))] if models.choice else []


def default_model(roles: Sequence, chosen) -> int:
    """The index of the planning model the page offers first among ``roles`` (the models folder's, in the
    page's order; None: graph + text endpoints): the models folder's planning model ``chosen``
    (:meth:`kepp_core.api.Workspace.planning_model`: its stored choice, else KEPP R=1), else the first.

    >>> default_model(["graph-R1", "graph-R1-struct", "none"], "graph-R1-struct"), default_model(["none"], "graph-R1")
    (1, 0)
    """
    return next((i for i, role in enumerate(roles) if role == chosen), 0)


def choice_words(choice, role) -> str | None:
    """The words of the models folder's planning-model ``choice`` (a
    :class:`~kepp_core.evaluation.planning_model.PlanningModelChoice`) shown beside a live plan of
    ``role``: where a choice is stored beside the models (or a stored one is not used, and why) and the
    page plans with the model it names; None otherwise (a folder without a stored choice shows nothing new)."""
    if choice is None or choice.kept_in is None or role != choice.role:
        return None
    return choice.describe()


def untrained_horizon(T: int, horizons: Sequence[int]) -> Message:
    """The message for a horizon no model is trained for (and no S3D encoder to plan it with graph + text endpoints).

    >>> untrained_horizon(4, [3]).text[:52]
    'No model is trained for horizon T=4 (trained horizon'
    """
    return Message("error", f"No model is trained for horizon T={T} (trained horizons: "
                            f"{', '.join(map(str, horizons)) or 'none'}): choose another horizon, or an S3D encoder "
                            "under *Video encoder* (graph + text endpoints need no model).", icon="")


def no_planning_model(folder: str) -> Message:
    """The message for a models folder of a horizon that holds a step model but no planning model."""
    return Message("error", f"`{folder}` has a step model but no planning model.", icon="")


def missing_video(asked: str | None, available: Iterable[str], playlist: str | None, item: int | None,
                  T: int) -> Message | None:
    """The message for a playlist item whose video (``asked``: the address's video, or the upload scene's)
    is not among the dataset's videos the page can open at ``T`` (``available``): said, and nothing else
    shown under the item's number (None: no playlist playing, nothing asked, or the video is there).

    >>> missing_video("0287", {"0287"}, "talk", 2, 3) is None, missing_video("9999", {"0287"}, None, None, 3) is None
    (True, True)
    >>> missing_video("9999", {"0287"}, "talk", 2, 3).text[:60]
    'Playlist **talk**, item 2: video **9999** is not among this '
    """
    if not playlist or asked is None or asked in set(available):
        return None
    return Message("error", f"Playlist **{md(playlist)}**, item {item}: video **{md(asked)}** is not among this "
                            f"dataset's videos with {T} annotated steps and features, so this item cannot be shown "
                            "(nothing else is shown in its place). Fix or remove it on the Playlists page.",
                   icon=":material/playlist_remove:")


def upload_refused(encoder: str | None, not_allowed: str | None, s3d_label: str | None,
                   width_error: str | None) -> Message | None:
    """Why the page offers no upload (None: it does). An upload is encoded from its pixels, so it needs an
    encoder the models accept: the S3D encoder chosen (``s3d_label``) where the models take its features
    (``width_error``: they cannot), else the dataset's own encoder (``encoder``: the one its features.json
    names; ``not_allowed``: why this app may not load it).

    >>> upload_refused("builtin-v1", None, None, None) is None, upload_refused(None, None, "S3D x.pth", None) is None
    (True, True)
    >>> upload_refused(None, None, None, None).text[:72]
    "No upload: the dataset's features do not say which encoder made them (no"
    >>> upload_refused("s3d", "not allowed", None, None).level, upload_refused(None, None, "S3D", "widths differ").level
    ('caption', 'caption')
    """
    if s3d_label is not None:
        return None if width_error is None else Message(
            "caption", f"No upload: it would be encoded with **{md(s3d_label)}**, whose features the models cannot "
                       f"take ({md(width_error)}).")
    if not encoder:
        return Message("caption", "No upload: the dataset's features do not say which encoder made them (no "
                                  "features.json beside them), so an uploaded video could not be encoded to match "
                                  "what the models were trained on. The dataset's own videos are planned from their "
                                  "features.")
    if not_allowed:
        return Message("caption", f"No upload: the dataset's features were made by **{md(encoder)}**, which this app "
                                  f"may not load ({md(not_allowed)}).")
    return None


def no_plan(result) -> Message | None:
    """The message for a live result that is not a plan: none at all (an empty plan), or the planner's
    own word that no path joins the two ends (``PlanResult.no_path``: graph + text endpoints with no
    trained model, whose plan would be the graph's fallback); None for a plan (a planning model's plan
    given fallback paths is still its plan: the paths' caption says they are fallbacks).

    >>> from types import SimpleNamespace as R
    >>> no_plan(R(plan=(1, 2), no_path=False)), no_plan(R(plan=(1, 2), fallback=True, no_path=False))
    (None, None)
    >>> no_plan(R(plan=(), no_path=False)).level, no_plan(R(plan=(1, 1), no_path=True)).level
    ('warning', 'warning')
    """
    plan = getattr(result, "plan", None)
    if not plan:
        return Message("warning", "No plan: the planner returned none for these clips.")
    if getattr(result, "no_path", False):
        return Message("warning", "No plan: the graph has no path of this length between â₁ and â_T (the steps "
                                  "the text tower grounds in the two clips), and with no trained model nothing "
                                  "else plans. Try another horizon or other clips.")
    return None


def typed_steps(text: str) -> tuple[list[str], Message | None]:
    """The step names typed for the step timeline, one a line: at most :data:`MAX_TYPED_STEPS` of at most
    :data:`MAX_STEP_CHARS` characters (the rest left out, and said: each name is a query to the text tower
    and a row of every second's scores).

    >>> typed_steps("boil water\\n\\n pour \\n")
    (['boil water', 'pour'], None)
    >>> steps, said = typed_steps("\\n".join(f"s{k}" for k in range(20_000)))
    >>> len(steps), said.text
    (200, 'The step timeline grounds the first 200 of the 20,000 steps typed: at most 200.')
    >>> typed_steps("x" * 500)[0][0] == "x" * 200, typed_steps("x" * 500)[1].level
    (True, 'warning')
    """
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    steps = [line[:MAX_STEP_CHARS] for line in lines[:MAX_TYPED_STEPS]]
    if len(lines) > MAX_TYPED_STEPS:
        return steps, Message("warning", f"The step timeline grounds the first {MAX_TYPED_STEPS} of the "
                                         f"{len(lines):,} steps typed: at most {MAX_TYPED_STEPS}.")
    if any(len(line) > MAX_STEP_CHARS for line in lines):
        return steps, Message("warning", f"Step names are cut at {MAX_STEP_CHARS} characters.")
    return steps, None


def horizon_choices(trained: Sequence[int], text_planner: bool) -> list[int]:
    """The horizons the page offers: those with a trained model, and with graph + text endpoints
    (an allowed S3D encoder: no model needed) also 3 to 6.

    >>> horizon_choices([3], False), horizon_choices([3, 8], True), horizon_choices([], False)
    ([3], [3, 4, 5, 6, 8], [])
    """
    return sorted(set(trained) | (set(range(3, 7)) if text_planner else set()))


def r_choices(model_R: int | None, graph: bool) -> list[int]:
    """The R the page offers for a planning model: a graph-conditioned model's own R (the one it was trained
    with: no other R exists for it), 1 to 5 paths shown for graph + text endpoints (``model_R`` None,
    ``graph``), and nothing for a model without the graph condition.

    >>> r_choices(1, True), r_choices(None, True), r_choices(None, False)
    ([1], [1, 2, 3, 4, 5], [])
    """
    if not graph:
        return []
    return [model_R] if model_R is not None else list(range(1, 6))
