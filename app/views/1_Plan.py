"""Plan: pick a video (or upload one), choose the start and goal clips, and plan with KEPP.

The page is its state plus a view: its state is its URL (the keys of :mod:`components.ui.url_schema`,
read and written through :class:`components.ui.plan_link.PlanLink`; every exit publishes it first), its
inputs are drawn by :mod:`components.plan.controls` (title and controls on the first screen), what it
shows is decided without Streamlit by :func:`components.plan.decision.decide` (a record first, the live
re-plan as a second, labelled tab of the same result; plan on open or not; which message), and
:mod:`components.plan.view` draws that decision (its state: :mod:`components.plan.state`; the live
planner: :mod:`components.plan.live`). A page opened plainly stays at its top; a result
that arrives with a link, a scene, a slide or a press is brought into view."""

from __future__ import annotations

from components.ui import links
from components.records import backend
from components.plan import controls as inputs, view
from components.plan.features import features_of
from components.plan.live import live_words, plan_now
from components.plan.state import record_of, records_of, state_of, versus_of
from components.plan.decision import Models, decide
from components.talk import playlists, scenes
from components.ui.config import page_setup
from kepp_core import catalog

cfg = page_setup("Plan")
backend.needs_dataset(cfg, "The Plan page")  # records by themselves: one line, no world built
link, corner = inputs.header()
ds, enc = inputs.dataset(cfg, link)
# first: a link naming only a playlist's place gets its item's query, before the models are asked about its horizon
playing = playlists.playing_bar(cfg, ds, link)
setup = inputs.models(cfg, link)
if setup.planless:  # no model plans it: the record the address names, else the graph alone; the page ends there
    view.without_models(cfg, ds, setup.planless, link, playing)

# --- the page's state: the URL (a link, a reload, a scene, a slide) or, on first opening, a clean success --------
demo_scenes = scenes.available(cfg, ds, setup.horizons)
link.start_at(scenes.default_query(demo_scenes))
scenes.scene_bar(demo_scenes, "plan_scene")
try:  # an input the page cannot go on from is held: the decision says it, and the page stops there
    ctl = inputs.controls(cfg, ds, setup, link)
    clip = inputs.video(cfg, ds, enc, ctl, link, playing)
except inputs.Held as held:
    view.stop_held(held.message, link)
playlists.drawn(playing)  # the inputs hold the played item now (a place not drawn yet draws its item's query)
features = features_of(cfg, enc, ctl, clip)
inputs.step_timeline_of(cfg, ds, ctl, clip, features)

# --- what the page shows: decided (components.plan.decision), then planned and drawn --------------------------
with backend.guarded(stop=False):
    records = backend.predictions(cfg)
with backend.guarded(link=link):  # graph + text endpoints (no model): the catalogue's row of the same plans
    live = live_words(ctl.planner, ctl.role)
key = (cfg, clip.key, clip.start, clip.goal, ctl.T, ctl.R, ctl.role, ctl.scorer, ctl.sampler, ctl.s3d)
found = record_of(link, clip, records)
state = state_of(link, clip, found, playing, key, inputs.plan_button(ctl, found, live[0]))
decision = decide(state, Models(live_label=live[0], width_error=ctl.width_error, choice=ctl.choice),
                  records_of(found, state.rec))
saved = plan_now(decision, ctl, clip, features, key, link)
link.keep(**decision.keep)
versus = versus_of(link, decision, records)  # an A/B slide's method B
link.publish()
with corner:
    links.copy_link(link, "plan_link")
    playlists.plan_control(cfg, link, clip.shown)
view.messages(decision)
if decision.stop:
    link.stop()
episode = None if clip.shown is None else catalog.episode_id(clip.shown.task, clip.shown.id, clip.ep or 0, ctl.T)
view.show(cfg, decision, ds, ctl, clip, saved, live, episode, setup.root, versus)
