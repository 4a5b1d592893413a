"""Experiments: what trains and evaluates the models over seeds, each writing its records and tables.

- :mod:`~kepp_core.experiments.demo`: the demo (train the demo models, then evaluate: the demo table);
- :mod:`~kepp_core.experiments.protocol`: ``kepp protocol SPEC.toml`` (seeds, fractions of the training
  videos, intervals and paired tests).
"""
