"""Graph drawings (above ``ui``): ``network`` (pyvis drawings of the P²KG around a step or a plan's
endpoints and of expert trajectories), ``plangraph`` (what the plan graph draws, decided in plain Python),
``layout`` (where the Graph page's steps sit), ``heatmaps`` (what the Heatmaps page puts in its matrices)."""
