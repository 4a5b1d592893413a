"""The Plan page (above ``records``): ``decision`` (what it shows, decided without Streamlit:
``decide``), ``controls`` (its inputs: controls, video, clips, step timeline), ``view`` (the decision
drawn: a record and its live re-plan as two tabs of one result), ``result`` (the input and the plan
beside its graph, on one screen), ``plans`` (a plan, its endpoints, paths and samples), ``why`` (why this
plan), ``uploads`` (uploaded videos, one private folder per session), ``zeroshot`` (planning with the
graph alone)."""
