"""The Plan page (above ``records``): ``decision`` (what it shows, decided without Streamlit:
``decide``), ``state`` (the page's state for the decision: what the address asks, the record it names, the
tab open, the live result saved), ``controls`` (its inputs: controls, the Plan button, video, clips, step
timeline), ``features`` (where the features come from: the dataset's, or the video encoded), ``live`` (the
live planner in words, and running it), ``view`` (the decision drawn: a record and its live re-plan as two
tabs of one result), ``result`` (the input and the plan beside its graph, on one screen), ``plans`` (a plan,
its endpoints, paths and samples), ``why`` (why this plan), ``uploads`` (uploaded videos, one private folder
per session), ``zeroshot`` (planning with the graph alone)."""
