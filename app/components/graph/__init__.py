"""Graph drawings (above ``ui``): ``plangraph`` (what the plan graph draws, decided in plain Python),
``layout`` (where the Graph page's steps sit), ``drawing`` (a drawing as plain records: nodes, arrows, legend,
grid; the P²KG around a step, a plan graph, a task's expert trajectories), ``page`` (a drawing as an HTML page
for vis.js, with its header, legend and script), ``vis`` (vis.js itself: pyvis's files, installed where the
app serves them), ``network`` (a drawing in the Streamlit page: its frame, its height, the plan graph panel),
``heatmaps`` (what the Heatmaps page puts in its matrices)."""
