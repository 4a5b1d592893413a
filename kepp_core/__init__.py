"""KEPP: knowledge-enhanced procedure planning in instructional videos.

The package follows the pipeline: ``data`` → ``video`` → ``graph`` → ``diffusion`` →
``training`` → ``planner`` → ``evaluation``; ``cli`` wraps it as the ``kepp`` command.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]  # the error every layer raises: kepp_core.errors.KeppError
