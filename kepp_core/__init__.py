"""KEPP: knowledge-enhanced procedure planning in instructional videos.

The package follows the pipeline: ``data`` → ``video`` → ``graph`` → ``diffusion`` →
``training`` → ``planner`` → ``evaluation``; ``cli`` wraps it as the ``kepp`` command.
"""

from kepp_core.errors import KeppError

__version__ = "0.1.0"
__all__ = ["KeppError", "__version__"]
